//! A KIP-848 consumer group on a 3-node local cluster, in the raw protocol: only the leader of
//! the group's `__consumer_offsets` partition coordinates it (the others answer
//! NOT_COORDINATOR), and when that broker is killed the new leader loads the group from the
//! replicated records: members carry on at their epochs with their assignments, nothing moves.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::cluster::LocalCluster;
use common::sb;
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::*;
use odradek::ErrorCode;
use uuid::Uuid;

const GROUP: &str = "cluster-kip848";

/// The group's coordinator as `via` names it, once there is one.
fn coordinator(cluster: &LocalCluster, via: usize, within: Duration) -> usize {
    let deadline = Instant::now() + within;
    loop {
        let find = FindCoordinatorRequest::default()
            .with_key_type(0)
            .with_coordinator_keys(vec![sb(GROUP)]);
        let c = cluster.client(via).call(&find, 4).coordinators[0].clone();
        if c.error_code == 0 {
            return c.node_id.0 as usize;
        }
        assert!(Instant::now() < deadline, "no group coordinator: {c:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn heartbeat(
    cluster: &LocalCluster,
    node: usize,
    member: &str,
    epoch: i32,
    owned: &BTreeSet<(Uuid, i32)>,
) -> ConsumerGroupHeartbeatResponse {
    let mut by_topic: std::collections::BTreeMap<Uuid, Vec<i32>> = Default::default();
    for (t, p) in owned {
        by_topic.entry(*t).or_default().push(*p);
    }
    let mut request = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(sb(GROUP)))
        .with_member_id(sb(member))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(if epoch == 0 { 30_000 } else { -1 })
        .with_topic_partitions(Some(
            by_topic
                .into_iter()
                .map(|(t, ps)| {
                    TopicPartitions::default()
                        .with_topic_id(t)
                        .with_partitions(ps)
                })
                .collect(),
        ));
    if epoch == 0 {
        request.subscribed_topic_names = Some(vec![common::topic_name("t")]);
    }
    cluster.client(node).call(&request, 1)
}

fn assigned(r: &ConsumerGroupHeartbeatResponse) -> Option<BTreeSet<(Uuid, i32)>> {
    r.assignment.as_ref().map(|a| {
        a.topic_partitions
            .iter()
            .flat_map(|tp| tp.partitions.iter().map(move |p| (tp.topic_id, *p)))
            .collect()
    })
}

#[test]
fn a_consumer_group_outlives_its_coordinator() {
    let mut cluster = LocalCluster::start(3, &[("offsets.topic.num.partitions", "3")]);
    cluster.wait_brokers(1, 3, Duration::from_secs(30));
    let create = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(common::topic_name("t"))
            .with_num_partitions(4)
            .with_replication_factor(3)])
        .with_timeout_ms(30_000);
    let created = cluster.client(1).call(&create, 7);
    assert_eq!(created.topics[0].error_code, 0, "{:?}", created.topics[0]);

    let c = coordinator(&cluster, 1, Duration::from_secs(30));
    let other = (1..=3).find(|n| *n != c).unwrap();
    let refused = heartbeat(&cluster, other, "a", 0, &BTreeSet::new());
    assert_eq!(
        refused.error_code,
        ErrorCode::NotCoordinator.code(),
        "only the coordinator serves the group"
    );
    // Two members share the partitions.
    let deadline = Instant::now() + Duration::from_secs(30);
    let a1 = loop {
        let r = heartbeat(&cluster, c, "a", 0, &BTreeSet::new());
        if r.error_code == 0 {
            break r;
        }
        assert!(Instant::now() < deadline, "join: {r:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let a_all = assigned(&a1).unwrap();
    assert_eq!(a_all.len(), 4);
    let b1 = heartbeat(&cluster, c, "b", 0, &BTreeSet::new());
    assert_eq!(b1.error_code, 0, "{b1:?}");
    let a_kept = assigned(&heartbeat(&cluster, c, "a", 1, &a_all)).unwrap();
    let a3 = heartbeat(&cluster, c, "a", 1, &a_kept);
    assert_eq!(a3.member_epoch, 2);
    let b2 = heartbeat(&cluster, c, "b", 2, &BTreeSet::new());
    let b_got = assigned(&b2).unwrap();
    assert_eq!((a_kept.len(), b_got.len()), (2, 2));

    // The coordinator dies; the group's partition gets a new leader, which loads the group.
    cluster.kill(c);
    let survivor = (1..=3).find(|n| *n != c).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let (successor, a4) = loop {
        let n = coordinator(&cluster, survivor, Duration::from_secs(30));
        if n != c {
            let r = heartbeat(&cluster, n, "a", 2, &a_kept);
            if r.error_code == 0 {
                break (n, r);
            }
            let code = ErrorCode::from_code(r.error_code);
            assert!(
                code.is_retriable(),
                "heartbeat on the new coordinator: {r:?}"
            );
        }
        assert!(Instant::now() < deadline, "the coordinator never moved");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(a4.member_epoch, 2, "a carries on at its epoch");
    assert_eq!(assigned(&a4), None, "nothing moved");
    let b3 = heartbeat(&cluster, successor, "b", 2, &b_got);
    assert_eq!((b3.error_code, b3.member_epoch), (0, 2));
    let described: ConsumerGroupDescribeResponse = cluster.client(successor).call(
        &ConsumerGroupDescribeRequest::default().with_group_ids(vec![GroupId(sb(GROUP))]),
        1,
    );
    let g = &described.groups[0];
    assert_eq!(
        (g.error_code, g.group_epoch, g.members.len()),
        (0, 2, 2),
        "{g:?}"
    );
    assert_eq!(g.group_state.as_str(), "Stable");
}
