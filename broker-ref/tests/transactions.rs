//! Transactions against a real broker process: the coordinator APIs (InitProducerId,
//! AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn, Describe/ListTransactions,
//! DescribeProducers), markers, the last stable offset and read_committed fetches, fencing,
//! timeouts, and recovery after a restart.

// Test helpers fail the test by unwrapping; a panic is the assertion.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{temp_dir, BrokerProcess, Client};
use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use odradek::records::{BatchBuilder, Compression, ControlRecordType, EndTxnMarker, RecordBatches};
use odradek::ErrorCode;

const DEADLINE: Duration = Duration::from_secs(20);

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn txn(s: &str) -> TransactionalId {
    TransactionalId(StrBytes::from_string(s.to_string()))
}

fn code(c: i16) -> ErrorCode {
    ErrorCode::from_code(c)
}

fn create_topic(client: &mut Client, topic: &str, partitions: i32) {
    let req = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(name(topic))
            .with_num_partitions(partitions)
            .with_replication_factor(1)])
        .with_timeout_ms(5000);
    assert_eq!(client.call(&req, 7).topics[0].error_code, 0);
}

/// A transactional producer session, speaking the raw protocol.
struct Session {
    txn_id: String,
    pid: i64,
    epoch: i16,
    seq: i32,
}

fn init(client: &mut Client, txn_id: &str, timeout_ms: i32) -> Result<Session, ErrorCode> {
    let req = InitProducerIdRequest::default()
        .with_transactional_id(Some(txn(txn_id)))
        .with_transaction_timeout_ms(timeout_ms)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    let resp = client.call(&req, 4);
    if resp.error_code != 0 {
        return Err(code(resp.error_code));
    }
    Ok(Session {
        txn_id: txn_id.to_string(),
        pid: resp.producer_id.0,
        epoch: resp.producer_epoch,
        seq: 0,
    })
}

fn add_partitions(client: &mut Client, s: &Session, topic: &str, partitions: &[i32]) -> ErrorCode {
    let req = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(txn(&s.txn_id))
        .with_v3_and_below_producer_id(ProducerId(s.pid))
        .with_v3_and_below_producer_epoch(s.epoch)
        .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
            .with_name(name(topic))
            .with_partitions(partitions.to_vec())]);
    let resp = client.call(&req, 3);
    let codes: Vec<i16> = resp.results_by_topic_v3_and_below[0]
        .results_by_partition
        .iter()
        .map(|r| r.partition_error_code)
        .collect();
    assert!(codes.iter().all(|c| *c == codes[0]), "{codes:?}");
    code(codes[0])
}

fn txn_batch(s: &mut Session, values: &[&str]) -> Bytes {
    let mut b = BatchBuilder::new(Compression::None)
        .producer(s.pid, s.epoch, s.seq)
        .transactional(true);
    for v in values {
        b.append(1_700_000_000_000, None, Some(v.as_bytes()), &[])
            .unwrap();
    }
    s.seq += values.len() as i32;
    b.build().unwrap()
}

fn produce(
    client: &mut Client,
    s: &mut Session,
    topic: &str,
    partition: i32,
    values: &[&str],
) -> (ErrorCode, i64) {
    let records = txn_batch(s, values);
    let req = ProduceRequest::default()
        .with_transactional_id(Some(txn(&s.txn_id)))
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(records))])]);
    let resp = client.call(&req, 9);
    let p = &resp.responses[0].partition_responses[0];
    (code(p.error_code), p.base_offset)
}

fn end_txn(client: &mut Client, s: &Session, commit: bool, version: i16) -> ErrorCode {
    let req = EndTxnRequest::default()
        .with_transactional_id(txn(&s.txn_id))
        .with_producer_id(ProducerId(s.pid))
        .with_producer_epoch(s.epoch)
        .with_committed(commit);
    code(client.call(&req, version).error_code)
}

