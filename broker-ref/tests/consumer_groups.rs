//! KIP-848 consumer groups on the wire: ConsumerGroupHeartbeat membership and reconciliation,
//! ConsumerGroupDescribe, how the classic APIs see such a group, commits fenced by member
//! epoch, the group surviving a restart, and the broker settings that shape it.

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::{create_topic, sb, temp_dir, BrokerProcess, Client};
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::*;
use odradek::ErrorCode;
use uuid::Uuid;

type Owned = BTreeSet<(Uuid, i32)>;

fn join(c: &mut Client, group: &str, member: &str, topic: &str) -> ConsumerGroupHeartbeatResponse {
    c.call(
        &ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(sb(group)))
            .with_member_id(sb(member))
            .with_member_epoch(0)
            .with_rebalance_timeout_ms(30_000)
            .with_subscribed_topic_names(Some(vec![common::topic_name(topic)]))
            .with_topic_partitions(Some(vec![])),
        1,
    )
}

fn beat(
    c: &mut Client,
    group: &str,
    member: &str,
    epoch: i32,
    owned: &Owned,
) -> ConsumerGroupHeartbeatResponse {
    let mut by_topic: std::collections::BTreeMap<Uuid, Vec<i32>> = Default::default();
    for (t, p) in owned {
        by_topic.entry(*t).or_default().push(*p);
    }
    c.call(
        &ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(sb(group)))
            .with_member_id(sb(member))
            .with_member_epoch(epoch)
            .with_rebalance_timeout_ms(-1)
            .with_topic_partitions(Some(
                by_topic
                    .into_iter()
                    .map(|(t, ps)| {
                        TopicPartitions::default()
                            .with_topic_id(t)
                            .with_partitions(ps)
                    })
                    .collect(),
            )),
        1,
    )
}

fn assigned(r: &ConsumerGroupHeartbeatResponse) -> Option<Owned> {
    r.assignment.as_ref().map(|a| {
        a.topic_partitions
            .iter()
            .flat_map(|tp| tp.partitions.iter().map(move |p| (tp.topic_id, *p)))
            .collect()
    })
}

fn describe(c: &mut Client, group: &str) -> consumer_group_describe_response::DescribedGroup {
    let mut r: ConsumerGroupDescribeResponse = c.call(
        &ConsumerGroupDescribeRequest::default().with_group_ids(vec![GroupId(sb(group))]),
        1,
    );
    r.groups.remove(0)
}

fn commit(c: &mut Client, version: i16, group: &str, member: &str, epoch: i32, topic: &str) -> i16 {
    let r: OffsetCommitResponse = c.call(
        &OffsetCommitRequest::default()
            .with_group_id(GroupId(sb(group)))
            .with_member_id(sb(member))
            .with_generation_id_or_member_epoch(epoch)
            .with_topics(vec![OffsetCommitRequestTopic::default()
                .with_name(common::topic_name(topic))
                .with_partitions(vec![OffsetCommitRequestPartition::default()
                    .with_partition_index(0)
                    .with_committed_offset(3)])]),
        version,
    );
    r.topics[0].partitions[0].error_code
}

