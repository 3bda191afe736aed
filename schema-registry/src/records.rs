//! The records of the `_schemas` topic, in Confluent's JSON layouts (so the topic is readable by
//! the same tools), keyed so that compaction keeps the last value of each key:
//!
//! | key | value |
//! |---|---|
//! | `{"keytype":"SCHEMA","subject":S,"version":V,"magic":1}` | `{"subject","version","id","schemaType"?,"references"?,"schema","deleted"}`, or null (hard delete) |
//! | `{"keytype":"CONFIG","subject":S or null,"magic":0}` | `{"compatibilityLevel":L}`, or null (deleted) |
//! | `{"keytype":"MODE","subject":S or null,"magic":0}` | `{"mode":M}`, or null |
//! | `{"keytype":"NOOP","magic":0}` | null (written at startup to learn the end of the topic) |

use serde::{Deserialize, Serialize};

use crate::schema::{Reference, SchemaType};

/// A record key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "keytype")]
pub enum Key {
    /// One version of a subject.
    #[serde(rename = "SCHEMA")]
    Schema {
        /// Subject.
        subject: String,
        /// Version.
        version: i32,
        /// Always 1.
        magic: i32,
    },
    /// The global (subject null) or a subject's compatibility level.
    #[serde(rename = "CONFIG")]
    Config {
        /// Subject, or null for the global level.
        subject: Option<String>,
        /// Always 0.
        magic: i32,
    },
    /// The global or a subject's mode.
    #[serde(rename = "MODE")]
    Mode {
        /// Subject, or null for the global mode.
        subject: Option<String>,
        /// Always 0.
        magic: i32,
    },
    /// A marker with no effect.
    #[serde(rename = "NOOP")]
    Noop {
        /// Always 0.
        magic: i32,
    },
    /// Confluent's subject deletion marker (we mark versions deleted instead; read and ignored).
    #[serde(rename = "DELETE_SUBJECT")]
    DeleteSubject {
        /// Subject.
        subject: String,
        /// Always 0.
        #[serde(default)]
        magic: i32,
    },
    /// Confluent's hard-deletion marker (read and ignored; versions are tombstoned).
    #[serde(rename = "CLEAR_SUBJECT")]
    ClearSubject {
        /// Subject.
        subject: String,
        /// Always 0.
        #[serde(default)]
        magic: i32,
    },
}

impl Key {
    /// The key of a subject's version.
    pub fn schema(subject: &str, version: i32) -> Key {
        Key::Schema {
            subject: subject.to_string(),
            version,
            magic: 1,
        }
    }

    /// The key of a compatibility level.
    pub fn config(subject: Option<&str>) -> Key {
        Key::Config {
            subject: subject.map(String::from),
            magic: 0,
        }
    }

    /// The key of a mode.
    pub fn mode(subject: Option<&str>) -> Key {
        Key::Mode {
            subject: subject.map(String::from),
            magic: 0,
        }
    }
}

/// The value of a SCHEMA record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaValue {
    /// Subject.
    pub subject: String,
    /// Version.
    pub version: i32,
    /// Global id.
    pub id: i32,
    /// Omitted for AVRO.
    #[serde(
        rename = "schemaType",
        default,
        skip_serializing_if = "SchemaType::is_avro"
    )]
    pub schema_type: SchemaType,
    /// References, omitted when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<Reference>,
    /// The schema text.
    pub schema: String,
    /// Soft-deleted.
    #[serde(default)]
    pub deleted: bool,
}

/// The value of a CONFIG record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigValue {
    /// The level's name.
    #[serde(rename = "compatibilityLevel")]
    pub compatibility_level: String,
}

/// The value of a MODE record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeValue {
    /// READWRITE, READONLY or IMPORT.
    pub mode: String,
}

/// Serializes a key or value (these types cannot fail to serialize).
pub fn to_bytes<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confluent_layouts() {
        assert_eq!(
            String::from_utf8(to_bytes(&Key::schema("s", 2))).unwrap(),
            r#"{"keytype":"SCHEMA","subject":"s","version":2,"magic":1}"#
        );
        assert_eq!(
            String::from_utf8(to_bytes(&Key::config(None))).unwrap(),
            r#"{"keytype":"CONFIG","subject":null,"magic":0}"#
        );
        let v: SchemaValue = serde_json::from_str(
            r#"{"subject":"s","version":1,"id":3,"schema":"\"string\"","deleted":false}"#,
        )
        .unwrap();
        assert_eq!(v.schema_type, SchemaType::Avro);
        let k: Key =
            serde_json::from_str(r#"{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}"#)
                .unwrap();
        assert!(matches!(k, Key::DeleteSubject { .. }));
    }
}