fn fetch(
    client: &mut Client,
    topic: &str,
    partition: i32,
    offset: i64,
    committed: bool,
) -> fetch_response::PartitionData {
    let req = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(0)
        .with_max_bytes(10 << 20)
        .with_isolation_level(i8::from(committed))
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name(topic))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(partition)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(10 << 20)])]);
    client.call(&req, 12).responses[0].partitions[0].clone()
}

/// (offset, value or marker) of every record fetched.
#[derive(Debug, PartialEq, Eq)]
enum Item {
    Data(i64, String),
    Marker(i64, ControlRecordType, i16),
}

fn items(data: Option<Bytes>) -> Vec<Item> {
    let mut out = Vec::new();
    for batch in RecordBatches::new(data.unwrap_or_default()) {
        let batch = batch.unwrap();
        batch.validate_crc().unwrap();
        for r in batch.records().unwrap() {
            let r = r.unwrap();
            if batch.is_control() {
                let m = EndTxnMarker::from_record(&r).unwrap();
                out.push(Item::Marker(r.offset, m.kind, batch.producer_epoch()));
            } else {
                let v = String::from_utf8(r.value.unwrap().to_vec()).unwrap();
                out.push(Item::Data(r.offset, v));
            }
        }
    }
    out
}

fn aborted(pd: &fetch_response::PartitionData) -> Vec<(i64, i64)> {
    pd.aborted_transactions
        .as_ref()
        .unwrap()
        .iter()
        .map(|a| (a.producer_id.0, a.first_offset))
        .collect()
}

fn latest_committed_offset(client: &mut Client, topic: &str) -> i64 {
    let req = ListOffsetsRequest::default()
        .with_isolation_level(1)
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_timestamp(-1)])]);
    client.call(&req, 7).topics[0].partitions[0].offset
}

