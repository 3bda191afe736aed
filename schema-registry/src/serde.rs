//! Schema-aware serializers for Rust programs, with the wire format of Confluent's serializers
//! (magic byte 0, the 4-byte schema id, Protobuf message indexes, the payload): Avro values
//! from any `serde::Serialize` type (through `serde_json::Value`, see [`avro_bytes`] for byte
//! fields), JSON documents, and already-encoded Protobuf messages. Subject names follow the
//! TopicName (default), RecordName and TopicRecordName strategies; `auto.register.schemas`,
//! `use.latest.version` and `normalize.schemas` behave as in Confluent's serializers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::avro::{self, json_codec, Compiled, Node};
use crate::client::{RegistryClient, SchemaSpec};
use crate::error::{Error, Result};
use crate::wire;

/// How the subject of a record is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubjectNameStrategy {
    /// `<topic>-key` / `<topic>-value`.
    #[default]
    TopicName,
    /// The record's full name.
    RecordName,
    /// `<topic>-<record full name>`.
    TopicRecordName,
}

impl SubjectNameStrategy {
    /// The subject for a topic, field and record name.
    pub fn subject(self, topic: &str, is_key: bool, record: Option<&str>) -> Result<String> {
        let need = || {
            Error::Serialization("this subject name strategy needs a named record schema".into())
        };
        Ok(match self {
            SubjectNameStrategy::TopicName => {
                format!("{topic}-{}", if is_key { "key" } else { "value" })
            }
            SubjectNameStrategy::RecordName => record.ok_or_else(need)?.to_string(),
            SubjectNameStrategy::TopicRecordName => format!("{topic}-{}", record.ok_or_else(need)?),
        })
    }
}

/// Serializer settings (Confluent's property names in the comments).
#[derive(Debug, Clone, Copy)]
pub struct SerializerConfig {
    /// `auto.register.schemas` (default true).
    pub auto_register: bool,
    /// `use.latest.version` (default false; needs `auto_register` off).
    pub use_latest_version: bool,
    /// `normalize.schemas`.
    pub normalize: bool,
    /// `subject.name.strategy`.
    pub strategy: SubjectNameStrategy,
}

impl Default for SerializerConfig {
    fn default() -> Self {
        SerializerConfig {
            auto_register: true,
            use_latest_version: false,
            normalize: false,
            strategy: SubjectNameStrategy::TopicName,
        }
    }
}

fn record_name(c: &Compiled) -> Option<String> {
    match c.node(c.root) {
        Node::Record(r) => Some(r.name.clone()),
        _ => None,
    }
}

struct Ids(Mutex<HashMap<String, (i32, Arc<Compiled>)>>);

/// Avro values framed with the registry's schema id.
pub struct AvroSerializer {
    client: Arc<RegistryClient>,
    schema: Option<SchemaSpec>,
    compiled: Option<Arc<Compiled>>,
    config: SerializerConfig,
    ids: Ids,
}

impl std::fmt::Debug for AvroSerializer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AvroSerializer")
            .field("config", &self.config)
            .finish()
    }
}

async fn compile(client: &RegistryClient, schema: &SchemaSpec) -> Result<Arc<Compiled>> {
    let named = client.resolve_references(schema).await?;
    Ok(Arc::new(
        avro::parse(&schema.schema, &named).map_err(|e| Error::Serialization(e.to_string()))?,
    ))
}

impl AvroSerializer {
    /// A serializer writing `schema` (or, with `use_latest_version` and `schema` `None`, the
    /// subject's latest version).
    pub async fn new(
        client: Arc<RegistryClient>,
        schema: Option<SchemaSpec>,
        config: SerializerConfig,
    ) -> Result<Self> {
        if config.use_latest_version && config.auto_register {
            return Err(Error::Serialization(
                "cannot enable both use.latest.version and auto.register.schemas".into(),
            ));
        }
        if schema.is_none() && !config.use_latest_version {
            return Err(Error::Serialization(
                "a schema is needed unless use.latest.version is set".into(),
            ));
        }
        let compiled = match &schema {
            Some(s) => Some(compile(&client, s).await?),
            None => None,
        };
        Ok(AvroSerializer {
            client,
            schema,
            compiled,
            config,
            ids: Ids(Mutex::new(HashMap::new())),
        })
    }

