//! A failing disk, against an in-process broker with injected fsync failures
//! (`odradek_broker::log::faults`): the first failed fsync takes the log directory offline,
//! every later append and read is refused with KAFKA_STORAGE_ERROR (a producer's retry is never
//! written twice), and after a restart the retried batch is in the log exactly once.

#![allow(clippy::unwrap_used)]

mod common;

use bytes::Bytes;
use common::{temp_dir, Client};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use odradek::records::{BatchBuilder, Compression, RecordBatches};
use odradek::ErrorCode;
use odradek_broker::config::BrokerConfig;
use odradek_broker::log::faults;
use odradek_broker::server::{self, RunningBroker};

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

fn start(runtime: &tokio::runtime::Runtime, data: &std::path::Path) -> RunningBroker {
    let config = BrokerConfig::from_entries([
        ("listeners", "PLAINTEXT://127.0.0.1:0".to_string()),
        ("log.dirs", data.display().to_string()),
    ])
    .unwrap();
    runtime.block_on(server::start(config)).unwrap()
}

fn create_topic(client: &mut Client, topic: &str) {
    let req = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(sb(topic)))
            .with_num_partitions(1)
            .with_replication_factor(1)
            // Every append is fsynced: the fault strikes on the produce path.
            .with_configs(vec![CreatableTopicConfig::default()
                .with_name(sb("flush.messages"))
                .with_value(Some(sb("1")))])])
        .with_timeout_ms(5000);
    assert_eq!(client.call(&req, 7).topics[0].error_code, 0);
}

/// Produces one record `value` as idempotent producer 7, epoch 0, sequence `seq`.
fn produce(client: &mut Client, topic: &str, seq: i32, value: &str) -> ErrorCode {
    let mut batch = BatchBuilder::new(Compression::None).producer(7, 0, seq);
    batch.append(0, None, Some(value.as_bytes()), &[]).unwrap();
    let req = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(sb(topic)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(batch.build().unwrap()))])]);
    let resp = client.call(&req, 9);
    ErrorCode::from_code(resp.responses[0].partition_responses[0].error_code)
}

/// Fetches partition 0 of `topic` from offset 0: the error and the values read.
fn fetch(client: &mut Client, topic: &str) -> (ErrorCode, Vec<String>) {
    let req = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(sb(topic)))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])]);
    let resp = client.call(&req, 12);
    let p = &resp.responses[0].partitions[0];
    let values = RecordBatches::new(p.records.clone().unwrap_or_default())
        .flat_map(|b| {
            b.unwrap()
                .records()
                .unwrap()
                .map(Result::unwrap)
                .collect::<Vec<_>>()
        })
        .map(|r| String::from_utf8_lossy(&r.value.unwrap_or_else(Bytes::new)).into_owned())
        .collect();
    (ErrorCode::from_code(p.error_code), values)
}

#[test]
fn a_failed_fsync_takes_the_directory_offline_and_nothing_is_written_twice() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let data = temp_dir("fsync-fails").join("data");
    let running = start(&runtime, &data);
    let mut c = Client::connect(&running.local_addr.to_string());
    create_topic(&mut c, "durable");
    create_topic(&mut c, "other");
    assert_eq!(produce(&mut c, "durable", 0, "zero"), ErrorCode::NoError);

    faults::fail_fsyncs_under(&data);
    // The write of "one" succeeds, its fsync fails: refused, and so is the retry, which
    // would otherwise be appended after the first copy (the producer state never saw it).
    assert_eq!(
        produce(&mut c, "durable", 1, "one"),
        ErrorCode::KafkaStorageError
    );
    assert_eq!(
        produce(&mut c, "durable", 1, "one"),
        ErrorCode::KafkaStorageError
    );
    // The whole directory is offline: other partitions too, and reads.
    assert_eq!(
        produce(&mut c, "other", 0, "x"),
        ErrorCode::KafkaStorageError
    );
    assert_eq!(fetch(&mut c, "durable").0, ErrorCode::KafkaStorageError);
    assert!(running.broker.topics.dir_health().failure().is_some());
    faults::stop_failing_fsyncs_under(&data);
    drop(c);
    // A shutdown cannot flush a failed directory; the restart recovers what is on disk.
    let _ = runtime.block_on(running.shutdown());

    let running = start(&runtime, &data);
    assert!(running.broker.topics.dir_health().failure().is_none());
    let mut c = Client::connect(&running.local_addr.to_string());
    // The producer retries once more after the restart: a duplicate if "one" survived,
    // appended if it did not; either way the log holds it exactly once.
    assert_eq!(produce(&mut c, "durable", 1, "one"), ErrorCode::NoError);
    let (code, values) = fetch(&mut c, "durable");
    assert_eq!(code, ErrorCode::NoError);
    assert_eq!(values, ["zero", "one"]);
    runtime.block_on(running.shutdown()).unwrap();
}