fn describe_txn(
    client: &mut Client,
    txn_id: &str,
) -> describe_transactions_response::TransactionState {
    let req = DescribeTransactionsRequest::default().with_transactional_ids(vec![txn(txn_id)]);
    client.call(&req, 0).transaction_states[0].clone()
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn commit_and_abort_write_markers_and_bound_read_committed_fetches() {
    let dir = temp_dir("txn-basic");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    create_topic(&mut c, "tx", 2);

    let find = FindCoordinatorRequest::default()
        .with_key_type(1)
        .with_coordinator_keys(vec![StrBytes::from_static_str("t1")]);
    assert_eq!(c.call(&find, 4).coordinators[0].error_code, 0);

    let mut s = init(&mut c, "t1", 60_000).unwrap();
    assert_eq!(s.epoch, 0);
    // Producing before the partition is in the transaction is refused (KIP-890 verification).
    assert_eq!(
        produce(&mut c, &mut s, "tx", 0, &["early"]).0,
        ErrorCode::InvalidTxnState
    );
    s.seq = 0;
    assert_eq!(
        add_partitions(&mut c, &s, "tx", &[0, 1]),
        ErrorCode::NoError
    );
    assert_eq!(
        add_partitions(&mut c, &s, "nope", &[0]),
        ErrorCode::UnknownTopicOrPartition
    );
    assert_eq!(
        produce(&mut c, &mut s, "tx", 0, &["c0", "c1"]).0,
        ErrorCode::NoError
    );
    let mut s1 = Session {
        seq: 0,
        txn_id: s.txn_id.clone(),
        ..s
    };
    assert_eq!(
        produce(&mut c, &mut s1, "tx", 1, &["p1"]).0,
        ErrorCode::NoError
    );

    // Open: read_committed sees nothing, the LSO stays at the transaction's first offset.
    let open = fetch(&mut c, "tx", 0, 0, true);
    assert_eq!((open.high_watermark, open.last_stable_offset), (2, 0));
    assert!(items(open.records).is_empty());
    assert_eq!(latest_committed_offset(&mut c, "tx"), 0);
    let d = describe_txn(&mut c, "t1");
    assert_eq!(d.transaction_state.as_str(), "Ongoing");
    assert_eq!(d.topics[0].partitions, vec![0, 1]);

    assert_eq!(end_txn(&mut c, &s, true, 3), ErrorCode::NoError);
    assert_eq!(
        end_txn(&mut c, &s, true, 3),
        ErrorCode::NoError,
        "a retried commit"
    );
    assert_eq!(end_txn(&mut c, &s, false, 3), ErrorCode::InvalidTxnState);
    let done = fetch(&mut c, "tx", 0, 0, true);
    assert_eq!((done.high_watermark, done.last_stable_offset), (3, 3));
    assert_eq!(
        items(done.records.clone()),
        vec![
            Item::Data(0, "c0".into()),
            Item::Data(1, "c1".into()),
            Item::Marker(2, ControlRecordType::Commit, 0)
        ]
    );
    assert_eq!(aborted(&done), vec![]);
    assert_eq!(
        items(fetch(&mut c, "tx", 1, 0, true).records).last(),
        Some(&Item::Marker(1, ControlRecordType::Commit, 0))
    );

    // Abort: the records stay in the log, read_committed fetches name the aborted transaction.
    assert_eq!(add_partitions(&mut c, &s, "tx", &[0]), ErrorCode::NoError);
    assert_eq!(
        produce(&mut c, &mut s, "tx", 0, &["a0", "a1"]).0,
        ErrorCode::NoError
    );
    assert_eq!(end_txn(&mut c, &s, false, 3), ErrorCode::NoError);
    let after = fetch(&mut c, "tx", 0, 3, true);
    assert_eq!(after.last_stable_offset, 6);
    assert_eq!(aborted(&after), vec![(s.pid, 3)]);
    assert_eq!(
        items(after.records.clone()).last(),
        Some(&Item::Marker(5, ControlRecordType::Abort, 0))
    );
    assert_eq!(fetch(&mut c, "tx", 0, 3, false).aborted_transactions, None);
    assert_eq!(latest_committed_offset(&mut c, "tx"), 6);

    // DescribeProducers, ListTransactions.
    let req = DescribeProducersRequest::default().with_topics(vec![TopicRequest::default()
        .with_name(name("tx"))
        .with_partition_indexes(vec![0, 7])]);
    let resp = c.call(&req, 0);
    let p0 = &resp.topics[0].partitions[0];
    assert_eq!(p0.active_producers.len(), 1);
    let state = &p0.active_producers[0];
    assert_eq!(
        (
            state.producer_id.0,
            state.last_sequence,
            state.current_txn_start_offset
        ),
        (s.pid, 3, -1)
    );
    assert_eq!(
        code(resp.topics[0].partitions[1].error_code),
        ErrorCode::UnknownTopicOrPartition
    );
    let list = c.call(
        &ListTransactionsRequest::default()
            .with_state_filters(vec![
                StrBytes::from_static_str("CompleteAbort"),
                StrBytes::from_static_str("Bogus"),
            ])
            .with_duration_filter(-1),
        1,
    );
    assert_eq!(list.transaction_states.len(), 1);
    assert_eq!(list.transaction_states[0].transactional_id.as_str(), "t1");
    assert_eq!(
        list.unknown_state_filters,
        vec![StrBytes::from_static_str("Bogus")]
    );
    let none = c.call(
        &ListTransactionsRequest::default()
            .with_state_filters(vec![StrBytes::from_static_str("Ongoing")]),
        0,
    );
    assert!(none.transaction_states.is_empty());
    let unknown = describe_txn(&mut c, "missing");
    assert_eq!(code(unknown.error_code), ErrorCode::TransactionalIdNotFound);
}

#[test]
fn a_new_session_fences_the_zombie_and_aborts_its_transaction() {
    let dir = temp_dir("txn-fence");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    create_topic(&mut c, "fence", 1);
    let mut zombie = init(&mut c, "tf", 60_000).unwrap();
    assert_eq!(
        add_partitions(&mut c, &zombie, "fence", &[0]),
        ErrorCode::NoError
    );
    assert_eq!(
        produce(&mut c, &mut zombie, "fence", 0, &["z0"]).0,
        ErrorCode::NoError
    );

    let fresh = init(&mut c, "tf", 60_000).unwrap();
    assert_eq!(fresh.pid, zombie.pid);
    assert_eq!(
        fresh.epoch,
        zombie.epoch + 2,
        "one bump to abort, one for the new session"
    );
    // The zombie's transaction was aborted with the fencing epoch.
    let pd = fetch(&mut c, "fence", 0, 0, true);
    assert_eq!(pd.last_stable_offset, 2);
    assert_eq!(aborted(&pd), vec![(zombie.pid, 0)]);
    assert_eq!(
        items(pd.records.clone()).last(),
        Some(&Item::Marker(1, ControlRecordType::Abort, zombie.epoch + 1))
    );
    // Everything the zombie tries now fails.
    assert_eq!(
        produce(&mut c, &mut zombie, "fence", 0, &["z1"]).0,
        ErrorCode::InvalidProducerEpoch
    );
    assert_eq!(
        add_partitions(&mut c, &zombie, "fence", &[0]),
        ErrorCode::ProducerFenced
    );
    assert_eq!(end_txn(&mut c, &zombie, true, 3), ErrorCode::ProducerFenced);
    assert_eq!(
        end_txn(&mut c, &zombie, true, 1),
        ErrorCode::InvalidProducerEpoch,
        "before KIP-588"
    );
    let other = Session {
        pid: zombie.pid + 1000,
        ..init(&mut c, "other", 1000).unwrap()
    };
    assert_eq!(
        end_txn(
            &mut c,
            &Session {
                txn_id: "tf".into(),
                ..other
            },
            true,
            3
        ),
        ErrorCode::InvalidProducerIdMapping
    );

    // KIP-360: the current session may bump its own epoch; a stale one may not.
    let bump = |c: &mut Client, pid: i64, epoch: i16| {
        let req = InitProducerIdRequest::default()
            .with_transactional_id(Some(txn("tf")))
            .with_transaction_timeout_ms(60_000)
            .with_producer_id(ProducerId(pid))
            .with_producer_epoch(epoch);
        c.call(&req, 4)
    };
    let resp = bump(&mut c, fresh.pid, fresh.epoch);
    assert_eq!((resp.error_code, resp.producer_epoch), (0, fresh.epoch + 1));
    let retry = bump(&mut c, fresh.pid, fresh.epoch);
    assert_eq!(
        (retry.error_code, retry.producer_epoch),
        (0, fresh.epoch + 1),
        "a retried bump"
    );
    let stale = bump(&mut c, zombie.pid, zombie.epoch);
    assert_eq!(code(stale.error_code), ErrorCode::ProducerFenced);
    let req = InitProducerIdRequest::default()
        .with_transactional_id(Some(txn("tf")))
        .with_transaction_timeout_ms(60_000)
        .with_producer_id(ProducerId(zombie.pid))
        .with_producer_epoch(zombie.epoch);
    assert_eq!(
        code(c.call(&req, 3).error_code),
        ErrorCode::InvalidProducerEpoch,
        "v3 predates PRODUCER_FENCED"
    );
}

#[test]
fn timeouts_abort_and_are_bounded_by_the_maximum() {
    let dir = temp_dir("txn-timeout");
    let broker = BrokerProcess::start(
        &dir,
        &[
            ("transaction.max.timeout.ms", "5000"),
            (
                "transaction.abort.timed.out.transaction.cleanup.interval.ms",
                "20",
            ),
        ],
    );
    let mut c = broker.client();
    create_topic(&mut c, "slow", 1);
    assert_eq!(
        init(&mut c, "big", 5001).err(),
        Some(ErrorCode::InvalidTransactionTimeout)
    );
    assert_eq!(
        init(&mut c, "zero", 0).err(),
        Some(ErrorCode::InvalidTransactionTimeout)
    );

    let mut s = init(&mut c, "short", 300).unwrap();
    assert_eq!(add_partitions(&mut c, &s, "slow", &[0]), ErrorCode::NoError);
    assert_eq!(
        produce(&mut c, &mut s, "slow", 0, &["x"]).0,
        ErrorCode::NoError
    );
    wait_until("the coordinator to abort the transaction", || {
        describe_txn(&mut c, "short").transaction_state.as_str() == "CompleteAbort"
    });
    let d = describe_txn(&mut c, "short");
    assert_eq!(
        d.producer_epoch,
        s.epoch + 1,
        "the abort fences the producer"
    );
    let pd = fetch(&mut c, "slow", 0, 0, true);
    assert_eq!(pd.last_stable_offset, 2);
    assert_eq!(aborted(&pd), vec![(s.pid, 0)]);
    assert_eq!(end_txn(&mut c, &s, true, 3), ErrorCode::ProducerFenced);
    assert_eq!(
        produce(&mut c, &mut s, "slow", 0, &["y"]).0,
        ErrorCode::InvalidProducerEpoch
    );
}

#[test]
fn transactional_offsets_become_visible_on_commit_only() {
    let dir = temp_dir("txn-offsets");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    create_topic(&mut c, "in", 1);
    let s = init(&mut c, "to", 60_000).unwrap();

    let commit_offset = |c: &mut Client, s: &Session, offset: i64| {
        let req = TxnOffsetCommitRequest::default()
            .with_transactional_id(txn(&s.txn_id))
            .with_group_id(GroupId(StrBytes::from_static_str("g")))
            .with_producer_id(ProducerId(s.pid))
            .with_producer_epoch(s.epoch)
            .with_generation_id(-1)
            .with_topics(vec![TxnOffsetCommitRequestTopic::default()
                .with_name(name("in"))
                .with_partitions(vec![TxnOffsetCommitRequestPartition::default()
                    .with_partition_index(0)
                    .with_committed_offset(offset)
                    .with_committed_leader_epoch(-1)])]);
        code(c.call(&req, 3).topics[0].partitions[0].error_code)
    };
    let add_offsets = |c: &mut Client, s: &Session| {
        let req = AddOffsetsToTxnRequest::default()
            .with_transactional_id(txn(&s.txn_id))
            .with_producer_id(ProducerId(s.pid))
            .with_producer_epoch(s.epoch)
            .with_group_id(GroupId(StrBytes::from_static_str("g")));
        code(c.call(&req, 3).error_code)
    };
    let fetch_offset = |c: &mut Client, stable: bool| {
        let req = OffsetFetchRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("g")))
            .with_require_stable(stable)
            .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                .with_name(name("in"))
                .with_partition_indexes(vec![0])]));
        let p = c.call(&req, 7).topics[0].partitions[0].clone();
        (code(p.error_code), p.committed_offset)
    };

    assert_eq!(
        commit_offset(&mut c, &s, 5),
        ErrorCode::InvalidTxnState,
        "before AddOffsetsToTxn"
    );
    assert_eq!(add_offsets(&mut c, &s), ErrorCode::NoError);
    assert_eq!(commit_offset(&mut c, &s, 5), ErrorCode::NoError);
    assert_eq!(
        fetch_offset(&mut c, true),
        (ErrorCode::UnstableOffsetCommit, -1)
    );
    assert_eq!(fetch_offset(&mut c, false), (ErrorCode::NoError, -1));
    assert_eq!(end_txn(&mut c, &s, true, 3), ErrorCode::NoError);
    assert_eq!(fetch_offset(&mut c, true), (ErrorCode::NoError, 5));

    assert_eq!(add_offsets(&mut c, &s), ErrorCode::NoError);
    assert_eq!(commit_offset(&mut c, &s, 9), ErrorCode::NoError);
    assert_eq!(end_txn(&mut c, &s, false, 3), ErrorCode::NoError);
    assert_eq!(
        fetch_offset(&mut c, true),
        (ErrorCode::NoError, 5),
        "aborted offsets are dropped"
    );

    // Left pending across a restart: still pending, then committed.
    assert_eq!(add_offsets(&mut c, &s), ErrorCode::NoError);
    assert_eq!(commit_offset(&mut c, &s, 7), ErrorCode::NoError);
    drop(c);
    broker.stop();
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    assert_eq!(
        fetch_offset(&mut c, true),
        (ErrorCode::UnstableOffsetCommit, -1)
    );
    assert_eq!(end_txn(&mut c, &s, true, 3), ErrorCode::NoError);
    assert_eq!(fetch_offset(&mut c, true), (ErrorCode::NoError, 7));
    drop(c);
    broker.stop();
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    assert_eq!(
        fetch_offset(&mut c, true),
        (ErrorCode::NoError, 7),
        "the commit was replayed"
    );
}

