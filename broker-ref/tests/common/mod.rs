//! Test harness: starts the real `odradek-broker` binary on an ephemeral port with a temporary
//! data directory, and talks to it with a small blocking client built on `odradek::protocol`.

#![allow(dead_code, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, HeaderVersion, Request, StrBytes};
use odradek::protocol::{decode_response, encode_request};

pub mod cluster;
pub mod fidelity;

/// A broker process.
pub struct BrokerProcess {
    pub child: Child,
    pub addr: String,
    pub data_dir: PathBuf,
}

/// A `StrBytes` of `s`.
pub fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// Waits up to 15 s for `ok`, failing the test with `what`.
pub fn eventually(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while !ok() {
        assert!(std::time::Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A self-signed CA made at test time: its PEM and the issuer to sign with.
pub fn test_ca(name: &str) -> (String, rcgen::Issuer<'static, rcgen::KeyPair>) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    p.distinguished_name.push(rcgen::DnType::CommonName, name);
    p.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    let cert = p.self_signed(&key).unwrap();
    (cert.pem(), rcgen::Issuer::new(p, key))
}

/// `n` distinct free loopback ports for a broker to bind later (a cluster's controller ports).
/// They come from below the kernel's ephemeral range when it leaves room, so a port handed out
/// here cannot be taken meanwhile by another test's `:0` bind (the race that made a cluster node
/// exit at startup, now and then, when tests ran in parallel); each is checked bindable, and a
/// process never hands out one port twice.
pub fn free_ports(n: usize) -> Vec<u16> {
    use std::sync::Mutex;
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let ephemeral_start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(0);
    if ephemeral_start < 12_000 {
        let listeners: Vec<std::net::TcpListener> = (0..n)
            .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
            .collect();
        return listeners
            .iter()
            .map(|l| l.local_addr().unwrap().port())
            .collect();
    }
    let (low, span) = (10_000u32, u32::from(ephemeral_start) - 10_000);
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos())
        ^ std::process::id().wrapping_mul(2_654_435_761);
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    let mut ports = Vec::with_capacity(n);
    while ports.len() < n {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let port = (low + (seed >> 8) % span) as u16;
        if !given.contains(&port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.push(port);
            ports.push(port);
        }
    }
    ports
}

/// A fresh temporary directory (removed by the OS's tmp cleaning; tests use unique names).
pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "odradek-test-{tag}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

impl BrokerProcess {
    /// Starts a broker on 127.0.0.1:0 with its data in `data_dir` and extra overrides.
    pub fn start(data_dir: &Path, overrides: &[(&str, &str)]) -> BrokerProcess {
        Self::spawn(
            Command::new(env!("CARGO_BIN_EXE_odradek-broker")),
            data_dir,
            overrides,
        )
    }

    /// [`BrokerProcess::start`] under `ulimit -n open_files` (hard and soft: the broker raises
    /// its soft limit to the hard one).
    #[allow(dead_code)] // not every test binary limits descriptors
    pub fn start_with_open_files(
        data_dir: &Path,
        overrides: &[(&str, &str)],
        open_files: u32,
    ) -> BrokerProcess {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("ulimit -n {open_files} && exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_odradek-broker"));
        Self::spawn(cmd, data_dir, overrides)
    }

    fn spawn(mut cmd: Command, data_dir: &Path, overrides: &[(&str, &str)]) -> BrokerProcess {
        cmd.arg("--override")
            .arg("listeners=PLAINTEXT://127.0.0.1:0")
            .arg("--override")
            .arg(format!("log.dirs={}", data_dir.display()));
        for (k, v) in overrides {
            cmd.arg("--override").arg(format!("{k}={v}"));
        }
        // The log goes beside the data directory (tests read it, e.g. to check that no secret
        // is printed), or to the terminal with ODRADEK_TEST_LOG.
        let stderr = if std::env::var_os("ODRADEK_TEST_LOG").is_some() {
            Stdio::inherit()
        } else {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(Self::log_path(data_dir))
                .map_or_else(|_| Stdio::null(), Stdio::from)
        };
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn broker");
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let addr = line
            .trim()
            .strip_prefix("odradek-broker listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        BrokerProcess {
            child,
            addr,
            data_dir: data_dir.to_path_buf(),
        }
    }

    /// Where the broker on `data_dir` logs (every start appends).
    pub fn log_path(data_dir: &Path) -> PathBuf {
        data_dir.with_extension("stderr.log")
    }

    /// SIGKILL, no chance to flush.
    pub fn kill9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM and wait for a clean exit.
    pub fn stop(mut self) {
        unsafe_kill(self.child.id() as i32, 15);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "broker exited with {status}");
    }

    pub fn client(&self) -> Client {
        Client::connect(&self.addr)
    }
}

fn unsafe_kill(pid: i32, signal: i32) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

impl Drop for BrokerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A blocking request/response client.
pub struct Client {
    stream: TcpStream,
    correlation: i32,
}

impl Client {
    pub fn connect(addr: &str) -> Client {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Client {
            stream,
            correlation: 0,
        }
    }

