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