#[test]
fn members_reconcile_commit_with_their_epoch_and_the_group_survives_a_restart() {
    let dir = temp_dir("kip848-wire");
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    create_topic(&mut c, "t", 4, &[]);
    let group = "g";

    let a1 = join(&mut c, group, "member-a", "t");
    assert_eq!(a1.error_code, 0, "{a1:?}");
    assert_eq!((a1.member_epoch, a1.heartbeat_interval_ms), (1, 5000));
    let a_all = assigned(&a1).expect("a full answer");
    assert_eq!(a_all.len(), 4);

    // b joins: it waits while a gives up half, then takes it.
    let b1 = join(&mut c, group, "member-b", "t");
    assert_eq!(b1.member_epoch, 2);
    assert_eq!(assigned(&b1), Some(Owned::new()));
    let a2 = beat(&mut c, group, "member-a", 1, &a_all);
    assert_eq!(a2.member_epoch, 1, "a keeps its epoch until it revokes");
    let a_kept = assigned(&a2).expect("a's shrunk assignment");
    assert_eq!(a_kept.len(), 2);
    let a3 = beat(&mut c, group, "member-a", 1, &a_kept);
    assert_eq!(a3.member_epoch, 2);
    let b2 = beat(&mut c, group, "member-b", 2, &Owned::new());
    let b_got = assigned(&b2).expect("b's partitions");
    assert_eq!(b_got.len(), 2);
    assert!(a_kept.is_disjoint(&b_got));

    let d = describe(&mut c, group);
    assert_eq!(d.error_code, 0);
    assert_eq!(d.group_state.as_str(), "Stable");
    assert_eq!((d.group_epoch, d.assignment_epoch), (2, 2));
    assert_eq!(d.assignor_name.as_str(), "uniform");
    assert_eq!(d.members.len(), 2);
    for m in &d.members {
        assert_eq!(m.member_epoch, 2);
        assert_eq!(m.member_type, 1);
        assert_eq!(m.subscribed_topic_names[0].as_str(), "t");
        assert_eq!(m.assignment.topic_partitions[0].topic_name.as_str(), "t");
        assert_eq!(m.assignment, m.target_assignment);
    }

    // The classic APIs: ListGroups says what it is; DescribeGroups serves classic groups only.
    let listed: ListGroupsResponse = c.call(
        &ListGroupsRequest::default().with_types_filter(vec![sb("consumer")]),
        5,
    );
    assert_eq!(listed.groups.len(), 1);
    assert_eq!(listed.groups[0].group_type.as_str(), "consumer");
    assert_eq!(listed.groups[0].protocol_type.as_str(), "consumer");
    assert_eq!(listed.groups[0].group_state.as_str(), "Stable");
    let classic: ListGroupsResponse = c.call(
        &ListGroupsRequest::default().with_types_filter(vec![sb("classic")]),
        5,
    );
    assert!(classic.groups.is_empty());
    let old: DescribeGroupsResponse = c.call(
        &DescribeGroupsRequest::default().with_groups(vec![GroupId(sb(group))]),
        5,
    );
    assert_eq!(
        (old.groups[0].error_code, old.groups[0].group_state.as_str()),
        (0, "Dead")
    );
    let new: DescribeGroupsResponse = c.call(
        &DescribeGroupsRequest::default().with_groups(vec![GroupId(sb(group))]),
        6,
    );
    assert_eq!(new.groups[0].error_code, ErrorCode::GroupIdNotFound.code());

    // Commits carry the member epoch.
    assert_eq!(commit(&mut c, 9, group, "member-a", 2, "t"), 0);
    assert_eq!(
        commit(&mut c, 9, group, "member-a", 1, "t"),
        ErrorCode::StaleMemberEpoch.code()
    );
    assert_eq!(
        commit(&mut c, 8, group, "member-a", 2, "t"),
        ErrorCode::UnsupportedVersion.code()
    );
    assert_eq!(
        commit(&mut c, 9, group, "nobody", 2, "t"),
        ErrorCode::UnknownMemberId.code()
    );
    // A member from a later epoch than the broker's is fenced.
    let ahead = beat(&mut c, group, "member-a", 7, &a_kept);
    assert_eq!(ahead.error_code, ErrorCode::FencedMemberEpoch.code());
    assert!(ahead.member_id.is_none(), "an error carries no member id");

    drop(c);
    broker.stop();
    let broker = BrokerProcess::start(&dir, &[]);
    let mut c = broker.client();
    let after = describe(&mut c, group);
    assert_eq!(after.error_code, 0, "{after:?}");
    assert_eq!((after.group_epoch, after.assignment_epoch), (2, 2));
    assert_eq!(after.members.len(), 2);
    assert_eq!(
        after
            .members
            .iter()
            .map(|m| &m.assignment)
            .collect::<Vec<_>>(),
        d.members.iter().map(|m| &m.assignment).collect::<Vec<_>>()
    );
    // a carries on at its epoch, nothing moves.
    let a4 = beat(&mut c, group, "member-a", 2, &a_kept);
    assert_eq!((a4.error_code, a4.member_epoch), (0, 2));
    assert_eq!(assigned(&a4), None, "nothing changed");
    // b leaves: a gets everything back.
    let left = beat(&mut c, group, "member-b", -1, &b_got);
    assert_eq!(left.member_epoch, -1);
    let a5 = beat(&mut c, group, "member-a", 2, &a_kept);
    assert_eq!(assigned(&a5).map(|a| a.len()), Some(4));
    broker.stop();
}

#[test]
fn the_protocol_switch_and_the_assignor_list_are_honoured() {
    let dir = temp_dir("kip848-off");
    let broker = BrokerProcess::start(
        &dir,
        &[("group.coordinator.rebalance.protocols", "classic")],
    );
    let mut c = broker.client();
    create_topic(&mut c, "t", 2, &[]);
    let refused = join(&mut c, "g", "m", "t");
    assert_eq!(refused.error_code, ErrorCode::UnsupportedVersion.code());
    let versions: ApiVersionsResponse = c.call(&ApiVersionsRequest::default(), 3);
    assert!(versions
        .finalized_features
        .iter()
        .all(|f| f.name.as_str() != "group.version"));
    broker.stop();

    let dir = temp_dir("kip848-range");
    let broker = BrokerProcess::start(&dir, &[("group.consumer.assignors", "range")]);
    let mut c = broker.client();
    create_topic(&mut c, "t", 2, &[]);
    let versions: ApiVersionsResponse = c.call(&ApiVersionsRequest::default(), 3);
    let feature = versions
        .finalized_features
        .iter()
        .find(|f| f.name.as_str() == "group.version")
        .expect("group.version finalized");
    assert_eq!(feature.max_version_level, 1);
    let mut uniform = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(sb("g")))
        .with_member_id(sb("m"))
        .with_rebalance_timeout_ms(1000)
        .with_subscribed_topic_names(Some(vec![]))
        .with_topic_partitions(Some(vec![]));
    uniform.server_assignor = Some(sb("uniform"));
    let r: ConsumerGroupHeartbeatResponse = c.call(&uniform, 1);
    assert_eq!(r.error_code, ErrorCode::UnsupportedAssignor.code());
    assert_eq!(join(&mut c, "g", "m", "t").error_code, 0);
    assert_eq!(describe(&mut c, "g").assignor_name.as_str(), "range");
    broker.stop();

    // A custom assignor class cannot run here: the broker refuses to start, naming the key.
    let dir = temp_dir("kip848-custom");
    let out = Command::new(env!("CARGO_BIN_EXE_odradek-broker"))
        .args(["--override", "listeners=PLAINTEXT://127.0.0.1:0"])
        .arg("--override")
        .arg(format!("log.dirs={}", dir.display()))
        .args(["--override", "group.consumer.assignors=com.example.Mine"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("group.consumer.assignors"), "{stderr}");
}