    /// Sends raw bytes (for bad-input tests).
    pub fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Reads one response frame body; `Err` when the broker closed the connection.
    pub fn read_frame(&mut self) -> std::io::Result<Bytes> {
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size)?;
        let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
        self.stream.read_exact(&mut body)?;
        Ok(Bytes::from(body))
    }

    /// Sends one request at `version` without waiting.
    pub fn send<R: Request>(&mut self, body: &R, version: i16) -> i32 {
        self.try_send(body, version).unwrap()
    }

    /// Like `send`, reporting a closed connection instead of panicking.
    pub fn try_send<R: Request>(&mut self, body: &R, version: i16) -> std::io::Result<i32> {
        self.correlation += 1;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation)
            .with_client_id(Some(StrBytes::from_static_str("odradek-it")));
        let frame = encode_request(&header, body).unwrap();
        let mut out = (frame.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(&frame);
        self.stream.write_all(&out)?;
        Ok(self.correlation)
    }

    /// Reads the response to a request sent with `send`.
    pub fn receive<R: Decodable + HeaderVersion>(&mut self, version: i16) -> (ResponseHeader, R) {
        let frame = self.read_frame().unwrap();
        decode_response::<R>(frame, version).unwrap()
    }

    /// Sends a request and waits for its response.
    pub fn call<R: Request>(&mut self, body: &R, version: i16) -> R::Response {
        let id = self.send(body, version);
        let (header, response) = self.receive::<R::Response>(version);
        assert_eq!(header.correlation_id, id);
        response
    }
}

/// A topic name as the protocol types carry it.
pub fn topic_name(name: &str) -> kafka_protocol::messages::TopicName {
    kafka_protocol::messages::TopicName(StrBytes::from_string(name.to_string()))
}

/// Creates `topic` with `partitions` partitions and topic configs; returns the topic's error
/// code and message.
pub fn create_topic_with(
    client: &mut Client,
    topic: &str,
    partitions: i32,
    configs: &[(&str, &str)],
) -> (i16, Option<String>) {
    use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
    let req = kafka_protocol::messages::CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(topic_name(topic))
            .with_num_partitions(partitions)
            .with_replication_factor(1)
            .with_configs(
                configs
                    .iter()
                    .map(|(k, v)| {
                        CreatableTopicConfig::default()
                            .with_name(StrBytes::from_string(k.to_string()))
                            .with_value(Some(StrBytes::from_string(v.to_string())))
                    })
                    .collect(),
            )])
        .with_timeout_ms(30_000);
    let resp = client.call(&req, 7);
    let t = &resp.topics[0];
    (
        t.error_code,
        t.error_message.as_ref().map(|m| m.to_string()),
    )
}

/// Creates `topic` (asserting success).
pub fn create_topic(client: &mut Client, topic: &str, partitions: i32, configs: &[(&str, &str)]) {
    let (code, message) = create_topic_with(client, topic, partitions, configs);
    assert_eq!(code, 0, "create {topic}: {message:?}");
}

/// A Produce of `records` to partition 0 of `topic`.
pub fn produce_request(
    topic: &str,
    acks: i16,
    records: Bytes,
) -> kafka_protocol::messages::ProduceRequest {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    kafka_protocol::messages::ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(5000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic_name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(records))])])
}

/// One uncompressed batch holding one record with `value`.
pub fn one_record(value: &[u8]) -> Bytes {
    let mut b = odradek::records::BatchBuilder::new(odradek::records::Compression::None);
    b.append(0, None, Some(value), &[]).unwrap();
    b.build().unwrap()
}

/// A sessionless Fetch of partition 0 of `topic` from offset 0.
pub fn fetch_request(
    topic: &str,
    min_bytes: i32,
    max_wait_ms: i32,
    max_bytes: i32,
) -> kafka_protocol::messages::FetchRequest {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    kafka_protocol::messages::FetchRequest::default()
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(min_bytes)
        .with_max_bytes(max_bytes)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(topic_name(topic))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(max_bytes)])])
}

/// Every stored record of partition 0 of `topic` as `(offset, value)`, in offset order, read
/// from offset 0 up to the high watermark; every served batch must parse and pass its CRC.
pub fn read_partition(client: &mut Client, topic: &str) -> Vec<(i64, Bytes)> {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let req = kafka_protocol::messages::FetchRequest::default()
            .with_max_wait_ms(0)
            .with_min_bytes(1)
            .with_max_bytes(8 << 20)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default()
                .with_topic(topic_name(topic))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(0)
                    .with_fetch_offset(offset)
                    .with_partition_max_bytes(4 << 20)])]);
        let resp = client.call(&req, 12);
        let p = &resp.responses[0].partitions[0];
        assert_eq!(p.error_code, 0);
        let before = out.len();
        for batch in odradek::records::RecordBatches::new(p.records.clone().unwrap_or_default()) {
            let batch = batch.expect("a served batch is well-formed");
            batch
                .validate_crc()
                .expect("a served batch has a valid CRC");
            for r in batch.records().unwrap() {
                let r = r.unwrap();
                offset = r.offset + 1;
                out.push((r.offset, r.value.unwrap_or_default()));
            }
        }
        if out.len() == before || offset >= p.high_watermark {
            return out;
        }
    }
}

#[cfg(target_os = "linux")]
/// User plus system CPU time of process `pid`, from /proc.
pub fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf only reads a system constant.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_millis(ticks * 1000 / per_second)
}
