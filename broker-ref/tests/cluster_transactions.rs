//! Transactions on a 3-node local cluster, spoken in the raw protocol: the coordinator is the
//! leader of the id's `__transaction_state` partition (others answer NOT_COORDINATOR), a
//! partition leader that is not the coordinator verifies transactional writes with it, EndTxn
//! writes COMMIT / ABORT markers into partitions led by other brokers (WriteTxnMarkers), a
//! reborn producer fences the old epoch, and an open transaction survives the SIGKILL of its
//! coordinator: the new coordinator loaded its replicated state and commits it.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::cluster::LocalCluster;
use common::Client;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use odradek::records::{BatchBuilder, Compression, ControlRecordType, EndTxnMarker, RecordBatches};
use odradek::ErrorCode;

const TOPIC: &str = "tx";

fn txn(s: &str) -> TransactionalId {
    TransactionalId(StrBytes::from_string(s.to_string()))
}

fn code(c: i16) -> ErrorCode {
    ErrorCode::from_code(c)
}

/// A transactional producer session.
struct Session {
    txn_id: String,
    pid: i64,
    epoch: i16,
    /// Next sequence per partition.
    seq: [i32; 3],
}

/// Asks `via` for `txn_id`'s coordinator until one is known (the topic is created on first
/// use), up to `within`.
fn coordinator(cluster: &LocalCluster, via: usize, txn_id: &str, within: Duration) -> usize {
    let deadline = Instant::now() + within;
    loop {
        let find = FindCoordinatorRequest::default()
            .with_key_type(1)
            .with_coordinator_keys(vec![StrBytes::from_string(txn_id.to_string())]);
        let c = cluster.client(via).call(&find, 4).coordinators[0].clone();
        if c.error_code == 0 {
            return c.node_id.0 as usize;
        }
        assert!(
            Instant::now() < deadline,
            "no transaction coordinator: {c:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn init(client: &mut Client, txn_id: &str) -> Result<Session, ErrorCode> {
    let req = InitProducerIdRequest::default()
        .with_transactional_id(Some(txn(txn_id)))
        .with_transaction_timeout_ms(60_000)
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
        seq: [0; 3],
    })
}

/// InitProducerId, retried while the coordinator answers CONCURRENT_TRANSACTIONS (a fenced
/// transaction's abort is being completed).
fn init_retrying(client: &mut Client, txn_id: &str) -> Session {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match init(client, txn_id) {
            Ok(s) => return s,
            Err(ErrorCode::ConcurrentTransactions) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(e) => panic!("InitProducerId failed: {e:?}"),
        }
    }
}

fn add_partitions(client: &mut Client, s: &Session, partitions: &[i32]) -> Vec<ErrorCode> {
    let req = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(txn(&s.txn_id))
        .with_v3_and_below_producer_id(ProducerId(s.pid))
        .with_v3_and_below_producer_epoch(s.epoch)
        .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
            .with_name(common::topic_name(TOPIC))
            .with_partitions(partitions.to_vec())]);
    client.call(&req, 3).results_by_topic_v3_and_below[0]
        .results_by_partition
        .iter()
        .map(|r| code(r.partition_error_code))
        .collect()
}

fn produce(client: &mut Client, s: &mut Session, partition: i32, value: &str) -> ErrorCode {
    let seq = &mut s.seq[partition as usize];
    let mut b = BatchBuilder::new(Compression::None)
        .producer(s.pid, s.epoch, *seq)
        .transactional(true);
    b.append(1_700_000_000_000, None, Some(value.as_bytes()), &[])
        .unwrap();
    let req = ProduceRequest::default()
        .with_transactional_id(Some(txn(&s.txn_id)))
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(common::topic_name(TOPIC))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(b.build().unwrap()))])]);
    let answer = code(client.call(&req, 9).responses[0].partition_responses[0].error_code);
    if answer == ErrorCode::NoError {
        *seq += 1;
    }
    answer
}

fn end_txn(client: &mut Client, s: &Session, commit: bool) -> ErrorCode {
    let req = EndTxnRequest::default()
        .with_transactional_id(txn(&s.txn_id))
        .with_producer_id(ProducerId(s.pid))
        .with_producer_epoch(s.epoch)
        .with_committed(commit);
    code(client.call(&req, 3).error_code)
}

/// Data values and markers (kind, coordinator epoch) a read_committed fetch returns from
/// `partition`'s leader, and the aborted transactions it reports.
#[derive(Debug, Default)]
struct Read {
    values: Vec<String>,
    markers: Vec<(ControlRecordType, i32)>,
    aborted: Vec<i64>,
}

