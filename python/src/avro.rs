//! Avro encode / decode for `odradek.schema_registry` in Rust: `AvroSchema(schema, named)`
//! compiles a schema (with the named schemas its references bring) once; `encode(obj)` and
//! `decode(data)` convert between Avro binary and the objects fastavro uses: records and maps
//! as dicts, arrays as lists, unions as the branch's value, enums as str, bytes and fixed as
//! bytes, and logical types as fastavro returns them (timestamp-millis/-micros ↔ aware UTC
//! `datetime` (naive ones are taken as UTC), local-timestamp-* ↔ naive `datetime`, date ↔
//! `date`, time-millis/-micros ↔ `time`, decimal ↔ `Decimal`, uuid ↔ `uuid.UUID` (a `str` is
//! accepted when encoding)). `encode_framed` / `decode_framed` add and check Confluent's
//! 5-byte header in the same call.

use odradek_schema_registry::avro::binary::*;
use odradek_schema_registry::avro::json_codec::check_count;
use odradek_schema_registry::avro::{self, Compiled, Node};
use odradek_schema_registry::wire;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple,
};

const MAX_DEPTH: usize = 512;

/// Python-side helpers, looked up once.
struct Helpers {
    datetime: Py<PyAny>,
    date: Py<PyAny>,
    time: Py<PyAny>,
    utc: Py<PyAny>,
    epoch: Py<PyAny>,
    epoch_naive: Py<PyAny>,
    epoch_date: Py<PyAny>,
    timedelta: Py<PyAny>,
    decimal: Py<PyAny>,
    uuid: Py<PyAny>,
}

static HELPERS: PyOnceLock<Helpers> = PyOnceLock::new();

fn helpers(py: Python<'_>) -> PyResult<&Helpers> {
    HELPERS.get_or_try_init(py, || {
        let dt = py.import("datetime")?;
        let datetime = dt.getattr("datetime")?;
        let utc = dt.getattr("timezone")?.getattr("utc")?;
        let epoch = datetime.call((1970, 1, 1, 0, 0, 0, 0, &utc), None)?;
        let epoch_naive = datetime.call1((1970, 1, 1))?;
        let date = dt.getattr("date")?;
        let epoch_date = date.call1((1970, 1, 1))?;
        Ok::<_, PyErr>(Helpers {
            datetime: datetime.unbind(),
            date: date.unbind(),
            time: dt.getattr("time")?.unbind(),
            utc: utc.unbind(),
            epoch: epoch.unbind(),
            epoch_naive: epoch_naive.unbind(),
            epoch_date: epoch_date.unbind(),
            timedelta: dt.getattr("timedelta")?.unbind(),
            decimal: py.import("decimal")?.getattr("Decimal")?.unbind(),
            uuid: py.import("uuid")?.getattr("UUID")?.unbind(),
        })
    })
}

