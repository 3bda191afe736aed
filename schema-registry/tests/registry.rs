//! The registry against a real broker: `odradek-broker` started in-process on port 0 with a
//! fresh data directory, or the cluster at `ODRADEK_TEST_BOOTSTRAP` (Apache Kafka in the
//! compatibility tier; each test then uses a store topic of its own).

#![allow(clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use odradek_broker::config::BrokerConfig;
use odradek_broker::server::{self as broker_server, RunningBroker};
use odradek_schema_registry::server::{self, RegistryConfig, RunningRegistry};
use serde_json::{json, Value};

const CT: &str = "application/vnd.schemaregistry.v1+json";

struct Cluster {
    bootstrap: String,
    broker: Option<RunningBroker>,
    dir: PathBuf,
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "odradek-sr-{tag}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

async fn start_broker(dir: &Path) -> RunningBroker {
    let overrides = vec![
        (
            "listeners".to_string(),
            "PLAINTEXT://127.0.0.1:0".to_string(),
        ),
        ("log.dirs".to_string(), dir.display().to_string()),
    ];
    broker_server::start(BrokerConfig::load(None, &overrides).unwrap())
        .await
        .unwrap()
}

impl Cluster {
    async fn start(tag: &str) -> Cluster {
        let dir = temp_dir(tag);
        if let Ok(b) = std::env::var("ODRADEK_TEST_BOOTSTRAP") {
            return Cluster {
                bootstrap: b,
                broker: None,
                dir,
            };
        }
        let broker = start_broker(&dir).await;
        Cluster {
            bootstrap: broker.local_addr.to_string(),
            broker: Some(broker),
            dir,
        }
    }

    /// Our broker only: stop it and start it again on the same data.
    async fn restart_broker(&mut self) {
        if let Some(b) = self.broker.take() {
            b.shutdown().await.unwrap();
            let b = start_broker(&self.dir).await;
            self.bootstrap = b.local_addr.to_string();
            self.broker = Some(b);
        }
    }

    fn topic(tag: &str) -> String {
        if std::env::var("ODRADEK_TEST_BOOTSTRAP").is_ok() {
            format!("_schemas-{tag}-{}", std::process::id())
        } else {
            "_schemas".into()
        }
    }

    async fn registry(&self, tag: &str, f: impl FnOnce(&mut RegistryConfig)) -> RunningRegistry {
        let mut c = RegistryConfig::new("127.0.0.1:0", self.bootstrap.clone());
        c.store.topic = Self::topic(tag);
        f(&mut c);
        server::start(c).await.unwrap()
    }
}

struct Http {
    base: String,
    c: reqwest::Client,
}

impl Http {
    fn new(r: &RunningRegistry) -> Http {
        Http {
            base: r.url(),
            c: reqwest::Client::new(),
        }
    }

    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self.c.request(method, format!("{}{path}", self.base));
        if let Some(b) = body {
            req = req.header("content-type", CT).body(b.to_string());
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.send(reqwest::Method::GET, path, None).await
    }
    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(reqwest::Method::POST, path, Some(body)).await
    }
    async fn put(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(reqwest::Method::PUT, path, Some(body)).await
    }
    async fn delete(&self, path: &str) -> (u16, Value) {
        self.send(reqwest::Method::DELETE, path, None).await
    }
}

fn avro_record(fields: Value) -> Value {
    json!({"schema": json!({"type": "record", "name": "User", "namespace": "t", "fields": fields}).to_string()})
}

