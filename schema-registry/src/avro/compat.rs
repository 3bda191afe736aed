//! Avro compatibility by the specification's schema resolution rules ("Schema Resolution" in
//! the Avro 1.11 specification), as the Java `SchemaCompatibility` applies them: can a reader
//! with schema R decode data written with schema W?
//!
//! - a writer union is readable when every one of its branches is;
//! - a reader union reads a non-union writer when one of its branches does;
//! - primitives match themselves and the promotions int→long/float/double, long→float/double,
//!   float→double, string↔bytes;
//! - records, enums and fixed types match by full name (or a reader alias of the writer's
//!   name); a reader field is found in the writer by name or by one of its aliases, and one the
//!   writer lacks needs a default; writer fields the reader lacks are skipped;
//! - a writer enum symbol the reader lacks is an error unless the reader enum has a default;
//! - fixed sizes must be equal; arrays and maps compare their items / values;
//! - logical types are compared by their underlying type (as the Java checker does).
//!
//! We do not use `apache-avro`'s own checker: it returns only a boolean per pair and, in the
//! versions we checked, does not follow reader aliases or enum defaults.

use std::collections::HashSet;

use super::{Compiled, Fixed, Node};

/// One incompatibility, in the shape of Confluent's verbose messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incompatibility {
    /// Confluent's error type, e.g. `READER_FIELD_MISSING_DEFAULT_VALUE`.
    pub kind: &'static str,
    /// JSON-pointer-like path in the reader schema.
    pub path: String,
    /// What was found.
    pub detail: String,
}

impl std::fmt::Display for Incompatibility {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{{errorType:'{}', description:'{}', path:'{}'}}",
            self.kind, self.detail, self.path
        )
    }
}

/// Every problem that keeps `reader` from reading data written with `writer`; empty when
/// compatible.
pub fn check(reader: &Compiled, writer: &Compiled) -> Vec<Incompatibility> {
    let mut c = Checker {
        r: reader,
        w: writer,
        seen: HashSet::new(),
        out: Vec::new(),
    };
    c.check(reader.root, writer.root, "");
    c.out
}

/// The type a node is written as: logical types resolve by their underlying type.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind<'a> {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
    Array(usize),
    Map(usize),
    Union(&'a [usize]),
    Record,
    Enum,
    Fixed(&'a Fixed),
    Duration,
}

fn kind(n: &Node) -> Kind<'_> {
    match n {
        Node::Null => Kind::Null,
        Node::Boolean => Kind::Boolean,
        Node::Int | Node::Date | Node::TimeMillis => Kind::Int,
        Node::Long
        | Node::TimeMicros
        | Node::TimestampMillis
        | Node::TimestampMicros
        | Node::TimestampNanos
        | Node::LocalTimestampMillis
        | Node::LocalTimestampMicros
        | Node::LocalTimestampNanos => Kind::Long,
        Node::Float => Kind::Float,
        Node::Double => Kind::Double,
        Node::Bytes | Node::BigDecimal => Kind::Bytes,
        Node::Decimal { fixed: None, .. } => Kind::Bytes,
        Node::Decimal { fixed: Some(f), .. } => Kind::Fixed(f),
        Node::String | Node::Uuid => Kind::String,
        Node::Array(i) => Kind::Array(*i),
        Node::Map(i) => Kind::Map(*i),
        Node::Union(b) => Kind::Union(b),
        Node::Record(_) => Kind::Record,
        Node::Enum(_) => Kind::Enum,
        Node::Fixed(f) => Kind::Fixed(f),
        Node::Duration => Kind::Duration,
    }
}

fn kind_name(k: Kind<'_>) -> &'static str {
    match k {
        Kind::Null => "null",
        Kind::Boolean => "boolean",
        Kind::Int => "int",
        Kind::Long => "long",
        Kind::Float => "float",
        Kind::Double => "double",
        Kind::Bytes => "bytes",
        Kind::String => "string",
        Kind::Array(_) => "array",
        Kind::Map(_) => "map",
        Kind::Union(_) => "union",
        Kind::Record => "record",
        Kind::Enum => "enum",
        Kind::Fixed(_) | Kind::Duration => "fixed",
    }
}

fn name_matches(reader: &str, reader_aliases: &[String], writer: &str) -> bool {
    reader == writer || reader_aliases.iter().any(|a| a == writer)
}

struct Checker<'a> {
    r: &'a Compiled,
    w: &'a Compiled,
    /// (reader, writer) pairs of named types being checked: a recursive type meets itself again
    /// and is assumed compatible there (the outer check decides).
    seen: HashSet<(usize, usize)>,
    out: Vec<Incompatibility>,
}