#[test]
fn transactions_and_the_aborted_index_survive_a_crash() {
    let dir = temp_dir("txn-restart");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    create_topic(&mut c, "r", 1);
    let mut a = init(&mut c, "ra", 60_000).unwrap();
    assert_eq!(add_partitions(&mut c, &a, "r", &[0]), ErrorCode::NoError);
    produce(&mut c, &mut a, "r", 0, &["a0", "a1"]);
    let mut b = init(&mut c, "rb", 60_000).unwrap();
    assert_eq!(add_partitions(&mut c, &b, "r", &[0]), ErrorCode::NoError);
    produce(&mut c, &mut b, "r", 0, &["b0"]); // offset 2, left open
    assert_eq!(end_txn(&mut c, &a, false, 3), ErrorCode::NoError); // marker at 3
    let before = fetch(&mut c, "r", 0, 0, true);
    assert_eq!(
        (before.last_stable_offset, aborted(&before)),
        (2, vec![(a.pid, 0)])
    );
    drop(c);
    broker.kill9();
    assert!(dir.join("r-0/00000000000000000000.txnindex").exists());

    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    let pd = fetch(&mut c, "r", 0, 0, true);
    assert_eq!(pd.last_stable_offset, 2, "b's transaction is still open");
    assert_eq!(aborted(&pd), vec![(a.pid, 0)]);
    assert_eq!(
        describe_txn(&mut c, "rb").transaction_state.as_str(),
        "Ongoing"
    );
    assert_eq!(end_txn(&mut c, &b, true, 3), ErrorCode::NoError);
    let pd = fetch(&mut c, "r", 0, 0, true);
    assert_eq!(pd.last_stable_offset, 5);
    let data: Vec<Item> = items(pd.records.clone())
        .into_iter()
        .filter(|i| matches!(i, Item::Data(..)))
        .collect();
    assert_eq!(
        data.len(),
        3,
        "read_committed gets every record plus the aborted list"
    );
    assert_eq!(aborted(&pd), vec![(a.pid, 0)]);
}