fn ser_err(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A compiled Avro schema.
#[pyclass(frozen, module = "odradek._odradek")]
pub struct AvroSchema {
    c: Compiled,
    /// Field names of every record node, interned once.
    keys: Vec<Vec<Py<PyString>>>,
}

#[pymethods]
impl AvroSchema {
    /// Compiles `schema` (JSON text); `named` are the JSON texts of the schemas it references.
    #[new]
    #[pyo3(signature = (schema, named=Vec::new()))]
    fn new(py: Python<'_>, schema: &str, named: Vec<String>) -> PyResult<Self> {
        let c = avro::parse(schema, &named).map_err(ser_err)?;
        let keys = c
            .nodes
            .iter()
            .map(|n| match n {
                Node::Record(r) => r
                    .fields
                    .iter()
                    .map(|f| PyString::intern(py, &f.name).unbind())
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
        Ok(AvroSchema { c, keys })
    }

    /// The canonical JSON of the schema.
    fn canonical(&self) -> String {
        self.c.canonical()
    }

    /// The full name of the top-level named type, or None.
    fn name(&self) -> Option<String> {
        match self.c.node(self.c.root) {
            Node::Record(r) => Some(r.name.clone()),
            Node::Enum(e) => Some(e.name.clone()),
            Node::Fixed(f) => Some(f.name.clone()),
            _ => None,
        }
    }

    /// Avro binary of `obj`.
    fn encode<'py>(
        &self,
        py: Python<'py>,
        obj: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let mut out = Vec::with_capacity(64);
        self.enc(py, self.c.root, obj, &mut out, 0)?;
        Ok(PyBytes::new(py, &out))
    }

    /// Confluent's header for `schema_id`, then the Avro binary of `obj`.
    fn encode_framed<'py>(
        &self,
        py: Python<'py>,
        schema_id: i32,
        obj: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let mut out = Vec::with_capacity(64);
        wire::write_header(&mut out, schema_id);
        self.enc(py, self.c.root, obj, &mut out, 0)?;
        Ok(PyBytes::new(py, &out))
    }

    /// The object in `data` (all of it must be one value).
    fn decode(&self, py: Python<'_>, data: &[u8]) -> PyResult<Py<PyAny>> {
        let mut b = data;
        let v = self.dec(py, self.c.root, &mut b, 0)?;
        Ok(v.unbind())
    }

    /// Checks Confluent's header carries `schema_id`, then decodes the rest.
    fn decode_framed(&self, py: Python<'_>, schema_id: i32, data: &[u8]) -> PyResult<Py<PyAny>> {
        let (id, mut b) = wire::read_header(data).map_err(ser_err)?;
        if id != schema_id {
            return Err(PyValueError::new_err(format!(
                "message has schema id {id}, not {schema_id}"
            )));
        }
        Ok(self.dec(py, self.c.root, &mut b, 0)?.unbind())
    }
}

/// `(schema id, payload offset)` of a Confluent-framed message.
#[pyfunction]
pub fn read_header(data: &[u8]) -> PyResult<(i32, usize)> {
    let (id, rest) = wire::read_header(data).map_err(ser_err)?;
    Ok((id, data.len() - rest.len()))
}

fn type_err(what: &str, obj: &Bound<'_, PyAny>) -> PyErr {
    let t = obj
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default();
    PyTypeError::new_err(format!("{obj:.60} (type {t}) is not a valid {what}"))
}

fn as_bytes<'a>(obj: &'a Bound<'_, PyAny>) -> PyResult<std::borrow::Cow<'a, [u8]>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(std::borrow::Cow::Borrowed(b.as_bytes()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(std::borrow::Cow::Owned(b.to_vec()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(std::borrow::Cow::Owned(s.to_cow()?.as_bytes().to_vec()));
    }
    let v: Vec<u8> = obj
        .call_method0("tobytes")
        .and_then(|b| b.extract())
        .map_err(|_| type_err("bytes", obj))?;
    Ok(std::borrow::Cow::Owned(v))
}

fn is_int(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<PyBool>()
}

impl AvroSchema {
    /// Whether `obj` looks like a value of node `n` (picks union branches, in order).
    fn fits(&self, py: Python<'_>, n: usize, obj: &Bound<'_, PyAny>) -> bool {
        let Ok(h) = helpers(py) else { return false };
        match self.c.node(n) {
            Node::Null => obj.is_none(),
            Node::Boolean => obj.is_instance_of::<PyBool>(),
            Node::Int => is_int(obj) && obj.extract::<i32>().is_ok(),
            Node::Long => is_int(obj) && obj.extract::<i64>().is_ok(),
            Node::Float | Node::Double => obj.is_instance_of::<PyFloat>() || is_int(obj),
            Node::String => obj.is_instance_of::<PyString>(),
            Node::Bytes | Node::BigDecimal => {
                obj.is_instance_of::<PyBytes>() || obj.is_instance_of::<PyByteArray>()
            }
            Node::Fixed(f) => obj
                .cast::<PyBytes>()
                .is_ok_and(|b| b.as_bytes().len() == f.size),
            Node::Duration => obj
                .cast::<PyBytes>()
                .is_ok_and(|b| b.as_bytes().len() == 12),
            Node::Enum(e) => obj
                .cast::<PyString>()
                .ok()
                .and_then(|s| s.to_cow().ok())
                .is_some_and(|s| e.symbols.iter().any(|x| x == s.as_ref())),
            Node::Array(_) => obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>(),
            Node::Map(_) => obj.is_instance_of::<PyDict>(),
            Node::Record(r) => obj.cast::<PyDict>().is_ok_and(|d| {
                r.fields
                    .iter()
                    .all(|f| f.default.is_some() || d.contains(&f.name).unwrap_or(false))
                    && d.keys().iter().all(|k| {
                        k.cast::<PyString>()
                            .ok()
                            .and_then(|k| k.to_cow().ok())
                            .is_some_and(|k| r.fields.iter().any(|f| f.name == k.as_ref()))
                    })
            }),
            Node::Uuid => {
                obj.is_instance_of::<PyString>()
                    || obj.is_instance(h.uuid.bind(py)).unwrap_or(false)
            }
            Node::Decimal { .. } => obj.is_instance(h.decimal.bind(py)).unwrap_or(false),
            Node::Date => {
                obj.is_instance(h.date.bind(py)).unwrap_or(false)
                    && !obj.is_instance(h.datetime.bind(py)).unwrap_or(false)
            }
            Node::TimeMillis | Node::TimeMicros => {
                obj.is_instance(h.time.bind(py)).unwrap_or(false)
            }
            Node::TimestampMillis
            | Node::TimestampMicros
            | Node::TimestampNanos
            | Node::LocalTimestampMillis
            | Node::LocalTimestampMicros
            | Node::LocalTimestampNanos => {
                obj.is_instance(h.datetime.bind(py)).unwrap_or(false) || is_int(obj)
            }
            Node::Union(_) => false,
        }
    }

    /// Microseconds since the epoch of a datetime (aware, or naive taken as `epoch_of`'s zone).
    fn micros(py: Python<'_>, obj: &Bound<'_, PyAny>, local: bool) -> PyResult<i64> {
        let h = helpers(py)?;
        let epoch = if local {
            h.epoch_naive.bind(py)
        } else if obj.getattr("tzinfo")?.is_none() {
            // fastavro takes a naive datetime as UTC.
            let kw = PyDict::new(py);
            kw.set_item("tzinfo", h.utc.bind(py))?;
            let aware = obj.call_method("replace", (), Some(&kw))?;
            return Self::delta_micros(&aware.sub(h.epoch.bind(py))?);
        } else {
            h.epoch.bind(py)
        };
        Self::delta_micros(&obj.sub(epoch)?)
    }

    fn delta_micros(d: &Bound<'_, PyAny>) -> PyResult<i64> {
        let days: i64 = d.getattr("days")?.extract()?;
        let secs: i64 = d.getattr("seconds")?.extract()?;
        let us: i64 = d.getattr("microseconds")?.extract()?;
        Ok((days * 86_400 + secs) * 1_000_000 + us)
    }

    fn enc(
        &self,
        py: Python<'_>,
        n: usize,
        obj: &Bound<'_, PyAny>,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> PyResult<()> {
        if depth > MAX_DEPTH {
            return Err(PyValueError::new_err("value nested too deeply"));
        }
        let d = depth + 1;
        match self.c.node(n) {
            Node::Null => {
                if !obj.is_none() {
                    return Err(type_err("null", obj));
                }
            }
            Node::Boolean => out.push(u8::from(
                obj.extract::<bool>()
                    .map_err(|_| type_err("boolean", obj))?,
            )),
            Node::Int => write_long(
                out,
                i64::from(obj.extract::<i32>().map_err(|_| type_err("int", obj))?),
            ),
            Node::Long => write_long(
                out,
                obj.extract::<i64>().map_err(|_| type_err("long", obj))?,
            ),
            Node::Float => out.extend_from_slice(
                &(obj.extract::<f64>().map_err(|_| type_err("float", obj))? as f32).to_le_bytes(),
            ),
            Node::Double => out.extend_from_slice(
                &obj.extract::<f64>()
                    .map_err(|_| type_err("double", obj))?
                    .to_le_bytes(),
            ),
            Node::String => {
                let s = obj
                    .cast::<PyString>()
                    .map_err(|_| type_err("string", obj))?;
                write_bytes(out, s.to_cow()?.as_bytes());
            }
            Node::Bytes | Node::BigDecimal => write_bytes(out, &as_bytes(obj)?),
            Node::Fixed(f) => {
                let b = as_bytes(obj)?;
                if b.len() != f.size {
                    return Err(PyValueError::new_err(format!(
                        "fixed {} needs {} bytes, got {}",
                        f.name,
                        f.size,
                        b.len()
                    )));
                }
                out.extend_from_slice(&b);
            }
            Node::Duration => {
                let b = as_bytes(obj)?;
                if b.len() != 12 {
                    return Err(PyValueError::new_err("duration needs 12 bytes"));
                }
                out.extend_from_slice(&b);
            }
            Node::Enum(e) => {
                let s = obj
                    .cast::<PyString>()
                    .map_err(|_| type_err("enum symbol", obj))?
                    .to_cow()?;
                let s = s.as_ref();
                let i = e.symbols.iter().position(|x| x == s).ok_or_else(|| {
                    PyValueError::new_err(format!("{s:?} is not a symbol of enum {}", e.name))
                })?;
                write_long(out, i as i64);
            }
            Node::Array(item) => {
                let len = obj.len().map_err(|_| type_err("array", obj))?;
                if len > 0 {
                    write_long(out, len as i64);
                    for x in obj.try_iter()? {
                        self.enc(py, *item, &x?, out, d)?;
                    }
                }
                out.push(0);
            }
            Node::Map(v) => {
                let m = obj.cast::<PyDict>().map_err(|_| type_err("map", obj))?;
                if !m.is_empty() {
                    write_long(out, m.len() as i64);
                    for (k, x) in m.iter() {
                        let k = k
                            .cast::<PyString>()
                            .map_err(|_| type_err("map key (str)", &k))?;
                        write_bytes(out, k.to_cow()?.as_bytes());
                        self.enc(py, *v, &x, out, d)?;
                    }
                }
                out.push(0);
            }
            Node::Record(r) => {
                let m = obj
                    .cast::<PyDict>()
                    .map_err(|_| type_err(&format!("record {}", r.name), obj))?;
                for (i, f) in r.fields.iter().enumerate() {
                    match m.get_item(self.keys[n][i].bind(py))? {
                        Some(x) => self.enc(py, f.node, &x, out, d).map_err(|e| {
                            PyErr::from_type(
                                e.get_type(py),
                                format!("{}.{}: {}", r.name, f.name, e.value(py)),
                            )
                        })?,
                        None => match &f.default {
                            Some(def) => {
                                odradek_schema_registry::avro::json_codec::encode_at(
                                    &self.c, f.node, def, out,
                                )
                                .map_err(ser_err)?;
                            }
                            None => {
                                return Err(PyValueError::new_err(format!(
                                    "record {} misses field {}",
                                    r.name, f.name
                                )))
                            }
                        },
                    }
                }
            }
            Node::Union(branches) => {
                // fastavro's explicit forms: ("name", value) and {"-type": "name", ...}.
                if let Ok(t) = obj.cast::<PyTuple>() {
                    if t.len() == 2 {
                        if let Ok(name) = t.get_item(0)?.extract::<String>() {
                            for (i, &b) in branches.iter().enumerate() {
                                if self.branch_named(b, &name) {
                                    write_long(out, i as i64);
                                    return self.enc(py, b, &t.get_item(1)?, out, d);
                                }
                            }
                        }
                    }
                }
                for (i, &b) in branches.iter().enumerate() {
                    if self.fits(py, b, obj) {
                        write_long(out, i as i64);
                        return self.enc(py, b, obj, out, d);
                    }
                }
                return Err(type_err("value of any branch of the union", obj));
            }
            Node::Uuid => {
                let s = if obj.is_instance_of::<PyString>() {
                    obj.extract::<String>()?
                } else {
                    obj.str()?.to_cow()?.to_string()
                };
                write_bytes(out, s.as_bytes());
            }
            Node::Date => {
                let h = helpers(py)?;
                let days: i64 = if is_int(obj) {
                    obj.extract()?
                } else {
                    obj.sub(h.epoch_date.bind(py))?.getattr("days")?.extract()?
                };
                write_long(out, days);
            }
            Node::TimeMillis | Node::TimeMicros => {
                let us: i64 = if is_int(obj) {
                    obj.extract()?
                } else {
                    let hms: (i64, i64, i64, i64) = (
                        obj.getattr("hour")?.extract()?,
                        obj.getattr("minute")?.extract()?,
                        obj.getattr("second")?.extract()?,
                        obj.getattr("microsecond")?.extract()?,
                    );
                    let us = ((hms.0 * 60 + hms.1) * 60 + hms.2) * 1_000_000 + hms.3;
                    if matches!(self.c.node(n), Node::TimeMillis) {
                        us / 1000
                    } else {
                        us
                    }
                };
                write_long(out, us);
            }
            Node::TimestampMillis
            | Node::TimestampMicros
            | Node::TimestampNanos
            | Node::LocalTimestampMillis
            | Node::LocalTimestampMicros
            | Node::LocalTimestampNanos => {
                let node = self.c.node(n);
                let local = matches!(
                    node,
                    Node::LocalTimestampMillis
                        | Node::LocalTimestampMicros
                        | Node::LocalTimestampNanos
                );
                let v = if is_int(obj) {
                    obj.extract::<i64>()?
                } else {
                    let us = Self::micros(py, obj, local)?;
                    match node {
                        Node::TimestampMillis | Node::LocalTimestampMillis => us.div_euclid(1000),
                        Node::TimestampNanos | Node::LocalTimestampNanos => us * 1000,
                        _ => us,
                    }
                };
                write_long(out, v);
            }
            Node::Decimal { scale, fixed, .. } => {
                let raw = if obj.is_instance_of::<PyBytes>() {
                    as_bytes(obj)?.into_owned()
                } else {
                    decimal_bytes(py, obj, *scale, fixed.as_ref().map(|f| f.size))?
                };
                match fixed {
                    Some(f) => {
                        if raw.len() != f.size {
                            return Err(PyValueError::new_err(
                                "decimal does not fit its fixed size",
                            ));
                        }
                        out.extend_from_slice(&raw);
                    }
                    None => write_bytes(out, &raw),
                }
            }
        }
        Ok(())
    }

    fn branch_named(&self, b: usize, name: &str) -> bool {
        let full = match self.c.node(b) {
            Node::Record(r) => r.name.as_str(),
            Node::Enum(e) => e.name.as_str(),
            Node::Fixed(f) => f.name.as_str(),
            _ => return false,
        };
        full == name || full.rsplit('.').next() == Some(name)
    }

    fn dec<'py>(
        &self,
        py: Python<'py>,
        n: usize,
        buf: &mut &[u8],
        depth: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        if depth > MAX_DEPTH {
            return Err(PyValueError::new_err("value nested too deeply"));
        }
        let d = depth + 1;
        Ok(match self.c.node(n) {
            Node::Null => py.None().into_bound(py),
            Node::Boolean => match read_fixed(buf, 1).map_err(ser_err)?[0] {
                0 => PyBool::new(py, false).to_owned().into_any(),
                1 => PyBool::new(py, true).to_owned().into_any(),
                b => return Err(PyValueError::new_err(format!("bad boolean byte {b}"))),
            },
            Node::Int => read_int(buf)
                .map_err(ser_err)?
                .into_pyobject(py)?
                .into_any(),
            Node::Long => read_long(buf)
                .map_err(ser_err)?
                .into_pyobject(py)?
                .into_any(),
            Node::Float => {
                let b = read_fixed(buf, 4).map_err(ser_err)?;
                PyFloat::new(py, f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))).into_any()
            }
            Node::Double => {
                let b = read_fixed(buf, 8).map_err(ser_err)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                PyFloat::new(py, f64::from_le_bytes(a)).into_any()
            }
            Node::String => PyString::new(py, read_str(buf).map_err(ser_err)?).into_any(),
            Node::Bytes | Node::BigDecimal => {
                PyBytes::new(py, read_bytes(buf).map_err(ser_err)?).into_any()
            }
            Node::Fixed(f) => {
                PyBytes::new(py, read_fixed(buf, f.size).map_err(ser_err)?).into_any()
            }
            Node::Duration => PyBytes::new(py, read_fixed(buf, 12).map_err(ser_err)?).into_any(),
            Node::Enum(e) => {
                let i = read_long(buf).map_err(ser_err)?;
                let s = usize::try_from(i)
                    .ok()
                    .and_then(|i| e.symbols.get(i))
                    .ok_or_else(|| PyValueError::new_err(format!("enum index {i} out of range")))?;
                PyString::new(py, s).into_any()
            }
            Node::Array(item) => {
                let list = PyList::empty(py);
                loop {
                    let count = read_block_count(buf).map_err(ser_err)?;
                    if count == 0 {
                        break;
                    }
                    check_count(count, buf, list.len()).map_err(ser_err)?;
                    for _ in 0..count {
                        list.append(self.dec(py, *item, buf, d)?)?;
                    }
                }
                list.into_any()
            }
            Node::Map(v) => {
                let m = PyDict::new(py);
                loop {
                    let count = read_block_count(buf).map_err(ser_err)?;
                    if count == 0 {
                        break;
                    }
                    check_count(count, buf, m.len()).map_err(ser_err)?;
                    for _ in 0..count {
                        let k = PyString::new(py, read_str(buf).map_err(ser_err)?);
                        m.set_item(k, self.dec(py, *v, buf, d)?)?;
                    }
                }
                m.into_any()
            }
            Node::Record(r) => {
                let m = PyDict::new(py);
                for (i, f) in r.fields.iter().enumerate() {
                    m.set_item(self.keys[n][i].bind(py), self.dec(py, f.node, buf, d)?)?;
                }
                m.into_any()
            }
            Node::Union(branches) => {
                let i = read_long(buf).map_err(ser_err)?;
                let b = usize::try_from(i)
                    .ok()
                    .and_then(|i| branches.get(i))
                    .ok_or_else(|| {
                        PyValueError::new_err(format!("union index {i} out of range"))
                    })?;
                self.dec(py, *b, buf, d)?
            }
            Node::Uuid => helpers(py)?
                .uuid
                .bind(py)
                .call1((read_str(buf).map_err(ser_err)?,))?,
            Node::Date => {
                let h = helpers(py)?;
                let days = read_int(buf).map_err(ser_err)?;
                let delta = h.timedelta.bind(py).call1((days,))?;
                h.epoch_date.bind(py).add(delta)?
            }
            Node::TimeMillis | Node::TimeMicros => {
                let v = if matches!(self.c.node(n), Node::TimeMillis) {
                    i64::from(read_int(buf).map_err(ser_err)?) * 1000
                } else {
                    read_long(buf).map_err(ser_err)?
                };
                let (h, rest) = (v / 3_600_000_000, v % 3_600_000_000);
                let (m, rest) = (rest / 60_000_000, rest % 60_000_000);
                let (s, us) = (rest / 1_000_000, rest % 1_000_000);
                helpers(py)?.time.bind(py).call1((h, m, s, us))?
            }
            node @ (Node::TimestampMillis
            | Node::TimestampMicros
            | Node::TimestampNanos
            | Node::LocalTimestampMillis
            | Node::LocalTimestampMicros
            | Node::LocalTimestampNanos) => {
                let v = read_long(buf).map_err(ser_err)?;
                let us = match node {
                    Node::TimestampMillis | Node::LocalTimestampMillis => v.saturating_mul(1000),
                    Node::TimestampNanos | Node::LocalTimestampNanos => v.div_euclid(1000),
                    _ => v,
                };
                let h = helpers(py)?;
                let local = matches!(
                    node,
                    Node::LocalTimestampMillis
                        | Node::LocalTimestampMicros
                        | Node::LocalTimestampNanos
                );
                let epoch = if local {
                    h.epoch_naive.bind(py)
                } else {
                    h.epoch.bind(py)
                };
                let delta = h.timedelta.bind(py).call((0, 0, us), None)?;
                epoch.add(delta)?
            }
            Node::Decimal { scale, fixed, .. } => {
                let raw = match fixed {
                    Some(f) => read_fixed(buf, f.size).map_err(ser_err)?,
                    None => read_bytes(buf).map_err(ser_err)?,
                };
                decimal_from(py, raw, *scale)?
            }
        })
    }
}

