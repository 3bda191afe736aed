//! Topic creation within the broker's file descriptors (issue 19): a create the descriptors
//! cannot hold is refused up front with POLICY_VIOLATION naming the limit and leaves nothing on
//! disk, smaller creates keep working, and an idle partition holds one descriptor, not three.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

mod common;

use common::{create_topic, create_topic_with, temp_dir, BrokerProcess};
use odradek::ErrorCode;

fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// Partition directories of `topic` under the broker's data directory.
fn partition_dirs(data: &std::path::Path, topic: &str) -> usize {
    std::fs::read_dir(data)
        .unwrap()
        .filter(|e| {
            let name = e
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .to_string();
            name.rsplit_once('-')
                .is_some_and(|(t, i)| t == topic && i.parse::<i32>().is_ok())
        })
        .count()
}

#[test]
fn a_create_beyond_the_descriptors_is_refused_and_leaves_nothing_behind() {
    let dir = temp_dir("create-fds");
    let broker = BrokerProcess::start_with_open_files(&dir, &[], 256);
    let mut client = broker.client();
    let (code, message) = create_topic_with(&mut client, "toomany", 1000, &[]);
    assert_eq!(code, ErrorCode::PolicyViolation.code());
    let message = message.unwrap_or_default();
    assert!(
        message.contains("open files limit 256"),
        "the refusal names the limit: {message}"
    );
    assert_eq!(partition_dirs(&dir, "toomany"), 0, "nothing left on disk");
    // What fits is still created.
    create_topic(&mut client, "fits", 50, &[]);
    assert_eq!(partition_dirs(&dir, "fits"), 50);
    broker.stop();
}

#[test]
fn an_idle_partition_holds_one_descriptor() {
    let dir = temp_dir("fds-per-partition");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut client = broker.client();
    let pid = broker.child.id();
    let before = open_descriptors(pid);
    create_topic(&mut client, "many", 1000, &[]);
    let held = open_descriptors(pid) - before;
    assert!(
        (1000..=1020).contains(&held),
        "1,000 idle partitions hold {held} descriptors"
    );
    broker.stop();
}

#[test]
fn a_large_create_does_not_stall_other_clients() {
    use common::{one_record, produce_request};
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse, TopicName};
    use kafka_protocol::protocol::StrBytes;
    use std::time::Instant;

    let dir = temp_dir("large-create");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut other = broker.client();
    create_topic(&mut other, "busy", 1, &[]);
    // 4,000 partitions: seconds of directory and file creation.
    let mut creator = broker.client();
    let started = Instant::now();
    let req = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("huge")))
            .with_num_partitions(4000)
            .with_replication_factor(1)])
        .with_timeout_ms(60_000);
    let id = creator.send(&req, 7);
    // The create's answer is awaited on its own thread.
    let waiter = std::thread::spawn(move || {
        let (header, created) = creator.receive::<CreateTopicsResponse>(7);
        (header.correlation_id, created.topics[0].error_code)
    });
    // Once the create is under way (its first partition directories exist), another client
    // produces to an existing topic.
    while partition_dirs(&dir, "huge") < 10 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the create never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let resp = other.call(&produce_request("busy", 1, one_record(b"meanwhile")), 9);
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
    // Served while the create goes on: not all of its partitions exist yet.
    let made_by_then = partition_dirs(&dir, "huge");
    let (correlation, code) = waiter.join().unwrap();
    assert_eq!((correlation, code), (id, 0));
    assert!(
        made_by_then < 4000,
        "the produce waited for the whole create ({made_by_then} partitions made by then)"
    );
    assert_eq!(partition_dirs(&dir, "huge"), 4000);
    broker.stop();
    // 4,000 preallocated segments and indexes: ~80 MB a run left behind otherwise.
    let _ = std::fs::remove_dir_all(&dir);
}