    async fn writer(&self, subject: &str) -> Result<(i32, Arc<Compiled>)> {
        if let Some(hit) = self.ids.0.lock().ok().and_then(|m| m.get(subject).cloned()) {
            return Ok(hit);
        }
        let found = if self.config.use_latest_version {
            let r = self.client.version(subject, "latest").await?;
            (r.id, compile(&self.client, &r.schema).await?)
        } else {
            let (schema, compiled) = match (&self.schema, &self.compiled) {
                (Some(s), Some(c)) => (s, c.clone()),
                _ => return Err(Error::Serialization("no schema".into())),
            };
            let id = if self.config.auto_register {
                self.client
                    .register(subject, schema, self.config.normalize)
                    .await?
            } else {
                self.client
                    .lookup(subject, schema, self.config.normalize)
                    .await?
                    .id
            };
            (id, compiled)
        };
        if let Ok(mut m) = self.ids.0.lock() {
            m.insert(subject.to_string(), found.clone());
        }
        Ok(found)
    }

    /// Frames a JSON-model value (see [`crate::avro::json_codec`]).
    pub async fn serialize_value(
        &self,
        topic: &str,
        is_key: bool,
        value: &Value,
    ) -> Result<Vec<u8>> {
        let name = self.compiled.as_deref().and_then(record_name);
        let subject = self
            .config
            .strategy
            .subject(topic, is_key, name.as_deref())?;
        let (id, writer) = self.writer(&subject).await?;
        let mut out = Vec::with_capacity(64);
        wire::write_header(&mut out, id);
        json_codec::encode(&writer, value, &mut out)?;
        Ok(out)
    }

    /// Frames any `Serialize` value.
    pub async fn serialize<T: Serialize>(
        &self,
        topic: &str,
        is_key: bool,
        value: &T,
    ) -> Result<Vec<u8>> {
        let v = serde_json::to_value(value).map_err(|e| Error::Serialization(e.to_string()))?;
        self.serialize_value(topic, is_key, &v).await
    }
}

/// Avro values framed with the registry's schema id, decoded with the writer's schema.
pub struct AvroDeserializer {
    client: Arc<RegistryClient>,
    writers: Mutex<HashMap<i32, Arc<Compiled>>>,
}

impl std::fmt::Debug for AvroDeserializer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AvroDeserializer").finish()
    }
}

impl AvroDeserializer {
    /// A deserializer.
    pub fn new(client: Arc<RegistryClient>) -> Self {
        AvroDeserializer {
            client,
            writers: Mutex::new(HashMap::new()),
        }
    }

    /// The JSON-model value of a framed record.
    pub async fn deserialize_value(&self, data: &[u8]) -> Result<Value> {
        let (id, mut rest) = wire::read_header(data)?;
        let hit = self.writers.lock().ok().and_then(|m| m.get(&id).cloned());
        let writer = match hit {
            Some(w) => w,
            None => {
                let s = self.client.schema_by_id(id).await?;
                let w = compile(&self.client, &s).await?;
                if let Ok(mut m) = self.writers.lock() {
                    m.insert(id, w.clone());
                }
                w
            }
        };
        json_codec::decode(&writer, &mut rest)
    }

    /// A framed record as any `DeserializeOwned` type.
    pub async fn deserialize<T: DeserializeOwned>(&self, data: &[u8]) -> Result<T> {
        let v = self.deserialize_value(data).await?;
        serde_json::from_value(v).map_err(|e| Error::Serialization(e.to_string()))
    }
}