fn read_committed(client: &mut Client, partition: i32) -> Read {
    let req = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(0)
        .with_max_bytes(10 << 20)
        .with_isolation_level(1)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(common::topic_name(TOPIC))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(partition)
                .with_fetch_offset(0)
                .with_partition_max_bytes(10 << 20)])]);
    let p = client.call(&req, 12).responses[0].partitions[0].clone();
    assert_eq!(p.error_code, 0, "fetch from the leader of {partition}");
    let mut read = Read {
        aborted: p
            .aborted_transactions
            .unwrap_or_default()
            .iter()
            .map(|a| a.first_offset)
            .collect(),
        ..Read::default()
    };
    for batch in RecordBatches::new(p.records.unwrap_or_default()) {
        let batch = batch.unwrap();
        for r in batch.records().unwrap() {
            let r = r.unwrap();
            if batch.is_control() {
                let m = EndTxnMarker::from_record(&r).unwrap();
                read.markers.push((m.kind, m.coordinator_epoch));
            } else {
                read.values
                    .push(String::from_utf8(r.value.unwrap_or_else(Bytes::new).to_vec()).unwrap());
            }
        }
    }
    read
}

#[test]
fn transactions_commit_abort_fence_and_survive_their_coordinators_death_on_three_nodes() {
    let mut cluster = LocalCluster::start(3, &[("transaction.state.log.num.partitions", "3")]);
    cluster.wait_brokers(1, 3, Duration::from_secs(30));
    let create = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(common::topic_name(TOPIC))
            .with_num_partitions(3)
            .with_replication_factor(3)])
        .with_timeout_ms(30_000);
    let created = cluster.client(1).call(&create, 7);
    assert_eq!(created.topics[0].error_code, 0, "{:?}", created.topics[0]);
    let leaders: Vec<usize> = (0..3)
        .map(|p| {
            cluster
                .wait_partition(1, TOPIC, p, Duration::from_secs(10), |s| {
                    s.leader > 0 && s.isr.len() == 3
                })
                .leader as usize
        })
        .collect();

    let id = "cluster-txn";
    let c = coordinator(&cluster, 1, id, Duration::from_secs(30));
    let other = (1..=3).find(|n| *n != c).unwrap();
    assert_eq!(
        init(&mut cluster.client(other), id).err(),
        Some(ErrorCode::NotCoordinator),
        "only the leader of the id's __transaction_state partition coordinates it"
    );
    let mut s = init(&mut cluster.client(c), id).unwrap();
    // A partition led by another broker than the coordinator.
    let remote = (0..3).find(|p| leaders[*p as usize] != c).unwrap();
    assert_eq!(
        produce(
            &mut cluster.client(leaders[remote as usize]),
            &mut s,
            remote,
            "early"
        ),
        ErrorCode::InvalidTxnState,
        "the leader asked the coordinator, which has no such partition in the transaction"
    );

    // A transaction over every partition, committed.
    assert_eq!(
        add_partitions(&mut cluster.client(c), &s, &[0, 1, 2]),
        vec![ErrorCode::NoError; 3]
    );
    for p in 0..3 {
        let answer = produce(
            &mut cluster.client(leaders[p as usize]),
            &mut s,
            p,
            &format!("c{p}"),
        );
        assert_eq!(answer, ErrorCode::NoError, "partition {p}");
    }
    for p in 0..3 {
        let read = read_committed(&mut cluster.client(leaders[p as usize]), p);
        assert!(
            read.values.is_empty(),
            "uncommitted data is not read: {read:?}"
        );
    }
    assert_eq!(
        end_txn(&mut cluster.client(c), &s, true),
        ErrorCode::NoError
    );
    let mut first_coordinator_epoch = None;
    for p in 0..3 {
        let read = read_committed(&mut cluster.client(leaders[p as usize]), p);
        assert_eq!(read.values, [format!("c{p}")], "partition {p}");
        assert_eq!(read.markers.len(), 1, "{read:?}");
        assert_eq!(read.markers[0].0, ControlRecordType::Commit);
        let epoch = *first_coordinator_epoch.get_or_insert(read.markers[0].1);
        assert_eq!(
            read.markers[0].1, epoch,
            "one coordinator epoch for the whole transaction"
        );
    }

    // The next one, aborted: its data is reported aborted to read_committed consumers.
    assert_eq!(
        add_partitions(&mut cluster.client(c), &s, &[remote]),
        vec![ErrorCode::NoError]
    );
    let leader = leaders[remote as usize];
    assert_eq!(
        produce(&mut cluster.client(leader), &mut s, remote, "a"),
        ErrorCode::NoError
    );
    assert_eq!(
        end_txn(&mut cluster.client(c), &s, false),
        ErrorCode::NoError
    );
    let read = read_committed(&mut cluster.client(leader), remote);
    assert_eq!(read.aborted.len(), 1, "{read:?}");
    assert_eq!(
        read.markers.iter().map(|m| m.0).collect::<Vec<_>>(),
        [ControlRecordType::Commit, ControlRecordType::Abort]
    );

    // A new session with the same id fences the old one, on every leader.
    let old_epoch = s.epoch;
    let mut zombie = Session {
        txn_id: s.txn_id.clone(),
        pid: s.pid,
        epoch: s.epoch,
        seq: s.seq,
    };
    let mut s = init(&mut cluster.client(c), id).unwrap();
    assert!(s.epoch > old_epoch);
    assert_eq!(
        add_partitions(&mut cluster.client(c), &zombie, &[remote]),
        vec![ErrorCode::ProducerFenced]
    );
    assert_eq!(
        add_partitions(&mut cluster.client(c), &s, &[0, 1, 2]),
        vec![ErrorCode::NoError; 3]
    );
    for p in 0..3 {
        let answer = produce(
            &mut cluster.client(leaders[p as usize]),
            &mut s,
            p,
            &format!("d{p}"),
        );
        assert_eq!(answer, ErrorCode::NoError, "partition {p}");
    }
    let fenced = produce(&mut cluster.client(leader), &mut zombie, remote, "zombie");
    assert!(
        matches!(
            fenced,
            ErrorCode::InvalidProducerEpoch | ErrorCode::ProducerFenced
        ),
        "{fenced:?}"
    );

    // The coordinator dies with the transaction open; its successor loaded the replicated
    // state and commits it.
    cluster.kill(c);
    let survivor = (1..=3).find(|n| *n != c).unwrap();
    let successor = {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let n = coordinator(&cluster, survivor, id, Duration::from_secs(30));
            if n != c {
                break n;
            }
            assert!(Instant::now() < deadline, "the coordinator never moved");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let committed = {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let answer = end_txn(&mut cluster.client(successor), &s, true);
            if answer == ErrorCode::NoError {
                break answer;
            }
            assert!(
                Instant::now() < deadline && answer.is_retriable(),
                "EndTxn on the new coordinator: {answer:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    assert_eq!(committed, ErrorCode::NoError);
    for p in 0..3 {
        let state = cluster.wait_partition(survivor, TOPIC, p, Duration::from_secs(30), |st| {
            st.leader > 0 && st.leader as usize != c
        });
        let read = read_committed(&mut cluster.client(state.leader as usize), p);
        // The aborted "a" comes back too, reported aborted (the consumer drops it).
        let kept: Vec<&String> = read.values.iter().filter(|v| *v != "a").collect();
        assert_eq!(
            kept,
            [&format!("c{p}"), &format!("d{p}")],
            "partition {p}: {read:?}"
        );
        assert_eq!(read.aborted.len(), usize::from(p == remote), "{read:?}");
        let last = read.markers.last().unwrap();
        assert_eq!(last.0, ControlRecordType::Commit);
        assert!(
            Some(last.1) > first_coordinator_epoch,
            "the new coordinator's epoch (its partition's new leader epoch) is higher: {read:?}"
        );
    }
    // Markers are written by leaders only, and never for an older coordinator than the last.
    let marker = |coordinator_epoch: i32, partition: i32| {
        WriteTxnMarkersRequest::default().with_markers(vec![
            write_txn_markers_request::WritableTxnMarker::default()
                .with_producer_id(ProducerId(s.pid))
                .with_producer_epoch(s.epoch)
                .with_transaction_result(false)
                .with_coordinator_epoch(coordinator_epoch)
                .with_topics(vec![
                    write_txn_markers_request::WritableTxnMarkerTopic::default()
                        .with_name(common::topic_name(TOPIC))
                        .with_partition_indexes(vec![partition]),
                ]),
        ])
    };
    let marker_code = |via: usize, request: &WriteTxnMarkersRequest| {
        code(cluster.client(via).call(request, 1).markers[0].topics[0].partitions[0].error_code)
    };
    let state = cluster.partition(survivor, TOPIC, 0).unwrap();
    let follower = state
        .replicas
        .iter()
        .map(|r| *r as usize)
        .find(|r| *r != state.leader as usize && *r != c)
        .unwrap();
    assert_eq!(
        marker_code(follower, &marker(i32::MAX, 0)),
        ErrorCode::NotLeaderOrFollower
    );
    assert_eq!(
        marker_code(
            state.leader as usize,
            &marker(first_coordinator_epoch.unwrap(), 0)
        ),
        ErrorCode::TransactionCoordinatorFenced
    );

    // A fresh session after the move: the state machine goes on from the loaded state.
    let s2 = init_retrying(&mut cluster.client(successor), id);
    assert_eq!(s2.pid, s.pid);
    assert!(s2.epoch > s.epoch);
}
