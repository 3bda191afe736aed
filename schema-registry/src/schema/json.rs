//! JSON Schema: validation of the schema document and compatibility by the rules Confluent
//! documents for JSON Schema, on the keywords listed in [`CHECKED`]. A reader schema R can read
//! data valid under writer schema W when every W-valid document is R-valid; we check that
//! keyword by keyword:
//!
//! - `type`: R's types must include W's (`integer` is within `number`);
//! - `enum` / `const`: W's values must be among R's;
//! - bounds (`minimum`, `maximum`, `exclusive*`, `minLength`, `maxLength`, `minItems`,
//!   `maxItems`, `minProperties`, `maxProperties`): R may only widen them; `pattern`,
//!   `multipleOf`, `format` and `uniqueItems` may only be dropped, not added or changed;
//! - `properties` and `additionalProperties` (the content model): a W property R lacks must be
//!   allowed by R's `additionalProperties` (open, or a schema that reads it); a property R adds
//!   must be one W never writes (W closed) or one that accepts anything; R's
//!   `additionalProperties` may be false or a schema only when W's is (or is narrower);
//! - `required`: R may not require a property W does not;
//! - `items` (single schema) is compared recursively.
//!
//! Any other keyword (`oneOf`, `anyOf`, `allOf`, `not`, `if`/`then`/`else`, `$ref`,
//! `patternProperties`, `dependencies`, tuple `items`, ...) is compared for equality only: when it
//! differs between the two schemas the check is refused with an error, never passed.

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// Keywords whose changes are checked; annotations are ignored.
pub const CHECKED: &[&str] = &[
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "pattern",
    "multipleOf",
    "format",
    "uniqueItems",
];

const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "$schema",
    "$id",
    "id",
    "$comment",
    "readOnly",
    "writeOnly",
    "deprecated",
    "javaType",
    "connect.name",
];

const TYPES: &[&str] = &[
    "null", "boolean", "object", "array", "number", "integer", "string",
];

/// Parses and validates a JSON Schema document (an object or a boolean).
pub fn parse(text: &str) -> Result<Value> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| Error::InvalidSchema(format!("Invalid JSON {e}")))?;
    validate(&v, "#", 0)?;
    Ok(v)
}

fn validate(v: &Value, path: &str, depth: usize) -> Result<()> {
    if depth > 256 {
        return Err(Error::InvalidSchema("schema nested too deeply".into()));
    }
    let bad = |what: &str| Err(Error::InvalidSchema(format!("{what} at {path}")));
    let m = match v {
        Value::Bool(_) => return Ok(()),
        Value::Object(m) => m,
        _ => return bad("a JSON Schema must be an object or a boolean"),
    };
    if let Some(t) = m.get("type") {
        let ok = match t {
            Value::String(s) => TYPES.contains(&s.as_str()),
            Value::Array(a) => a
                .iter()
                .all(|x| x.as_str().is_some_and(|s| TYPES.contains(&s))),
            _ => false,
        };
        if !ok {
            return bad("invalid \"type\"");
        }
    }
    if let Some(p) = m.get("properties") {
        let Some(p) = p.as_object() else {
            return bad("\"properties\" must be an object");
        };
        for (k, s) in p {
            validate(s, &format!("{path}/properties/{k}"), depth + 1)?;
        }
    }
    if let Some(r) = m.get("required") {
        if !r.as_array().is_some_and(|a| a.iter().all(Value::is_string)) {
            return bad("\"required\" must be an array of strings");
        }
    }
    for k in ["additionalProperties", "not", "if", "then", "else"] {
        if let Some(s) = m.get(k) {
            validate(s, &format!("{path}/{k}"), depth + 1)?;
        }
    }
    match m.get("items") {
        Some(Value::Array(a)) => {
            for (i, s) in a.iter().enumerate() {
                validate(s, &format!("{path}/items/{i}"), depth + 1)?;
            }
        }
        Some(s) => validate(s, &format!("{path}/items"), depth + 1)?,
        None => {}
    }
    for k in ["oneOf", "anyOf", "allOf"] {
        if let Some(s) = m.get(k) {
            let Some(a) = s.as_array() else {
                return bad("combined schemas must be arrays");
            };
            for (i, s) in a.iter().enumerate() {
                validate(s, &format!("{path}/{k}/{i}"), depth + 1)?;
            }
        }
    }
    if let Some(e) = m.get("enum") {
        if !e.is_array() {
            return bad("\"enum\" must be an array");
        }
    }
    Ok(())
}