impl Checker<'_> {
    fn fail(&mut self, kind: &'static str, path: &str, detail: String) {
        self.out.push(Incompatibility {
            kind,
            path: if path.is_empty() {
                "/".into()
            } else {
                path.into()
            },
            detail,
        });
    }

    /// Whether reader node `ri` reads writer node `wi`, without recording problems.
    fn quietly(&mut self, ri: usize, wi: usize) -> bool {
        let before = self.out.len();
        self.check(ri, wi, "");
        let ok = self.out.len() == before;
        self.out.truncate(before);
        ok
    }

    fn check(&mut self, ri: usize, wi: usize, path: &str) {
        let (rn, wn) = (self.r.node(ri), self.w.node(wi));
        let (rk, wk) = (kind(rn), kind(wn));
        if let Kind::Union(wb) = wk {
            for (i, &b) in wb.iter().enumerate() {
                let before = self.out.len();
                self.check(ri, b, path);
                if self.out.len() > before {
                    self.out.truncate(before);
                    self.fail(
                        "MISSING_UNION_BRANCH",
                        path,
                        format!(
                            "The new schema is missing a type inside a union field at path '{path}/{i}' in the old schema"
                        ),
                    );
                }
            }
            return;
        }
        if let Kind::Union(rb) = rk {
            let rb = rb.to_vec();
            if !rb.iter().any(|&b| self.quietly(b, wi)) {
                self.fail(
                    "MISSING_UNION_BRANCH",
                    path,
                    format!(
                        "The old schema's type {} is not in the new schema's union",
                        kind_name(wk)
                    ),
                );
            }
            return;
        }
        use Kind::*;
        match (rk, wk) {
            (Null, Null) | (Boolean, Boolean) | (Int, Int) | (Long, Long) => {}
            (Float, Float) | (Double, Double) | (Bytes, Bytes) | (String, String) => {}
            (Long, Int) | (Float, Int) | (Float, Long) | (Double, Int | Long | Float) => {}
            (String, Bytes) | (Bytes, String) => {}
            (Duration, Duration) => {}
            (Array(a), Array(b)) => self.check(a, b, &format!("{path}/items")),
            (Map(a), Map(b)) => self.check(a, b, &format!("{path}/values")),
            (Fixed(a), Fixed(b)) => {
                if !name_matches(&a.name, &a.aliases, &b.name) {
                    self.fail(
                        "NAME_MISMATCH",
                        &format!("{path}/name"),
                        format!("expected: {}", b.name),
                    );
                } else if a.size != b.size {
                    self.fail(
                        "FIXED_SIZE_MISMATCH",
                        &format!("{path}/size"),
                        format!("expected: {}, found: {}", b.size, a.size),
                    );
                }
            }
            (Enum, Enum) => self.check_enum(ri, wi, path),
            (Record, Record) => self.check_record(ri, wi, path),
            _ => self.fail(
                "TYPE_MISMATCH",
                path,
                format!(
                    "The type (path '{path}') of a field in the new schema does not match with the old schema: reader type: {} not compatible with writer type: {}",
                    kind_name(rk),
                    kind_name(wk)
                ),
            ),
        }
    }

    fn check_enum(&mut self, ri: usize, wi: usize, path: &str) {
        let (Node::Enum(r), Node::Enum(w)) = (self.r.node(ri), self.w.node(wi)) else {
            return;
        };
        if !name_matches(&r.name, &r.aliases, &w.name) {
            let detail = format!("expected: {}", w.name);
            self.fail("NAME_MISMATCH", &format!("{path}/name"), detail);
            return;
        }
        if r.default.is_some() {
            return;
        }
        let missing: Vec<&str> = w
            .symbols
            .iter()
            .filter(|s| !r.symbols.contains(s))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            let detail = format!(
                "The new schema is missing enum symbols '{}' at path '{path}/symbols' in the old schema",
                missing.join(", ")
            );
            self.fail("MISSING_ENUM_SYMBOLS", &format!("{path}/symbols"), detail);
        }
    }

    fn check_record(&mut self, ri: usize, wi: usize, path: &str) {
        let (Node::Record(r), Node::Record(w)) = (self.r.node(ri), self.w.node(wi)) else {
            return;
        };
        if !name_matches(&r.name, &r.aliases, &w.name) {
            let detail = format!("expected: {}", w.name);
            self.fail("NAME_MISMATCH", &format!("{path}/name"), detail);
            return;
        }
        if !self.seen.insert((ri, wi)) {
            return;
        }
        for (i, rf) in r.fields.iter().enumerate() {
            let fpath = format!("{path}/fields/{i}");
            let wf = w
                .fields
                .iter()
                .find(|wf| wf.name == rf.name)
                .or_else(|| w.fields.iter().find(|wf| rf.aliases.contains(&wf.name)));
            match wf {
                Some(wf) => self.check(rf.node, wf.node, &format!("{fpath}/type")),
                None if rf.default.is_some() => {}
                None => {
                    let detail = format!(
                        "The field '{}' at path '{fpath}' in the new schema has no default value and is missing in the old schema",
                        rf.name
                    );
                    self.fail("READER_FIELD_MISSING_DEFAULT_VALUE", &fpath, detail);
                }
            }
        }
        self.seen.remove(&(ri, wi));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avro::parse;

    fn ok(r: &str, w: &str) -> bool {
        check(&parse(r, &[]).unwrap(), &parse(w, &[]).unwrap()).is_empty()
    }

    const V1: &str = r#"{"type":"record","name":"U","fields":[{"name":"a","type":"int"}]}"#;
    const V2_DEFAULT: &str = r#"{"type":"record","name":"U","fields":[{"name":"a","type":"int"},{"name":"b","type":"string","default":"x"}]}"#;
    const V2_NO_DEFAULT: &str = r#"{"type":"record","name":"U","fields":[{"name":"a","type":"int"},{"name":"b","type":"string"}]}"#;

    #[test]
    fn added_field_needs_a_default_for_the_reader() {
        assert!(ok(V2_DEFAULT, V1));
        assert!(!ok(V2_NO_DEFAULT, V1));
        assert!(
            ok(V1, V2_NO_DEFAULT),
            "writer fields the reader lacks are skipped"
        );
        let p = check(
            &parse(V2_NO_DEFAULT, &[]).unwrap(),
            &parse(V1, &[]).unwrap(),
        );
        assert_eq!(p[0].kind, "READER_FIELD_MISSING_DEFAULT_VALUE");
    }

    #[test]
    fn promotions_follow_the_spec() {
        assert!(ok(r#""long""#, r#""int""#));
        assert!(ok(r#""double""#, r#""float""#));
        assert!(ok(r#""bytes""#, r#""string""#));
        assert!(!ok(r#""int""#, r#""long""#));
        assert!(!ok(r#""float""#, r#""double""#));
        assert!(ok(
            r#"{"type":"long","logicalType":"timestamp-millis"}"#,
            r#""long""#
        ));
    }

    #[test]
    fn unions() {
        assert!(ok(r#"["null","string"]"#, r#""string""#));
        assert!(!ok(r#""string""#, r#"["null","string"]"#));
        assert!(ok(r#"["null","long"]"#, r#"["null","int"]"#));
    }

    #[test]
    fn enums_and_aliases() {
        let e2 = r#"{"type":"enum","name":"E","symbols":["A","B"]}"#;
        let e1 = r#"{"type":"enum","name":"E","symbols":["A"]}"#;
        let e1d = r#"{"type":"enum","name":"E","symbols":["A","Z"],"default":"Z"}"#;
        assert!(ok(e2, e1));
        assert!(!ok(e1, e2));
        assert!(ok(e1d, e2));
        let renamed = r#"{"type":"record","name":"V","aliases":["U"],"fields":[{"name":"x","aliases":["a"],"type":"int"}]}"#;
        assert!(ok(renamed, V1));
        assert!(!ok(
            r#"{"type":"record","name":"V","fields":[{"name":"a","type":"int"}]}"#,
            V1
        ));
    }

    #[test]
    fn fixed_and_recursion() {
        assert!(!ok(
            r#"{"type":"fixed","name":"F","size":4}"#,
            r#"{"type":"fixed","name":"F","size":8}"#
        ));
        let l = r#"{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]}"#;
        assert!(ok(l, l));
    }
}