fn code(v: &Value) -> u64 {
    v["error_code"].as_u64().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenario_table() {
    let cluster = Cluster::start("scenario").await;
    let reg = cluster.registry("scenario", |_| {}).await;
    let h = Http::new(&reg);
    let v1 = avro_record(json!([{"name": "id", "type": "long"}]));
    let v2 = avro_record(
        json!([{"name": "id", "type": "long"}, {"name": "name", "type": "string", "default": ""}]),
    );
    let bad = avro_record(json!([{"name": "id", "type": "string"}]));

    // register, idempotent re-register, evolve compatibly, refuse an incompatible change
    let (s, r) = h.post("/subjects/users-value/versions", v1.clone()).await;
    assert_eq!(s, 200, "{r}");
    let id1 = r["id"].as_i64().unwrap();
    let (_, r) = h.post("/subjects/users-value/versions", v1.clone()).await;
    assert_eq!(r["id"].as_i64(), Some(id1));
    let (s, r) = h.post("/subjects/users-value/versions", v2.clone()).await;
    assert_eq!(s, 200, "{r}");
    let id2 = r["id"].as_i64().unwrap();
    assert_ne!(id1, id2);
    let (s, r) = h.post("/subjects/users-value/versions", bad.clone()).await;
    assert_eq!((s, code(&r)), (409, 409), "{r}");
    let (_, r) = h
        .post(
            "/compatibility/subjects/users-value/versions/latest?verbose=true",
            bad.clone(),
        )
        .await;
    assert_eq!(r["is_compatible"], json!(false));
    assert!(!r["messages"].as_array().unwrap().is_empty());
    let (_, r) = h
        .post(
            "/compatibility/subjects/users-value/versions/latest",
            v2.clone(),
        )
        .await;
    assert_eq!(r["is_compatible"], json!(true));

    // the same schema under another subject shares the id
    let (_, r) = h.post("/subjects/other-value/versions", v1.clone()).await;
    assert_eq!(r["id"].as_i64(), Some(id1));

    // look up by id and by subject/version
    let (s, r) = h.get(&format!("/schemas/ids/{id2}")).await;
    assert_eq!(s, 200);
    assert!(r["schema"].as_str().unwrap().contains("name"));
    let (_, r) = h.get(&format!("/schemas/ids/{id1}/versions")).await;
    assert_eq!(
        r,
        json!([{"subject": "other-value", "version": 1}, {"subject": "users-value", "version": 1}])
    );
    let (_, r) = h.get("/subjects/users-value/versions").await;
    assert_eq!(r, json!([1, 2]));
    let (_, r) = h.get("/subjects/users-value/versions/latest").await;
    assert_eq!(
        (r["version"].as_i64(), r["id"].as_i64()),
        (Some(2), Some(id2))
    );
    let (_, r) = h.post("/subjects/users-value", v1.clone()).await;
    assert_eq!(r["version"].as_i64(), Some(1));
    let (s, r) = h.get("/subjects/users-value/versions/9").await;
    assert_eq!((s, code(&r)), (404, 40402));
    let (s, r) = h.get("/subjects/nobody/versions").await;
    assert_eq!((s, code(&r)), (404, 40401));
    let (s, r) = h.get("/schemas/ids/999").await;
    assert_eq!((s, code(&r)), (404, 40403));
    let (s, r) = h.get("/subjects/users-value/versions/zero").await;
    assert_eq!((s, code(&r)), (422, 42202));
    let (_, r) = h.get("/subjects").await;
    assert_eq!(r, json!(["other-value", "users-value"]));

    // config and mode
    let (_, r) = h.get("/config").await;
    assert_eq!(r, json!({"compatibilityLevel": "BACKWARD"}));
    let (s, r) = h.get("/config/users-value").await;
    assert_eq!((s, code(&r)), (404, 40408));
    let (_, r) = h
        .put("/config/users-value", json!({"compatibility": "NONE"}))
        .await;
    assert_eq!(r, json!({"compatibility": "NONE"}));
    let (s, r) = h.put("/config", json!({"compatibility": "SIDEWAYS"})).await;
    assert_eq!((s, code(&r)), (422, 42203));
    let (s, _) = h.post("/subjects/users-value/versions", bad.clone()).await;
    assert_eq!(s, 200, "NONE lets anything through");
    let (_, r) = h
        .put("/mode/users-value", json!({"mode": "READONLY"}))
        .await;
    assert_eq!(r, json!({"mode": "READONLY"}));
    let (s, r) = h
        .post("/subjects/users-value/versions", avro_record(json!([])))
        .await;
    assert_eq!((s, code(&r)), (422, 42205));
    h.delete("/mode/users-value").await;

    // soft and hard deletes with their error codes
    let (s, r) = h
        .delete("/subjects/users-value/versions/3?permanent=true")
        .await;
    assert_eq!((s, code(&r)), (404, 40407));
    let (_, r) = h.delete("/subjects/users-value/versions/3").await;
    assert_eq!(r, json!(3));
    let (s, r) = h.delete("/subjects/users-value/versions/3").await;
    assert_eq!((s, code(&r)), (404, 40406));
    let (_, r) = h.get("/subjects/users-value/versions?deleted=true").await;
    assert_eq!(r, json!([1, 2, 3]));
    let (_, r) = h
        .delete("/subjects/users-value/versions/3?permanent=true")
        .await;
    assert_eq!(r, json!(3));
    let (s, r) = h.delete("/subjects/other-value?permanent=true").await;
    assert_eq!((s, code(&r)), (404, 40405));
    let (_, r) = h.delete("/subjects/other-value").await;
    assert_eq!(r, json!([1]));
    let (s, r) = h.delete("/subjects/other-value").await;
    assert_eq!((s, code(&r)), (404, 40404));
    let (_, r) = h.get(&format!("/schemas/ids/{id1}")).await;
    assert!(
        r["schema"].is_string(),
        "a soft-deleted subject's schema stays readable by id"
    );
    let (_, r) = h.delete("/subjects/other-value?permanent=true").await;
    assert_eq!(r, json!([1]));
    let (_, r) = h.get("/subjects?deleted=true").await;
    assert_eq!(r, json!(["users-value"]));

    // references: an Avro record using a type from another subject
    let addr = json!({"schema": json!({"type": "record", "name": "Address", "namespace": "t",
        "fields": [{"name": "city", "type": "string"}]}).to_string()});
    let (s, r) = h.post("/subjects/address/versions", addr).await;
    assert_eq!(s, 200, "{r}");
    let addr_id = r["id"].as_i64().unwrap();
    let person = json!({"schema": json!({"type": "record", "name": "Person", "namespace": "t",
        "fields": [{"name": "home", "type": "t.Address"}]}).to_string(),
        "references": [{"name": "t.Address", "subject": "address", "version": 1}]});
    let (s, r) = h
        .post("/subjects/person-value/versions", person.clone())
        .await;
    assert_eq!(s, 200, "{r}");
    let person_id = r["id"].as_i64().unwrap();
    let (_, r) = h.get(&format!("/schemas/ids/{person_id}")).await;
    assert_eq!(
        r["references"],
        json!([{"name": "t.Address", "subject": "address", "version": 1}])
    );
    let (_, r) = h.get("/subjects/address/versions/1/referencedby").await;
    assert_eq!(r, json!([person_id]));
    let (s, r) = h.delete("/subjects/address/versions/1").await;
    assert_eq!((s, code(&r)), (422, 42206));
    let mut unresolved = person.clone();
    unresolved["references"] = json!([]);
    let (s, r) = h.post("/subjects/person2-value/versions", unresolved).await;
    assert_eq!((s, code(&r)), (422, 42201));
    assert!(addr_id > 0);

    // JSON Schema and Protobuf
    let j1 = json!({"schemaType": "JSON", "schema": json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}).to_string()});
    let j2 = json!({"schemaType": "JSON", "schema": json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}}, "additionalProperties": false}).to_string()});
    let j3 = json!({"schemaType": "JSON", "schema": json!({"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": false}).to_string()});
    assert_eq!(h.post("/subjects/j/versions", j1).await.0, 200);
    assert_eq!(h.post("/subjects/j/versions", j2).await.0, 200);
    assert_eq!(code(&h.post("/subjects/j/versions", j3).await.1), 409);
    let (_, r) = h.get("/subjects/j/versions/1").await;
    assert_eq!(r["schemaType"], json!("JSON"));
    let p1 = json!({"schemaType": "PROTOBUF", "schema": "syntax = \"proto3\";\npackage t;\nmessage M { string a = 1; }\n"});
    let p2 = json!({"schemaType": "PROTOBUF", "schema": "syntax = \"proto3\";\npackage t;\nmessage M { string a = 1; int64 b = 2; }\n"});
    let p3 = json!({"schemaType": "PROTOBUF", "schema": "syntax = \"proto3\";\npackage t;\nmessage M { double a = 1; }\n"});
    let (s, r) = h.post("/subjects/p/versions", p1).await;
    assert_eq!(s, 200, "{r}");
    let pid = r["id"].as_i64().unwrap();
    assert_eq!(h.post("/subjects/p/versions", p2).await.0, 200);
    assert_eq!(code(&h.post("/subjects/p/versions", p3).await.1), 409);
    let (_, r) = h
        .get(&format!("/schemas/ids/{pid}?format=serialized"))
        .await;
    assert!(
        !r["schema"].as_str().unwrap().contains("message"),
        "serialized is base64: {r}"
    );
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_error_codes_and_the_registry_stays_up() {
    let cluster = Cluster::start("bad").await;
    let reg = cluster.registry("bad", |c| c.max_body = 64 * 1024).await;
    let h = Http::new(&reg);
    let cases: Vec<(Value, u16, u64)> = vec![
        (
            json!({"schema": "{\"type\": \"record\", \"name\": \"X\""}),
            422,
            42201,
        ),
        (
            json!({"schema": "{\"type\": \"recurd\", \"name\": \"X\", \"fields\": []}"}),
            422,
            42201,
        ),
        (
            json!({"schema": "\"string\"", "schemaType": "XML"}),
            422,
            42201,
        ),
        (
            json!({"schema": "syntax = \"proto3\"; message {", "schemaType": "PROTOBUF"}),
            422,
            42201,
        ),
        (
            json!({"schema": "{\"type\": 5}", "schemaType": "JSON"}),
            422,
            42201,
        ),
        (json!({"schema": ""}), 422, 42201),
        (json!({"schema": 5}), 422, 422),
    ];
    for (body, status, ec) in cases {
        let (s, r) = h.post("/subjects/x/versions", body.clone()).await;
        assert_eq!((s, code(&r)), (status, ec), "{body} -> {r}");
    }
    let c = reqwest::Client::new();
    let url = format!("{}/subjects/x/versions", reg.url());
    let r = c
        .post(&url)
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 415);
    let r: Value = r.json().await.unwrap();
    assert_eq!(code(&r), 415);
    let r = c
        .post(&url)
        .header("content-type", CT)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let huge = json!({"schema": "x".repeat(100 * 1024)}).to_string();
    let r = c
        .post(&url)
        .header("content-type", CT)
        .body(huge)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 413);
    // Refused unread: the client must not send its next request on this connection.
    assert_eq!(
        r.headers().get("connection").and_then(|v| v.to_str().ok()),
        Some("close")
    );
    let r = c
        .get(format!("{}/no/such/path", reg.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let r = c.patch(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 405);
    // still up and serving
    let (s, r) = h
        .post("/subjects/x/versions", json!({"schema": "\"string\""}))
        .await;
    assert_eq!(s, 200, "{r}");
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_auth() {
    let cluster = Cluster::start("auth").await;
    let reg = cluster
        .registry("auth", |c| {
            c.users = vec![("alice".into(), "s3cret".into())]
        })
        .await;
    let c = reqwest::Client::new();
    let r = c
        .get(format!("{}/subjects", reg.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let r = c
        .get(format!("{}/subjects", reg.url()))
        .basic_auth("alice", Some("nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let r = c
        .get(format!("{}/subjects", reg.url()))
        .basic_auth("alice", Some("s3cret"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    reg.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemas_and_ids_survive_restarts() {
    let mut cluster = Cluster::start("restart").await;
    let mut ids = Vec::new();
    {
        let reg = cluster.registry("restart", |_| {}).await;
        let h = Http::new(&reg);
        h.put("/config", json!({"compatibility": "NONE"})).await;
        for i in 0..5 {
            let (s, r) = h
                .post(
                    &format!("/subjects/s{}/versions", i % 2),
                    avro_record(json!([{"name": format!("f{i}"), "type": "int"}])),
                )
                .await;
            assert_eq!(s, 200, "{r}");
            ids.push(r["id"].as_i64().unwrap());
        }
        h.delete("/subjects/s1/versions/1").await;
        reg.shutdown().await;
    }
    for round in 0..2 {
        if round == 1 {
            cluster.restart_broker().await;
        }
        let reg = cluster.registry("restart", |_| {}).await;
        let h = Http::new(&reg);
        for (i, id) in ids.iter().enumerate() {
            let (s, r) = h.get(&format!("/schemas/ids/{id}")).await;
            assert_eq!(s, 200, "round {round}: id {id}: {r}");
            assert!(r["schema"].as_str().unwrap().contains(&format!("f{i}")));
        }
        assert_eq!(h.get("/subjects/s0/versions").await.1, json!([1, 2, 3]));
        assert_eq!(h.get("/subjects/s1/versions").await.1, json!([2]));
        assert_eq!(
            h.get("/config").await.1,
            json!({"compatibilityLevel": "NONE"})
        );
        // a new schema gets a fresh id, never one in use
        let (_, r) = h
            .post(
                "/subjects/s9/versions",
                avro_record(json!([{"name": format!("new{round}"), "type": "int"}])),
            )
            .await;
        let id = r["id"].as_i64().unwrap();
        assert!(!ids.contains(&id), "{id} reused");
        ids.push(id);
        let fresh = ids.len() - 1;
        // keep the naming rule of the loop above for the check in the next round
        let (_, r) = h.get(&format!("/schemas/ids/{id}")).await;
        assert!(r["schema"]
            .as_str()
            .unwrap()
            .contains(&format!("new{round}")));
        ids.truncate(fresh);
        reg.shutdown().await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Reading {
    sensor: String,
    value: f64,
    at: i64,
    #[serde(with = "odradek_schema_registry::serde::avro_bytes")]
    raw: Vec<u8>,
    note: Option<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_serde_module_through_kafka() {
    use odradek_schema_registry::client::{ClientConfig, RegistryClient, SchemaSpec};
    use odradek_schema_registry::serde::{
        AvroDeserializer, AvroSerializer, SerializerConfig, SubjectNameStrategy,
    };
    use std::sync::Arc;

    let cluster = Cluster::start("serde").await;
    let reg = cluster.registry("serde", |_| {}).await;
    let client = Arc::new(RegistryClient::new(ClientConfig::new(reg.url())).unwrap());
    let schema = json!({"type": "record", "name": "Reading", "namespace": "rs", "fields": [
        {"name": "sensor", "type": "string"}, {"name": "value", "type": "double"},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "raw", "type": "bytes"}, {"name": "note", "type": ["null", "string"], "default": null}]});
    let ser = AvroSerializer::new(
        client.clone(),
        Some(SchemaSpec::avro(schema.to_string())),
        SerializerConfig::default(),
    )
    .await
    .unwrap();
    let de = AvroDeserializer::new(client.clone());
    let topic = format!("serde-{}", std::process::id());
    let producer =
        odradek::Producer::from_map([("bootstrap.servers", cluster.bootstrap.as_str())]).unwrap();
    let readings: Vec<Reading> = (0..10)
        .map(|i| Reading {
            sensor: format!("s{i}"),
            value: f64::from(i) * 0.5,
            at: 1_700_000_000_000 + i64::from(i),
            raw: vec![i as u8, 0, 255],
            note: (i % 2 == 0).then(|| "even".into()),
        })
        .collect();
    for r in &readings {
        let bytes = ser.serialize(&topic, false, r).await.unwrap();
        producer
            .send(odradek::ProducerRecord::new(topic.clone(), bytes).partition(0))
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let consumer = odradek::Consumer::from_map([
        ("bootstrap.servers", cluster.bootstrap.as_str()),
        ("auto.offset.reset", "earliest"),
    ])
    .unwrap();
    let tp = odradek::producer::TopicPartition {
        topic: topic.as_str().into(),
        partition: 0,
    };
    consumer.assign(&[tp]);
    let mut got = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while got.len() < readings.len() && std::time::Instant::now() < deadline {
        for rec in consumer.poll(Duration::from_millis(200)).await.unwrap() {
            got.push(
                de.deserialize::<Reading>(rec.value.as_deref().unwrap())
                    .await
                    .unwrap(),
            );
        }
    }
    assert_eq!(got, readings);
    // the subject and strategies
    let h = Http::new(&reg);
    assert_eq!(
        h.get(&format!("/subjects/{topic}-value/versions")).await.1,
        json!([1])
    );
    let rec = AvroSerializer::new(
        client.clone(),
        Some(SchemaSpec::avro(schema.to_string())),
        SerializerConfig {
            strategy: SubjectNameStrategy::TopicRecordName,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    rec.serialize(&topic, false, &readings[0]).await.unwrap();
    assert_eq!(
        h.get(&format!("/subjects/{topic}-rs.Reading/versions"))
            .await
            .1,
        json!([1])
    );
    let latest = AvroSerializer::new(
        client.clone(),
        None,
        SerializerConfig {
            auto_register: false,
            use_latest_version: true,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(
        latest.serialize(&topic, false, &readings[1]).await.unwrap(),
        ser.serialize(&topic, false, &readings[1]).await.unwrap()
    );
    assert!(de.deserialize_value(&[1, 0, 0, 0, 1]).await.is_err());
    producer.close().await;
    consumer.close().await;
    reg.shutdown().await;
}
