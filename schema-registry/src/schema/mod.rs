//! Schemas as the registry sees them: the three types, parsing with references, the identity
//! used to find an already registered schema, the `normalize` form, and compatibility levels.

pub mod json;
pub mod protobuf;

use serde::{Deserialize, Serialize};

use crate::avro;
use crate::error::{Error, Result};

/// AVRO (the default), JSON (JSON Schema) or PROTOBUF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum SchemaType {
    /// Apache Avro.
    #[default]
    #[serde(rename = "AVRO")]
    Avro,
    /// JSON Schema.
    #[serde(rename = "JSON")]
    Json,
    /// Protocol Buffers.
    #[serde(rename = "PROTOBUF")]
    Protobuf,
}

impl SchemaType {
    /// Parses a `schemaType` field (case-insensitive, as Confluent does).
    pub fn parse(s: &str) -> Result<SchemaType> {
        match s.to_ascii_uppercase().as_str() {
            "AVRO" => Ok(SchemaType::Avro),
            "JSON" => Ok(SchemaType::Json),
            "PROTOBUF" => Ok(SchemaType::Protobuf),
            _ => Err(Error::InvalidSchema(format!("Invalid schema type {s}"))),
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            SchemaType::Avro => "AVRO",
            SchemaType::Json => "JSON",
            SchemaType::Protobuf => "PROTOBUF",
        }
    }

    /// Whether this is AVRO (Confluent omits `schemaType` for it).
    pub fn is_avro(&self) -> bool {
        *self == SchemaType::Avro
    }
}

/// A reference from a schema to another subject's version: `name` is how the schema names it
/// (an Avro full name, a JSON Schema `$ref` URL, a Protobuf import path).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Reference {
    /// The name the referring schema uses.
    pub name: String,
    /// The referenced subject.
    pub subject: String,
    /// The referenced version.
    pub version: i32,
}

/// A referenced schema's text, resolved from its subject and version.
#[derive(Debug, Clone)]
pub struct Dependency {
    /// The name the referring schema uses.
    pub name: String,
    /// The referenced schema's text.
    pub schema: String,
}

/// A parsed, valid schema.
#[derive(Debug, Clone)]
pub enum Parsed {
    /// Avro, compiled.
    Avro(Box<avro::Compiled>),
    /// JSON Schema, as JSON.
    Json(serde_json::Value),
    /// Protobuf, as the file's descriptor.
    Protobuf(Box<prost_types::FileDescriptorProto>),
}

/// Parses `text` as `t`, with the schemas it references (every transitive reference, the
/// deepest first).
pub fn parse(t: SchemaType, text: &str, deps: &[Dependency]) -> Result<Parsed> {
    match t {
        SchemaType::Avro => {
            let texts: Vec<String> = deps.iter().map(|d| d.schema.clone()).collect();
            Ok(Parsed::Avro(Box::new(avro::parse(text, &texts)?)))
        }
        SchemaType::Json => Ok(Parsed::Json(json::parse(text)?)),
        SchemaType::Protobuf => Ok(Parsed::Protobuf(Box::new(protobuf::parse(text, deps)?))),
    }
}

impl Parsed {
    /// What two registrations must share to be the same schema (with equal references):
    /// whitespace, key order and (for Avro) `{"type":"string"}` vs `"string"` do not matter.
    pub fn identity(&self) -> String {
        match self {
            Parsed::Avro(c) => c.canonical(),
            Parsed::Json(v) => json::canonical(v),
            Parsed::Protobuf(d) => protobuf::identity(d),
        }
    }

    /// The text stored for `normalize=true`.
    pub fn normalized(&self, original: &str) -> String {
        match self {
            Parsed::Avro(c) => c.canonical(),
            Parsed::Json(v) => json::canonical(v),
            Parsed::Protobuf(_) => original.trim().to_string(),
        }
    }
}

/// Why a reader cannot read a writer's data; `Err` when a rule is not implemented.
fn can_read(reader: &Parsed, writer: &Parsed) -> Result<Vec<String>> {
    match (reader, writer) {
        (Parsed::Avro(r), Parsed::Avro(w)) => Ok(avro::compat::check(r, w)
            .iter()
            .map(ToString::to_string)
            .collect()),
        (Parsed::Json(r), Parsed::Json(w)) => json::check(r, w),
        (Parsed::Protobuf(r), Parsed::Protobuf(w)) => protobuf::check(r, w),
        _ => Ok(vec![
            "{errorType:'SCHEMA_TYPE_CHANGED', description:'The schema type differs from the old schema'}"
                .to_string(),
        ]),
    }
}

/// A compatibility level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Level {
    /// No check.
    None,
    /// The new schema reads data of the latest version.
    #[default]
    Backward,
    /// ... of every version.
    BackwardTransitive,
    /// The latest version reads data of the new schema.
    Forward,
    /// Every version reads data of the new schema.
    ForwardTransitive,
    /// Backward and forward with the latest version.
    Full,
    /// Backward and forward with every version.
    FullTransitive,
}

impl Level {
    /// Parses a level name (case-insensitive).
    pub fn parse(s: &str) -> Result<Level> {
        Ok(match s.to_ascii_uppercase().as_str() {
            "NONE" => Level::None,
            "BACKWARD" => Level::Backward,
            "BACKWARD_TRANSITIVE" => Level::BackwardTransitive,
            "FORWARD" => Level::Forward,
            "FORWARD_TRANSITIVE" => Level::ForwardTransitive,
            "FULL" => Level::Full,
            "FULL_TRANSITIVE" => Level::FullTransitive,
            _ => return Err(Error::InvalidCompatibilityLevel),
        })
    }

    /// The level's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "NONE",
            Level::Backward => "BACKWARD",
            Level::BackwardTransitive => "BACKWARD_TRANSITIVE",
            Level::Forward => "FORWARD",
            Level::ForwardTransitive => "FORWARD_TRANSITIVE",
            Level::Full => "FULL",
            Level::FullTransitive => "FULL_TRANSITIVE",
        }
    }

    fn transitive(self) -> bool {
        matches!(
            self,
            Level::BackwardTransitive | Level::ForwardTransitive | Level::FullTransitive
        )
    }
}

/// Checks `new` against `existing` (oldest first) at `level`; returns every problem found
/// (empty: compatible). A rule the registry does not implement is an `Err`.
pub fn check(level: Level, new: &Parsed, existing: &[&Parsed]) -> Result<Vec<String>> {
    let against: &[&Parsed] = if level.transitive() {
        existing
    } else {
        match existing.last() {
            Some(last) => std::slice::from_ref(last),
            None => &[],
        }
    };
    let mut out = Vec::new();
    for old in against {
        let backward = matches!(
            level,
            Level::Backward | Level::BackwardTransitive | Level::Full | Level::FullTransitive
        );
        let forward = matches!(
            level,
            Level::Forward | Level::ForwardTransitive | Level::Full | Level::FullTransitive
        );
        if backward {
            out.extend(can_read(new, old)?);
        }
        if forward {
            out.extend(can_read(old, new)?);
        }
    }
    Ok(out)
}
