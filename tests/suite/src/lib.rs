//! Harness for the client integration suite.
//!
//! Every test gets a [`Target`]: with `ODRADEK_TEST_BOOTSTRAP=host:port` set, an external broker
//! (Apache Kafka in the compatibility tier); otherwise a fresh `odradek-broker` process on a free
//! port with a temporary data directory (the binary from `ODRADEK_BROKER_BIN`, or the workspace's
//! `target/debug/odradek-broker`, which `cargo test --workspace` builds).

pub mod broker_proxy;
pub mod cluster;
pub mod peer;
pub mod txn;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use odradek::cluster::Cluster;
use odradek::protocol::messages::create_topics_request::CreatableTopic;
use odradek::protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use odradek::protocol::messages::{CreateTopicsRequest, FetchRequest, TopicName};
use odradek::protocol::types::StrBytes;
use odradek::records::{Record, RecordBatches};
use odradek::{ClientConfig, ErrorCode};

/// Broker settings for KIP-848 groups that heartbeat every 500 ms (Kafka's floor is 5 s), as
/// the test command also starts Apache Kafka.
pub const KIP848_FAST: &[(&str, &str)] = &[
    ("group.consumer.heartbeat.interval.ms", "500"),
    ("group.consumer.min.heartbeat.interval.ms", "500"),
    ("group.consumer.session.timeout.ms", "6000"),
    ("group.consumer.min.session.timeout.ms", "6000"),
];

/// Where the suite's broker is.
#[derive(Debug)]
pub struct Target {
    /// `host:port` to bootstrap from.
    pub bootstrap: String,
    broker: Option<OwnedBroker>,
}

#[derive(Debug)]
struct OwnedBroker {
    child: Child,
    data_dir: PathBuf,
    port: u16,
    overrides: Vec<(String, String)>,
}

fn broker_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("ODRADEK_BROKER_BIN") {
        return PathBuf::from(p);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("debug/odradek-broker")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

/// With `ODRADEK_CLIENT_LOG` set, the client's debug log goes to stderr.
fn client_log_from_env() {
    if std::env::var_os("ODRADEK_CLIENT_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("odradek=debug"))
            .try_init();
    }
}

fn unique(tag: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn spawn_broker(data_dir: &std::path::Path, port: u16, overrides: &[(String, String)]) -> Child {
    let mut cmd = Command::new(broker_binary());
    cmd.arg("--override")
        .arg(format!("listeners=PLAINTEXT://127.0.0.1:{port}"))
        .arg("--override")
        .arg(format!("log.dirs={}", data_dir.display()));
    for (k, v) in overrides {
        cmd.arg("--override").arg(format!("{k}={v}"));
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(if std::env::var_os("ODRADEK_TEST_LOG").is_some() {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", broker_binary().display()));
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read listening line");
    assert!(
        line.starts_with("odradek-broker listening on"),
        "unexpected: {line:?}"
    );
    child
}

impl Target {
    /// The external broker if configured, else a fresh `odradek-broker` with `overrides`.
    pub fn start(overrides: &[(&str, &str)]) -> Target {
        client_log_from_env();
        if let Ok(b) = std::env::var("ODRADEK_TEST_BOOTSTRAP") {
            return Target {
                bootstrap: b,
                broker: None,
            };
        }
        let data_dir = std::env::temp_dir().join(unique("odradek-suite"));
        std::fs::create_dir_all(&data_dir).expect("temp dir");
        let port = free_port();
        let overrides: Vec<(String, String)> = overrides
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let child = spawn_broker(&data_dir, port, &overrides);
        Target {
            bootstrap: format!("127.0.0.1:{port}"),
            broker: Some(OwnedBroker {
                child,
                data_dir,
                port,
                overrides,
            }),
        }
    }

    /// A fresh `odradek-broker` whose advertised address is a [`Proxy`] in front of it, so every
    /// client connection passes through the proxy. `None` when an external broker is configured.
    pub async fn start_behind_proxy(overrides: &[(&str, &str)]) -> Option<(Target, Proxy)> {
        if std::env::var("ODRADEK_TEST_BOOTSTRAP").is_ok() {
            return None;
        }
        let port = free_port();
        let proxy = Proxy::start(format!("127.0.0.1:{port}")).await;
        let data_dir = std::env::temp_dir().join(unique("odradek-suite"));
        std::fs::create_dir_all(&data_dir).expect("temp dir");
        let mut all: Vec<(String, String)> = overrides
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        all.push((
            "advertised.listeners".into(),
            format!("PLAINTEXT://{}", proxy.addr),
        ));
        let child = spawn_broker(&data_dir, port, &all);
        let target = Target {
            bootstrap: proxy.addr.clone(),
            broker: Some(OwnedBroker {
                child,
                data_dir,
                port,
                overrides: all,
            }),
        };
        Some((target, proxy))
    }

    /// The process id of the suite's own `odradek-broker` (`None` against another broker).
    pub fn broker_pid(&self) -> Option<u32> {
        self.broker.as_ref().map(|b| b.child.id())
    }

    /// Whether the suite runs against its own `odradek-broker` (fault tests need that).
    pub fn is_own_broker(&self) -> bool {
        self.broker.is_some()
    }

    /// Kills the broker (SIGKILL) and starts it again on the same port and data.
    pub fn restart(&mut self) {
        let Some(b) = self.broker.as_mut() else {
            return;
        };
        let _ = b.child.kill();
        let _ = b.child.wait();
        b.child = spawn_broker(&b.data_dir, b.port, &b.overrides);
    }

    /// Client configuration for this target with extra properties.
    pub fn config(&self, extra: &[(&str, &str)]) -> ClientConfig {
        let mut entries = vec![("bootstrap.servers", self.bootstrap.as_str())];
        entries.extend_from_slice(extra);
        ClientConfig::from_map(entries).expect("valid test config")
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Some(b) = self.broker.as_mut() {
            let _ = b.child.kill();
            let _ = b.child.wait();
            let _ = std::fs::remove_dir_all(&b.data_dir);
        }
    }
}

/// A topic name unique to this test run.
pub fn topic_name(tag: &str) -> String {
    unique(&format!("suite-{tag}"))
}

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

/// Creates a topic through the admin API (TOPIC_ALREADY_EXISTS is fine).
pub async fn create_topic(cluster: &Cluster, topic: &str, partitions: i32) {
    let meta = cluster.refresh().await.expect("metadata");
    let node = *meta.brokers.keys().next().expect("a broker");
    let conn = cluster.connection(node).await.expect("connection");
    let req = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(name(topic))
            .with_num_partitions(partitions)
            .with_replication_factor(1)])
        .with_timeout_ms(30_000);
    let resp = conn.send(&req).await.expect("create topics");
    let code = ErrorCode::from_code(resp.topics[0].error_code);
    assert!(
        code.is_ok() || code == ErrorCode::TopicAlreadyExists,
        "create {topic}: {code}"
    );
}

/// Reads every record of one partition from offset 0 up to its high watermark (raw Fetch).
pub async fn read_partition(cluster: &Cluster, topic: &str, partition: i32) -> Vec<Record> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut out = Vec::new();
    let mut offset = 0i64;
    loop {
        let meta = cluster.refresh().await.expect("metadata");
        let leader = meta.leader(topic, partition).expect("leader");
        let conn = cluster.connection(leader).await.expect("connection");
        let req = FetchRequest::default()
            .with_max_wait_ms(100)
            .with_min_bytes(1)
            .with_max_bytes(16 << 20)
            .with_session_epoch(-1)
            .with_replica_id(odradek::protocol::messages::BrokerId(-1))
            .with_topics(vec![FetchTopic::default()
                .with_topic(name(topic))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(partition)
                    .with_fetch_offset(offset)
                    .with_partition_max_bytes(8 << 20)])]);
        let resp = conn.send(&req).await.expect("fetch");
        let p = &resp.responses[0].partitions[0];
        assert_eq!(p.error_code, 0, "fetch {topic}-{partition}");
        let data: Bytes = p.records.clone().unwrap_or_default();
        for batch in RecordBatches::new(data) {
            let batch = batch.expect("batch");
            batch.validate_crc().expect("crc");
            if batch.is_control() {
                offset = batch.next_offset();
                continue;
            }
            for r in batch.records().expect("records") {
                let r = r.expect("record");
                if r.offset >= offset {
                    offset = r.offset + 1;
                    out.push(r);
                }
            }
            offset = offset.max(batch.next_offset());
        }
        if offset >= p.high_watermark {
            return out;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "reading {topic}-{partition} timed out"
        );
    }
}

