//! A client of a Confluent-compatible registry for the [`serde`](crate::serde) module: every
//! request has a timeout; connection errors, 408, 429 and 5xx answers are retried with
//! jittered exponential backoff (over every URL given); ids, schemas and subject lookups are
//! cached, latest versions for `latest_ttl`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::{Error, Result};

/// A schema as the registry's API carries it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SchemaSpec {
    /// Text.
    pub schema: String,
    /// `AVRO`, `JSON` or `PROTOBUF`.
    #[serde(rename = "schemaType", default = "avro")]
    pub schema_type: String,
    /// References.
    #[serde(default)]
    pub references: Vec<crate::client::Reference>,
}

fn avro() -> String {
    "AVRO".into()
}

/// A reference to another subject's version.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Reference {
    /// Name in the referring schema.
    pub name: String,
    /// Subject.
    pub subject: String,
    /// Version.
    pub version: i32,
}

impl SchemaSpec {
    /// An Avro schema without references.
    pub fn avro(schema: impl Into<String>) -> SchemaSpec {
        SchemaSpec {
            schema: schema.into(),
            schema_type: "AVRO".into(),
            references: Vec::new(),
        }
    }

    fn body(&self) -> Value {
        let mut b = json!({"schema": self.schema});
        if self.schema_type != "AVRO" {
            b["schemaType"] = json!(self.schema_type);
        }
        if !self.references.is_empty() {
            b["references"] = json!(self.references);
        }
        b
    }
}

/// How to reach the registry (the property names of Confluent's clients in the comments).
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Base URLs (`url`, comma-separated there).
    pub urls: Vec<String>,
    /// `basic.auth.user.info` as (user, password).
    pub basic_auth: Option<(String, String)>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// `max.retries` (default 3).
    pub max_retries: u32,
    /// `retries.wait.ms` (default 1 s), doubled per attempt up to `retries.max.wait.ms` (20 s).
    pub retry_wait: Duration,
    /// `retries.max.wait.ms`.
    pub retry_max_wait: Duration,
    /// `cache.latest.ttl.sec` (`None`: latest versions are cached until the process ends).
    pub latest_ttl: Option<Duration>,
}

impl ClientConfig {
    /// Defaults for one URL.
    pub fn new(url: impl Into<String>) -> ClientConfig {
        ClientConfig {
            urls: vec![url.into()],
            basic_auth: None,
            timeout: Duration::from_secs(10),
            max_retries: 3,
            retry_wait: Duration::from_secs(1),
            retry_max_wait: Duration::from_secs(20),
            latest_ttl: None,
        }
    }
}

/// A registered schema's coordinates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    /// Global id.
    pub id: i32,
    /// Subject, when known.
    pub subject: Option<String>,
    /// Version, when known.
    pub version: Option<i32>,
    /// The schema.
    pub schema: SchemaSpec,
}

#[derive(Default)]
struct Caches {
    by_id: HashMap<i32, SchemaSpec>,
    ids: HashMap<(String, SchemaSpec), i32>,
    latest: HashMap<String, (Instant, Registered)>,
}

/// The registry client.
pub struct RegistryClient {
    http: reqwest::Client,
    config: ClientConfig,
    caches: Mutex<Caches>,
}

impl std::fmt::Debug for RegistryClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryClient")
            .field("urls", &self.config.urls)
            .finish()
    }
}

fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl RegistryClient {
    /// A client.
    pub fn new(config: ClientConfig) -> Result<RegistryClient> {
        if config.urls.is_empty() {
            return Err(Error::Serialization(
                "the registry client needs a url".into(),
            ));
        }
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .build()
            .map_err(|e| Error::Serialization(format!("http client: {e}")))?;
        Ok(RegistryClient {
            http,
            config,
            caches: Mutex::new(Caches::default()),
        })
    }

    fn caches(&self) -> std::sync::MutexGuard<'_, Caches> {
        self.caches.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value> {
        let mut wait = self.config.retry_wait;
        let mut attempt: u32 = 0;
        loop {
            let base = &self.config.urls[attempt as usize % self.config.urls.len()];
            let mut req = self
                .http
                .request(
                    method.clone(),
                    format!("{}{path}", base.trim_end_matches('/')),
                )
                .header(
                    "accept",
                    "application/vnd.schemaregistry.v1+json, application/json",
                );
            if let Some((u, p)) = &self.config.basic_auth {
                req = req.basic_auth(u, Some(p));
            }
            if let Some(b) = body {
                req = req
                    .header("content-type", "application/vnd.schemaregistry.v1+json")
                    .body(b.to_string());
            }
            let outcome = match req.send().await {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let text = resp.text().await.unwrap_or_default();
                    if (200..300).contains(&status) {
                        return serde_json::from_str(&text).map_err(|e| {
                            Error::Serialization(format!("registry answer is not JSON: {e}"))
                        });
                    }
                    let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                    Error::Remote {
                        code: v["error_code"]
                            .as_u64()
                            .map_or(u32::from(status), |c| c as u32),
                        message: v["message"].as_str().unwrap_or(&text).to_string(),
                    }
                }
                Err(e) => Error::Remote {
                    code: 50002,
                    message: format!("cannot reach the registry at {base}: {e}"),
                },
            };
            let retriable = match &outcome {
                Error::Remote { code, .. } => {
                    *code >= 500 || *code == 408 || *code == 429 || *code >= 50000
                }
                _ => false,
            };
            if !retriable || attempt >= self.config.max_retries {
                return Err(outcome);
            }
            let jitter = 0.5 + f64::from(std::process::id() % 7 + attempt) / 14.0;
            tokio::time::sleep(wait.mul_f64(jitter.min(1.0))).await;
            wait = (wait * 2).min(self.config.retry_max_wait);
            attempt += 1;
        }
    }

    /// Registers `schema` under `subject`; returns its id (cached per subject and schema).
    pub async fn register(
        &self,
        subject: &str,
        schema: &SchemaSpec,
        normalize: bool,
    ) -> Result<i32> {
        let key = (subject.to_string(), schema.clone());
        if let Some(id) = self.caches().ids.get(&key) {
            return Ok(*id);
        }
        let v = self
            .send(
                reqwest::Method::POST,
                &format!("/subjects/{}/versions?normalize={normalize}", enc(subject)),
                Some(&schema.body()),
            )
            .await?;
        let id = v["id"]
            .as_i64()
            .ok_or_else(|| Error::Serialization("no id in the answer".into()))?
            as i32;
        let mut c = self.caches();
        c.ids.insert(key, id);
        c.by_id.insert(id, schema.clone());
        Ok(id)
    }

    /// The version of `subject` holding `schema`.
    pub async fn lookup(
        &self,
        subject: &str,
        schema: &SchemaSpec,
        normalize: bool,
    ) -> Result<Registered> {
        let key = (subject.to_string(), schema.clone());
        if let Some(id) = self.caches().ids.get(&key) {
            return Ok(Registered {
                id: *id,
                subject: Some(subject.into()),
                version: None,
                schema: schema.clone(),
            });
        }
        let v = self
            .send(
                reqwest::Method::POST,
                &format!("/subjects/{}?normalize={normalize}", enc(subject)),
                Some(&schema.body()),
            )
            .await?;
        let r = registered(&v)?;
        self.caches().ids.insert(key, r.id);
        Ok(r)
    }

    /// The schema an id names.
    pub async fn schema_by_id(&self, id: i32) -> Result<SchemaSpec> {
        if let Some(s) = self.caches().by_id.get(&id) {
            return Ok(s.clone());
        }
        let v = self
            .send(reqwest::Method::GET, &format!("/schemas/ids/{id}"), None)
            .await?;
        let s: SchemaSpec =
            serde_json::from_value(v).map_err(|e| Error::Serialization(e.to_string()))?;
        self.caches().by_id.insert(id, s.clone());
        Ok(s)
    }

    /// A subject's version (`"latest"` or a number).
    pub async fn version(&self, subject: &str, version: &str) -> Result<Registered> {
        if version == "latest" {
            let hit = self.caches().latest.get(subject).cloned();
            if let Some((at, r)) = hit {
                if self.config.latest_ttl.is_none_or(|ttl| at.elapsed() < ttl) {
                    return Ok(r);
                }
            }
        }
        let v = self
            .send(
                reqwest::Method::GET,
                &format!("/subjects/{}/versions/{version}", enc(subject)),
                None,
            )
            .await?;
        let r = registered(&v)?;
        if version == "latest" {
            self.caches()
                .latest
                .insert(subject.to_string(), (Instant::now(), r.clone()));
        }
        Ok(r)
    }

    /// The texts of every schema `schema` references, deepest first.
    pub async fn resolve_references(&self, schema: &SchemaSpec) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let mut stack: Vec<(Reference, bool)> = schema
            .references
            .iter()
            .rev()
            .map(|r| (r.clone(), false))
            .collect();
        let mut seen = std::collections::HashSet::new();
        while let Some((r, expanded)) = stack.pop() {
            let v = self.version(&r.subject, &r.version.to_string()).await?;
            if expanded {
                out.push(v.schema.schema);
                continue;
            }
            if !seen.insert(r.name.clone()) || seen.len() > 256 {
                continue;
            }
            stack.push((r, true));
            for dep in v.schema.references.iter().rev() {
                stack.push((dep.clone(), false));
            }
        }
        Ok(out)
    }
}

fn registered(v: &Value) -> Result<Registered> {
    Ok(Registered {
        id: v["id"]
            .as_i64()
            .ok_or_else(|| Error::Serialization("no id in the answer".into()))? as i32,
        subject: v["subject"].as_str().map(String::from),
        version: v["version"].as_i64().map(|n| n as i32),
        schema: serde_json::from_value(v.clone())
            .map_err(|e| Error::Serialization(e.to_string()))?,
    })
}
