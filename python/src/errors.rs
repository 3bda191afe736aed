//! `KafkaError`, `KafkaException`, and the one function that turns a [`ClientError`] into a
//! Python exception.
//!
//! The tree mirrors confluent-kafka: every Kafka or client error raises `KafkaException` whose
//! `args[0]` is a `KafkaError`; `BufferError` (a full producer queue), `TypeError`/`ValueError`
//! (bad arguments) and `RuntimeError` (a closed consumer) are the only other exceptions, as there.

use odradek_bindings::{codes, ClientError};
use pyo3::exceptions::{PyBufferError, PyException};
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyType};

pyo3::create_exception!(
    odradek,
    KafkaException,
    PyException,
    "Raised for every Kafka or client error; `args[0]` is the KafkaError."
);

/// `KafkaError(code, reason, fatal, retriable, txn_requires_abort)` arguments for pickling.
type ReduceArgs = (i32, String, bool, bool, bool);

/// An error or event: a stable code, a name, a message, and whether it is retriable or fatal.
#[pyclass(module = "odradek", name = "KafkaError", frozen, subclass)]
pub struct KafkaError {
    pub(crate) inner: ClientError,
}

impl KafkaError {
    pub(crate) fn from_client(e: ClientError) -> Self {
        KafkaError { inner: e }
    }

    pub(crate) fn repr(&self) -> String {
        format!(
            "KafkaError{{code={},val={},str=\"{}\"}}",
            self.inner.name(),
            self.inner.code(),
            self.inner.message()
        )
    }
}

#[pymethods]
impl KafkaError {
    #[new]
    #[pyo3(signature = (error, reason=None, fatal=false, retriable=false, txn_requires_abort=false))]
    fn new(
        error: i32,
        reason: Option<String>,
        fatal: bool,
        retriable: bool,
        txn_requires_abort: bool,
    ) -> Self {
        KafkaError {
            inner: ClientError::with_flags(error, reason, fatal, retriable, txn_requires_abort),
        }
    }

    /// The numeric code (compare with the class constants, e.g. `KafkaError._PARTITION_EOF`).
    fn code(&self) -> i32 {
        self.inner.code()
    }

    /// The code's name, e.g. `_MSG_TIMED_OUT` or `UNKNOWN_TOPIC_OR_PART`.
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    /// The human-readable message.
    fn str(&self) -> &str {
        self.inner.message()
    }

    /// Whether the client instance cannot continue.
    fn fatal(&self) -> bool {
        self.inner.is_fatal()
    }

    /// Whether retrying the operation may succeed.
    fn retriable(&self) -> bool {
        self.inner.is_retriable()
    }

    /// Whether the current transaction must be aborted.
    fn txn_requires_abort(&self) -> bool {
        self.inner.txn_requires_abort()
    }

    fn __str__(&self) -> String {
        self.repr()
    }

    fn __repr__(&self) -> String {
        self.repr()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        if let Ok(o) = other.cast::<KafkaError>() {
            return o.get().inner.code() == self.inner.code();
        }
        if other.is_instance_of::<PyInt>() {
            return other
                .extract::<i64>()
                .is_ok_and(|c| c == i64::from(self.inner.code()));
        }
        false
    }

    fn __ne__(&self, other: &Bound<'_, PyAny>) -> bool {
        !self.__eq__(other)
    }

    fn __hash__(&self) -> isize {
        self.inner.code() as isize
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyType>, ReduceArgs)> {
        let e = &slf.get().inner;
        Ok((
            slf.get_type(),
            (
                e.code(),
                e.message().to_string(),
                e.is_fatal(),
                e.is_retriable(),
                e.txn_requires_abort(),
            ),
        ))
    }
}

/// A `KafkaError` object.
pub fn kafka_error(py: Python<'_>, e: ClientError) -> PyResult<Py<KafkaError>> {
    Py::new(py, KafkaError::from_client(e))
}

/// The Python exception for a client error: `BufferError` for a full queue (what confluent-kafka
/// code catches to know it must `poll()`), `KafkaException(KafkaError)` for everything else.
pub fn to_py_err(py: Python<'_>, e: ClientError) -> PyErr {
    if e.code() == codes::QUEUE_FULL {
        return PyBufferError::new_err(e.message().to_string());
    }
    match kafka_error(py, e) {
        Ok(k) => KafkaException::new_err((k,)),
        Err(err) => err,
    }
}

/// Shorthand: maps `Result<T, ClientError>` to `PyResult<T>`.
pub trait IntoPy<T> {
    /// Converts the error side.
    fn py(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, ClientError> {
    fn py(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py_err(py, e))
    }
}

/// `KafkaException(KafkaError(_NOT_IMPLEMENTED, ...))`.
pub fn not_implemented(py: Python<'_>, what: &str) -> PyErr {
    to_py_err(py, ClientError::not_implemented(what))
}
