//! Consumer groups on a 3-node local cluster, in the raw protocol: only the leader of the
//! group's `__consumer_offsets` partition coordinates it (the others answer NOT_COORDINATOR),
//! and when that broker is killed the new leader loads the group from the replicated records.
//! A KIP-848 group's members carry on at their epochs with their assignments, nothing moves; a
//! classic group's member carries on in its generation (its SyncGroup was answered only once the
//! group's record was replicated).

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
const CLASSIC_GROUP: &str = "cluster-classic";

/// The coordinator of `GROUP` as `via` names it, once there is one.
fn coordinator(cluster: &LocalCluster, via: usize, within: Duration) -> usize {
    coordinator_of(cluster, GROUP, via, within)
}

/// The coordinator of `group` as `via` names it, once there is one.
fn coordinator_of(cluster: &LocalCluster, group: &str, via: usize, within: Duration) -> usize {
    let deadline = Instant::now() + within;
    loop {
        let find = FindCoordinatorRequest::default()
            .with_key_type(0)
            .with_coordinator_keys(vec![sb(group)]);
        let c = cluster.client(via).call(&find, 4).coordinators[0].clone();
        if c.error_code == 0 {
            return c.node_id.0 as usize;
        }
        assert!(Instant::now() < deadline, "no group coordinator: {c:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Once `killed`, the coordinator of `group`, has a successor: the successor's node and the
/// first answer of `call` on it without error (retriable errors are retried for 30 s).
fn on_successor<R: std::fmt::Debug>(
    cluster: &LocalCluster,
    group: &str,
    killed: usize,
    mut call: impl FnMut(usize) -> (i16, R),
) -> (usize, R) {
    let survivor = (1..=3).find(|n| *n != killed).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let n = coordinator_of(cluster, group, survivor, Duration::from_secs(30));
        if n != killed {
            let (code, r) = call(n);
            if code == 0 {
                return (n, r);
            }
            assert!(
                ErrorCode::from_code(code).is_retriable(),
                "request on the new coordinator: {r:?}"
            );
        }
        assert!(Instant::now() < deadline, "the coordinator never moved");
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
    let (successor, a4) = on_successor(&cluster, GROUP, c, |n| {
        let r = heartbeat(&cluster, n, "a", 2, &a_kept);
        (r.error_code, r)
    });
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

fn classic_join(cluster: &LocalCluster, node: usize, member: &str) -> JoinGroupResponse {
    use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
    // A consumer subscription (v0) to topic "t": version, one topic, no user data.
    let subscription =
        bytes::Bytes::from_static(&[0, 0, 0, 0, 0, 1, 0, 1, b't', 255, 255, 255, 255]);
    let join = JoinGroupRequest::default()
        .with_group_id(GroupId(sb(CLASSIC_GROUP)))
        .with_session_timeout_ms(30_000)
        .with_rebalance_timeout_ms(30_000)
        .with_member_id(sb(member))
        .with_protocol_type(sb("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(sb("range"))
            .with_metadata(subscription)]);
    cluster.client(node).call(&join, 9)
}

#[test]
fn a_classic_group_outlives_its_coordinator() {
    let mut cluster = LocalCluster::start(3, &[("offsets.topic.num.partitions", "3")]);
    cluster.wait_brokers(1, 3, Duration::from_secs(30));
    let c = coordinator_of(&cluster, CLASSIC_GROUP, 1, Duration::from_secs(30));
    // JoinGroup v9: the first join hands out the member id, the second joins with it.
    let deadline = Instant::now() + Duration::from_secs(30);
    let first = loop {
        let r = classic_join(&cluster, c, "");
        if r.error_code == ErrorCode::MemberIdRequired.code() {
            break r;
        }
        assert!(Instant::now() < deadline, "join: {r:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let member = first.member_id.to_string();
    let joined = classic_join(&cluster, c, &member);
    assert_eq!(joined.error_code, 0, "{joined:?}");
    assert_eq!(joined.leader.as_str(), member, "the only member leads");
    let generation = joined.generation_id;
    let assignment = bytes::Bytes::from_static(&[
        0, 0, 0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 1, 0, 0, 0, 0, 255, 255, 255, 255,
    ]);
    let sync = SyncGroupRequest::default()
        .with_group_id(GroupId(sb(CLASSIC_GROUP)))
        .with_generation_id(generation)
        .with_member_id(sb(&member))
        .with_protocol_type(Some(sb("consumer")))
        .with_protocol_name(Some(sb("range")))
        .with_assignments(vec![
            sync_group_request::SyncGroupRequestAssignment::default()
                .with_member_id(sb(&member))
                .with_assignment(assignment.clone()),
        ]);
    let synced: SyncGroupResponse = cluster.client(c).call(&sync, 5);
    assert_eq!(synced.error_code, 0, "{synced:?}");
    assert_eq!(synced.assignment, assignment);

    // At once, before anything else reaches the group, its coordinator dies.
    cluster.kill(c);
    let (successor, _) = on_successor(&cluster, CLASSIC_GROUP, c, |n| {
        let beat = HeartbeatRequest::default()
            .with_group_id(GroupId(sb(CLASSIC_GROUP)))
            .with_generation_id(generation)
            .with_member_id(sb(&member));
        let r: HeartbeatResponse = cluster.client(n).call(&beat, 4);
        (r.error_code, r)
    });
    let described: DescribeGroupsResponse = cluster.client(successor).call(
        &DescribeGroupsRequest::default().with_groups(vec![GroupId(sb(CLASSIC_GROUP))]),
        5,
    );
    let g = &described.groups[0];
    assert_eq!(
        (g.error_code, g.group_state.as_str()),
        (0, "Stable"),
        "{g:?}"
    );
    assert_eq!(g.members.len(), 1);
    assert_eq!(
        g.members[0].member_assignment, assignment,
        "the assignment survived"
    );
}