/// JSON documents framed with the registry's schema id (the document is not validated).
#[derive(Debug)]
pub struct JsonSerializer {
    client: Arc<RegistryClient>,
    schema: SchemaSpec,
    title: Option<String>,
    config: SerializerConfig,
    ids: Mutex<HashMap<String, i32>>,
}

impl JsonSerializer {
    /// A serializer registering (or looking up) `schema`, a JSON Schema document.
    pub fn new(
        client: Arc<RegistryClient>,
        schema: &str,
        config: SerializerConfig,
    ) -> Result<Self> {
        let parsed: Value =
            serde_json::from_str(schema).map_err(|e| Error::Serialization(e.to_string()))?;
        Ok(JsonSerializer {
            client,
            schema: SchemaSpec {
                schema: schema.to_string(),
                schema_type: "JSON".into(),
                references: Vec::new(),
            },
            title: parsed["title"].as_str().map(String::from),
            config,
            ids: Mutex::new(HashMap::new()),
        })
    }

    /// Frames `value` as a JSON document.
    pub async fn serialize<T: Serialize>(
        &self,
        topic: &str,
        is_key: bool,
        value: &T,
    ) -> Result<Vec<u8>> {
        let subject = self
            .config
            .strategy
            .subject(topic, is_key, self.title.as_deref())?;
        let hit = self.ids.lock().ok().and_then(|m| m.get(&subject).copied());
        let id = match hit {
            Some(id) => id,
            None => {
                let id = if self.config.use_latest_version {
                    self.client.version(&subject, "latest").await?.id
                } else if self.config.auto_register {
                    self.client
                        .register(&subject, &self.schema, self.config.normalize)
                        .await?
                } else {
                    self.client
                        .lookup(&subject, &self.schema, self.config.normalize)
                        .await?
                        .id
                };
                if let Ok(mut m) = self.ids.lock() {
                    m.insert(subject, id);
                }
                id
            }
        };
        let mut out = Vec::with_capacity(64);
        wire::write_header(&mut out, id);
        serde_json::to_writer(&mut out, value).map_err(|e| Error::Serialization(e.to_string()))?;
        Ok(out)
    }
}

/// A framed JSON document's schema id and value.
pub fn deserialize_json<T: DeserializeOwned>(data: &[u8]) -> Result<(i32, T)> {
    let (id, rest) = wire::read_header(data)?;
    let v = serde_json::from_slice(rest).map_err(|e| Error::Serialization(e.to_string()))?;
    Ok((id, v))
}

/// Frames an already-encoded Protobuf message: header, message indexes, payload.
pub fn frame_protobuf(schema_id: i32, message_indexes: &[i32], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 8);
    wire::write_header(&mut out, schema_id);
    wire::write_message_indexes(&mut out, message_indexes);
    out.extend_from_slice(payload);
    out
}

/// The schema id, message indexes and payload of a framed Protobuf message.
pub fn unframe_protobuf(data: &[u8]) -> Result<(i32, Vec<i32>, &[u8])> {
    let (id, mut rest) = wire::read_header(data)?;
    let idx = wire::read_message_indexes(&mut rest)?;
    Ok((id, idx, rest))
}

/// `#[serde(with = "odradek_schema_registry::serde::avro_bytes")]` for `Vec<u8>` fields of
/// Avro `bytes` / `fixed`: they travel as `{"$bytes": "<base64>"}` in the JSON model.
pub mod avro_bytes {
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    /// Serializes bytes.
    pub fn serialize<S: Serializer>(b: &[u8], s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry(
            crate::avro::json_codec::BYTES_KEY,
            &base64::engine::general_purpose::STANDARD.encode(b),
        )?;
        m.end()
    }

    /// Deserializes bytes.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Vec<u8>, D::Error> {
        let m = std::collections::HashMap::<String, String>::deserialize(d)?;
        let s = m
            .get(crate::avro::json_codec::BYTES_KEY)
            .ok_or_else(|| serde::de::Error::custom("expected {\"$bytes\": ...}"))?;
        base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(serde::de::Error::custom)
    }
}