#[test]
fn the_batched_add_partitions_form_verifies() {
    let dir = temp_dir("txn-v4");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    create_topic(&mut c, "v4", 2);
    let s = init(&mut c, "t4", 60_000).unwrap();
    let request = |verify_only: bool, partitions: Vec<i32>| {
        AddPartitionsToTxnRequest::default().with_transactions(vec![
            AddPartitionsToTxnTransaction::default()
                .with_transactional_id(txn("t4"))
                .with_producer_id(ProducerId(s.pid))
                .with_producer_epoch(s.epoch)
                .with_verify_only(verify_only)
                .with_topics(vec![AddPartitionsToTxnTopic::default()
                    .with_name(name("v4"))
                    .with_partitions(partitions)]),
        ])
    };
    let codes = |resp: AddPartitionsToTxnResponse| -> Vec<ErrorCode> {
        resp.results_by_transaction[0].topic_results[0]
            .results_by_partition
            .iter()
            .map(|p| code(p.partition_error_code))
            .collect()
    };
    assert_eq!(
        codes(c.call(&request(true, vec![0]), 5)),
        vec![ErrorCode::InvalidTxnState]
    );
    assert_eq!(
        codes(c.call(&request(false, vec![0]), 5)),
        vec![ErrorCode::NoError]
    );
    assert_eq!(
        codes(c.call(&request(true, vec![0, 1]), 4)),
        vec![ErrorCode::NoError, ErrorCode::InvalidTxnState]
    );
    assert_eq!(
        codes(c.call(&request(false, vec![0, 9]), 5)),
        vec![
            ErrorCode::OperationNotAttempted,
            ErrorCode::UnknownTopicOrPartition
        ]
    );
}