/// A TCP proxy on 127.0.0.1 that can cut every connection passing through it (fault tests).
#[derive(Debug)]
pub struct Proxy {
    /// `127.0.0.1:port` clients connect to.
    pub addr: String,
    cut: tokio::sync::watch::Sender<u64>,
    accepted: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Proxy {
    /// Forwards connections on a new port to `upstream`.
    pub async fn start(upstream: String) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind proxy");
        let addr = listener.local_addr().expect("addr").to_string();
        let (cut, cut_rx) = tokio::sync::watch::channel(0u64);
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let upstream = upstream.clone();
                let mut cut_rx = cut_rx.clone();
                // Only cuts after this connection was accepted apply to it.
                cut_rx.borrow_and_update();
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(&upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cut_rx.changed() => {}
                    }
                });
            }
        });
        Proxy {
            addr,
            cut,
            accepted,
        }
    }

    /// Drops every connection currently open through the proxy.
    pub fn cut_all(&self) {
        self.cut.send_modify(|n| *n += 1);
    }

    /// Client connections accepted so far (each cut one forces a reconnection).
    pub fn connections_accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Produces `n` records (values and keys `"{i}"` / `"k{i}"`) to `topic`, each acknowledged.
pub async fn produce_numbered(target: &Target, topic: &str, n: usize) {
    let p = odradek::Producer::new(target.config(&[("linger.ms", "2")])).expect("producer");
    let mut fs = Vec::new();
    for i in 0..n {
        fs.push(
            p.send(odradek::ProducerRecord::new(topic, format!("{i}")).key(format!("k{i}")))
                .await
                .expect("send"),
        );
    }
    for f in fs {
        f.await.expect("delivered");
    }
    p.close().await;
}

/// Polls every consumer in turn until `want` records arrived (or `secs` passed); returns them.
pub async fn drain(
    consumers: &[&odradek::Consumer],
    want: usize,
    secs: u64,
) -> Vec<odradek::ConsumerRecord> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    let mut got = Vec::new();
    while got.len() < want && tokio::time::Instant::now() < deadline {
        for c in consumers {
            got.extend(c.poll(Duration::from_millis(50)).await.expect("poll"));
        }
    }
    got
}