/// Compact JSON with object keys sorted: the identity of a JSON schema.
pub fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push(':');
                write_canonical(&m[*k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Problems keeping `reader` from reading every document valid under `writer`.
pub fn check(reader: &Value, writer: &Value) -> Result<Vec<String>> {
    let mut out = Vec::new();
    cmp(reader, writer, "#", &mut out)?;
    Ok(out)
}

fn fail(out: &mut Vec<String>, kind: &str, path: &str) {
    out.push(format!("{{errorType:'{kind}', path:'{path}'}}"));
}

fn accepts_anything(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Object(m) => m.keys().all(|k| ANNOTATIONS.contains(&k.as_str())),
        _ => false,
    }
}

fn types(m: &Map<String, Value>) -> Option<Vec<&str>> {
    match m.get("type")? {
        Value::String(s) => Some(vec![s.as_str()]),
        Value::Array(a) => Some(a.iter().filter_map(Value::as_str).collect()),
        _ => None,
    }
}

fn cmp(r: &Value, w: &Value, path: &str, out: &mut Vec<String>) -> Result<()> {
    if r == w || accepts_anything(r) || matches!(w, Value::Bool(false)) {
        return Ok(());
    }
    let empty = Map::new();
    let (rm, wm) = match (r, w) {
        (Value::Bool(false), _) => {
            fail(out, "TYPE_NARROWED", path);
            return Ok(());
        }
        (Value::Object(rm), Value::Bool(true)) => (rm, &empty),
        (Value::Object(rm), Value::Object(wm)) => (rm, wm),
        _ => return Err(Error::RuleNotSupported(format!("schema shape at {path}"))),
    };
    for k in rm.keys().chain(wm.keys()) {
        let k = k.as_str();
        if !CHECKED.contains(&k) && !ANNOTATIONS.contains(&k) && rm.get(k) != wm.get(k) {
            return Err(Error::RuleNotSupported(format!(
                "the JSON Schema keyword \"{k}\" differs at {path}; only {} are checked",
                CHECKED.join(", ")
            )));
        }
    }
    // type
    if let Some(rt) = types(rm) {
        let widened = |t: &str| rt.contains(&t) || (t == "integer" && rt.contains(&"number"));
        match types(wm) {
            Some(wt) if wt.iter().all(|t| widened(t)) => {}
            Some(_) => fail(out, "TYPE_CHANGED", path),
            None => fail(out, "TYPE_NARROWED", path),
        }
    }
    // enum / const
    if let Some(Value::Array(re)) = rm.get("enum") {
        match wm.get("enum") {
            Some(Value::Array(we)) if we.iter().all(|x| re.contains(x)) => {}
            Some(_) => fail(out, "ENUM_ARRAY_NARROWED", path),
            None => fail(out, "ENUM_ARRAY_CHANGED", path),
        }
    }
    if let Some(rc) = rm.get("const") {
        if wm.get("const") != Some(rc) {
            fail(out, "CONST_CHANGED", path);
        }
    }
    // bounds: (keyword, reader may only make it smaller?)
    for (k, upper) in [
        ("maximum", true),
        ("exclusiveMaximum", true),
        ("maxLength", true),
        ("maxItems", true),
        ("maxProperties", true),
        ("minimum", false),
        ("exclusiveMinimum", false),
        ("minLength", false),
        ("minItems", false),
        ("minProperties", false),
    ] {
        let Some(rv) = rm.get(k) else { continue };
        let Some(rv) = rv.as_f64() else {
            return Err(Error::RuleNotSupported(format!(
                "non-numeric \"{k}\" at {path}"
            )));
        };
        let ok = match wm.get(k).and_then(Value::as_f64) {
            None => false,
            Some(wv) if upper => rv >= wv,
            Some(wv) => rv <= wv,
        };
        if !ok {
            let kind = match (upper, wm.contains_key(k)) {
                (true, true) => "MAX_DECREASED",
                (false, true) => "MIN_INCREASED",
                (_, false) => "MIN_MAX_ADDED",
            };
            fail(out, &format!("{}_{}", k.to_ascii_uppercase(), kind), path);
        }
    }
    for k in ["pattern", "multipleOf", "format"] {
        if let Some(rv) = rm.get(k) {
            if wm.get(k) != Some(rv) {
                fail(out, &format!("{}_CHANGED", k.to_ascii_uppercase()), path);
            }
        }
    }
    if rm.get("uniqueItems") == Some(&Value::Bool(true))
        && wm.get("uniqueItems") != Some(&Value::Bool(true))
    {
        fail(out, "UNIQUE_ITEMS_ADDED", path);
    }
    // content model
    let r_props = rm
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let w_props = wm
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let t = Value::Bool(true);
    let r_addl = rm.get("additionalProperties").unwrap_or(&t);
    let w_addl = wm.get("additionalProperties").unwrap_or(&t);
    for (p, ws) in w_props {
        let pp = format!("{path}/properties/{p}");
        match r_props.get(p) {
            Some(rs) => cmp(rs, ws, &pp, out)?,
            None if matches!(r_addl, Value::Bool(false)) => {
                fail(out, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", &pp)
            }
            None => cmp(r_addl, ws, &pp, out)?,
        }
    }
    for (p, rs) in r_props {
        if w_props.contains_key(p) || matches!(w_addl, Value::Bool(false)) {
            continue;
        }
        let pp = format!("{path}/properties/{p}");
        if accepts_anything(w_addl) {
            if !accepts_anything(rs) {
                fail(out, "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", &pp);
            }
        } else {
            cmp(rs, w_addl, &pp, out)?;
        }
    }
    if !accepts_anything(r_addl) {
        cmp(r_addl, w_addl, &format!("{path}/additionalProperties"), out)?;
    }
    let req = |m: &Map<String, Value>| -> Vec<String> {
        m.get("required")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let w_req = req(wm);
    for p in req(rm) {
        if !w_req.contains(&p) {
            fail(
                out,
                "REQUIRED_ATTRIBUTE_ADDED",
                &format!("{path}/required/{p}"),
            );
        }
    }
    // items
    match (rm.get("items"), wm.get("items")) {
        (None, _) => {}
        (Some(Value::Array(_)), _) | (_, Some(Value::Array(_))) => {
            if rm.get("items") != wm.get("items") {
                return Err(Error::RuleNotSupported(format!(
                    "tuple \"items\" at {path}"
                )));
            }
        }
        (Some(ri), Some(wi)) => cmp(ri, wi, &format!("{path}/items"), out)?,
        (Some(ri), None) => cmp(ri, &t, &format!("{path}/items"), out)?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(r: Value, w: Value) -> bool {
        check(&r, &w).unwrap().is_empty()
    }

    #[test]
    fn content_model_rules() {
        let open1 = json!({"type":"object","properties":{"a":{"type":"string"}}});
        let open2 =
            json!({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}});
        let closed1 = json!({"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false});
        let closed2 = json!({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"additionalProperties":false});
        assert!(
            !ok(open2.clone(), open1.clone()),
            "a property added to an open model"
        );
        assert!(
            ok(open1.clone(), open2.clone()),
            "a property removed from an open model"
        );
        assert!(
            ok(closed2.clone(), closed1.clone()),
            "a property added to a closed model"
        );
        assert!(
            !ok(closed1, closed2),
            "a property removed from a closed model"
        );
        assert!(ok(json!({"type":"number"}), json!({"type":"integer"})));
        assert!(!ok(json!({"type":"integer"}), json!({"type":"number"})));
        assert!(!ok(
            json!({"type":"string","maxLength":5}),
            json!({"type":"string","maxLength":10})
        ));
        assert!(ok(
            json!({"type":"string","maxLength":10}),
            json!({"type":"string","maxLength":5})
        ));
        assert!(!ok(json!({"required":["a"]}), json!({})));
        assert!(!ok(json!({"enum":["a"]}), json!({"enum":["a","b"]})));
    }

    #[test]
    fn unchecked_keywords_are_refused_when_they_differ() {
        let r = json!({"oneOf":[{"type":"string"}]});
        assert!(check(&r, &json!({"oneOf":[{"type":"integer"}]})).is_err());
        assert!(check(&r, &r.clone()).unwrap().is_empty());
        assert!(parse("{\"type\":\"strin\"}").is_err());
        assert!(parse("[1]").is_err());
    }
}
