//! Avro through the core for `odradek/schema-registry`: `NativeAvroSchema` compiles a schema
//! once; values cross as JSON text (V8's JSON is fast and keeps the addon free of per-field
//! napi calls), with bytes and fixed as `{"$bytes": "<base64>"}` objects that
//! `lib/schema_registry.js` turns into Buffers and back.

use napi::bindgen_prelude::Buffer;
use napi_derive::napi;
use odradek_schema_registry::avro::{self, json_codec, Compiled};
use odradek_schema_registry::wire;

fn err(e: impl std::fmt::Display) -> napi::Error {
    napi::Error::from_reason(e.to_string())
}

/// A compiled Avro schema.
#[napi]
pub struct NativeAvroSchema {
    c: Compiled,
}

#[napi]
impl NativeAvroSchema {
    /// Compiles `schema` (JSON text) with the named schemas its references bring.
    #[napi(constructor)]
    pub fn new(schema: String, named: Option<Vec<String>>) -> napi::Result<Self> {
        let c = avro::parse(&schema, &named.unwrap_or_default()).map_err(err)?;
        Ok(NativeAvroSchema { c })
    }

    /// The schema's canonical JSON.
    #[napi]
    pub fn canonical(&self) -> String {
        self.c.canonical()
    }

    /// Confluent's header for `schema_id` and the Avro binary of the JSON value `json`.
    #[napi]
    pub fn encode(&self, schema_id: i32, json: String) -> napi::Result<Buffer> {
        let v: serde_json::Value = serde_json::from_str(&json).map_err(err)?;
        let mut out = Vec::with_capacity(json.len() / 2 + 8);
        wire::write_header(&mut out, schema_id);
        json_codec::encode(&self.c, &v, &mut out).map_err(err)?;
        Ok(out.into())
    }

    /// The JSON text of the value after the 5-byte header of `data`.
    #[napi]
    pub fn decode(&self, data: Buffer) -> napi::Result<String> {
        let (_, mut rest) = wire::read_header(&data).map_err(err)?;
        let v = json_codec::decode(&self.c, &mut rest).map_err(err)?;
        serde_json::to_string(&v).map_err(err)
    }
}
