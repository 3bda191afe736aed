//! Connection limits and descriptor exhaustion, against the real broker binary: many idle
//! connections from one address are cut to `max.connections.per.ip` without blocking a client
//! elsewhere, `max.connections` bounds the broker, and a broker out of file descriptors waits
//! in its accept loop instead of spinning a core and flooding its log.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

mod common;

use std::io::ErrorKind;
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{cpu_time, temp_dir, BrokerProcess, Client};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiVersionsRequest, CreateTopicsRequest, FetchRequest, MetadataRequest, ProduceRequest,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use odradek::records::{BatchBuilder, Compression};

/// Raises this test process's open files limit so it can hold thousands of connections.
fn raise_open_files_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed to them.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_cur = limit.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
    }
}

/// Opens `n` TCP connections to `to` from the loopback address `from` (bound before connecting).
fn connect_from(from: &str, to: SocketAddr, n: usize) -> Vec<TcpStream> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut streams = Vec::with_capacity(n);
        for _ in 0..n {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
            let stream = socket.connect(to).await.unwrap();
            streams.push(stream.into_std().unwrap());
        }
        streams
    })
}

/// How many of `streams` the broker has not closed, once it has had `settle` to close them.
fn still_open(streams: &[TcpStream], settle: Duration) -> usize {
    std::thread::sleep(settle);
    let mut buf = [0u8; 1];
    streams
        .iter()
        .filter(|s| {
            s.set_nonblocking(true).unwrap();
            match s.peek(&mut buf) {
                Ok(0) => false,
                Ok(_) => true,
                Err(e) if e.kind() == ErrorKind::WouldBlock => true,
                Err(_) => false,
            }
        })
        .count()
}

/// A well-behaved client's round trips: ApiVersions and Metadata on a new connection.
fn round_trips(addr: &str) -> Duration {
    let started = Instant::now();
    let mut client = Client::connect(addr);
    assert_eq!(client.call(&ApiVersionsRequest::default(), 3).error_code, 0);
    let metadata = client.call(
        &MetadataRequest::default().with_topics(Some(Vec::new())),
        12,
    );
    assert_eq!(metadata.brokers.len(), 1);
    started.elapsed()
}

#[test]
fn idle_connections_beyond_the_limits_are_refused_without_blocking_other_clients() {
    raise_open_files_limit();
    let dir = temp_dir("conn-limits");
    let broker = BrokerProcess::start(
        &dir,
        &[
            ("max.connections", "1000"),
            ("max.connections.per.ip.overrides", "127.0.0.2:100"),
        ],
    );
    let addr: SocketAddr = broker.addr.parse().unwrap();

    // 2,000 idle connections from one address: the broker keeps 100 and closes the rest.
    let flood = connect_from("127.0.0.2", addr, 2_000);
    assert_eq!(still_open(&flood, Duration::from_secs(2)), 100);
    // A client on another address is served as usual meanwhile.
    let took = round_trips(&broker.addr);
    assert!(took < Duration::from_secs(10), "round trips took {took:?}");

    // 2,000 more from a third address (no per-address limit): the broker-wide limit of 1,000
    // keeps 900 of them (100 slots are held from 127.0.0.2).
    let second = connect_from("127.0.0.3", addr, 2_000);
    assert_eq!(still_open(&second, Duration::from_secs(2)), 900);
    // At the broker-wide limit a new connection is closed at once...
    let mut refused = TcpStream::connect(addr).unwrap();
    refused
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = [0u8; 1];
    assert_eq!(
        std::io::Read::read(&mut refused, &mut buf).unwrap_or(0),
        0,
        "a connection beyond max.connections was kept"
    );
    // ...and once the idle connections go, their slots come back.
    drop(second);
    drop(flood);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut client = Client::connect(&broker.addr);
        if client
            .try_send(&ApiVersionsRequest::default(), 3)
            .is_ok_and(|_| client.read_frame().is_ok())
        {
            break;
        }
        assert!(Instant::now() < deadline, "slots never came back");
        std::thread::sleep(Duration::from_millis(100));
    }
    broker.stop();
}