/// Two's-complement big-endian unscaled value of a Decimal at `scale`.
fn decimal_bytes(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    scale: usize,
    size: Option<usize>,
) -> PyResult<Vec<u8>> {
    let t = obj.call_method0("as_tuple")?;
    let sign: i64 = t.getattr("sign")?.extract()?;
    let digits: Vec<u32> = t.getattr("digits")?.extract()?;
    let exp: i64 = t.getattr("exponent")?.extract()?;
    let mut unscaled: i128 = 0;
    for dg in digits {
        unscaled = unscaled
            .checked_mul(10)
            .and_then(|u| u.checked_add(i128::from(dg)))
            .ok_or_else(|| PyValueError::new_err("decimal too large"))?;
    }
    let shift = scale as i64 + exp;
    if shift < 0 {
        return Err(PyValueError::new_err(format!(
            "decimal {obj} has more digits after the point than scale {scale}"
        )));
    }
    for _ in 0..shift {
        unscaled = unscaled
            .checked_mul(10)
            .ok_or_else(|| PyValueError::new_err("decimal too large"))?;
    }
    if sign == 1 {
        unscaled = -unscaled;
    }
    let full = unscaled.to_be_bytes();
    let n = match size {
        Some(s) => s.min(16),
        None => {
            let mut n = 16;
            while n > 1
                && ((full[16 - n] == 0 && full[17 - n] & 0x80 == 0)
                    || (full[16 - n] == 0xff && full[17 - n] & 0x80 != 0))
            {
                n -= 1;
            }
            n
        }
    };
    let _ = py;
    Ok(full[16 - n..].to_vec())
}

fn decimal_from<'py>(py: Python<'py>, raw: &[u8], scale: usize) -> PyResult<Bound<'py, PyAny>> {
    if raw.len() > 16 {
        return Err(PyValueError::new_err("decimal wider than 128 bits"));
    }
    let neg = raw.first().is_some_and(|b| b & 0x80 != 0);
    let mut full = if neg { [0xffu8; 16] } else { [0u8; 16] };
    full[16 - raw.len()..].copy_from_slice(raw);
    let v = i128::from_be_bytes(full);
    let h = helpers(py)?;
    let s = if scale == 0 {
        v.to_string()
    } else {
        format!("{v}E-{scale}")
    };
    h.decimal.bind(py).call1((s,))
}

/// Registers the Avro class and functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<AvroSchema>()?;
    m.add_function(wrap_pyfunction!(read_header, m)?)?;
    Ok(())
}