#[test]
fn a_broker_out_of_file_descriptors_waits_instead_of_spinning() {
    raise_open_files_limit();
    let dir = temp_dir("emfile");
    let log = dir.join("broker.log");
    // The broker raises its soft limit to the hard one; `ulimit -n` lowers both.
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 64 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_odradek-broker"))
        .args(["--override", "listeners=PLAINTEXT://127.0.0.1:0"])
        .arg("--override")
        .arg(format!("log.dirs={}", dir.join("data").display()))
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let addr: SocketAddr = line
        .trim()
        .strip_prefix("odradek-broker listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .parse()
        .unwrap();

    // More connections than the broker has descriptors (it serves ~50 with 64): accept fails
    // with EMFILE while the rest wait in the listen backlog (128 deep).
    let held = connect_from("127.0.0.1", addr, 150);
    std::thread::sleep(Duration::from_millis(500));
    let before = cpu_time(child.id());
    std::thread::sleep(Duration::from_secs(3));
    let spent = cpu_time(child.id()) - before;
    // Spinning on accept costs a whole core (3 s); waiting costs next to nothing.
    assert!(
        spent < Duration::from_millis(750),
        "the broker used {spent:?} of CPU in 3 s"
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("accept failed"), "{logged}");
    assert!(
        logged.len() < 64 * 1024,
        "{} bytes of log in 3.5 s",
        logged.len()
    );

    // Descriptors back: the broker serves again.
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let served = TcpStream::connect(addr).ok().is_some_and(|_| {
            let mut client = Client::connect(&addr.to_string());
            client
                .try_send(&ApiVersionsRequest::default(), 3)
                .is_ok_and(|_| client.read_frame().is_ok())
        });
        if served {
            break;
        }
        assert!(Instant::now() < deadline, "the broker did not recover");
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

fn topic_name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

/// Writes ~1 MiB of records (just under max.message.bytes) to partition 0 of a new topic `topic`.
fn fill_topic(client: &mut Client, topic: &str) {
    let create = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(topic_name(topic))
            .with_num_partitions(1)
            .with_replication_factor(1)])
        .with_timeout_ms(5000);
    assert_eq!(client.call(&create, 7).topics[0].error_code, 0);
    let mut batch = BatchBuilder::new(Compression::None);
    for _ in 0..15 {
        batch.append(0, None, Some(&[7u8; 64 * 1024]), &[]).unwrap();
    }
    let produce = ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic_name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(batch.build().unwrap()))])]);
    let resp = client.call(&produce, 9);
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
}

/// One Fetch of everything in partition 0 of `topic` (a ~1 MiB response), as a frame.
fn fetch_frame(topic: &str, correlation_id: i32) -> Vec<u8> {
    use kafka_protocol::messages::RequestHeader;
    let fetch = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(8 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(topic_name(topic))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(4 << 20)])]);
    let header = RequestHeader::default()
        .with_request_api_key(1)
        .with_request_api_version(12)
        .with_correlation_id(correlation_id);
    let body = odradek::protocol::encode_request(&header, &fetch).unwrap();
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

#[test]
fn a_client_that_never_reads_its_responses_is_closed_and_frees_its_slot() {
    let dir = temp_dir("never-reads");
    let broker = BrokerProcess::start(
        &dir,
        &[
            ("connections.max.idle.ms", "2000"),
            ("max.connections", "2"),
        ],
    );
    let mut setup = broker.client();
    fill_topic(&mut setup, "big");
    drop(setup);

    // Fetch after Fetch, never reading: the socket buffers fill, the broker's write stalls.
    let mut stalled = TcpStream::connect(&broker.addr).unwrap();
    stalled
        .set_write_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let started = Instant::now();
    let mut correlation = 0;
    let closed_after = loop {
        correlation += 1;
        match std::io::Write::write_all(&mut stalled, &fetch_frame("big", correlation)) {
            Ok(()) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break started.elapsed(),
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the broker kept a client that never reads"
        );
    };
    // Closed by the write deadline, not before (the first responses were written at once).
    assert!(
        closed_after >= Duration::from_secs(2),
        "closed after {closed_after:?}"
    );

    // Its slot is free again: with max.connections=2, two new clients are served at once.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut a = Client::connect(&broker.addr);
        let mut b = Client::connect(&broker.addr);
        let served = |c: &mut Client| {
            c.try_send(&ApiVersionsRequest::default(), 3)
                .is_ok_and(|_| c.read_frame().is_ok())
        };
        if served(&mut a) && served(&mut b) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the stalled client's slot was not freed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    broker.stop();
}
