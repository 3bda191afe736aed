//! Online migration on a real coordinator (its groups written to a real `__consumer_offsets`):
//! a classic group in use upgrades when a consumer-protocol member joins, its classic member
//! reconciles by rejoining, the state survives a restart, and the group downgrades when the
//! consumer-protocol member leaves.

use std::collections::BTreeMap;
use std::time::Duration;

use odradek::protocol::consumer_protocol::{
    decode_assignment, encode_assignment, encode_subscription, Subscription,
};
use odradek::{ErrorCode, TopicPartition};

use crate::broker::Broker;
use crate::config::BrokerConfig;
use crate::coordinator::consumer::group::Heartbeat;
use crate::coordinator::group::{GroupState, JoinAnswer, JoinParams};
use crate::coordinator::GroupCoordinator;

const GROUP: &str = "migrating";

fn open(dir: &std::path::Path, policy: &str) -> std::sync::Arc<Broker> {
    let config = BrokerConfig::from_entries([
        ("log.dirs", dir.display().to_string()),
        ("group.initial.rebalance.delay.ms", "0".to_string()),
        ("group.consumer.migration.policy", policy.to_string()),
    ])
    .unwrap();
    let broker = Broker::open(config, "127.0.0.1".into(), 9092).unwrap();
    if broker.topics.get("t").is_none() {
        broker
            .topics
            .create("t", 4, BTreeMap::new(), false)
            .unwrap();
    }
    broker.groups.ensure_topic().unwrap();
    broker
}

fn partitions(ps: &[i32]) -> Vec<TopicPartition> {
    ps.iter()
        .map(|p| TopicPartition {
            topic: "t".into(),
            partition: *p,
        })
        .collect()
}

fn join_params(member_id: &str, owned: &[i32]) -> JoinParams {
    let subscription = Subscription {
        topics: vec!["t".into()],
        owned: partitions(owned),
        user_data: None,
    };
    JoinParams {
        member_id: member_id.to_string(),
        instance_id: None,
        client_id: "classic".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout: Duration::from_secs(30),
        rebalance_timeout: Duration::from_secs(30),
        protocol_type: "consumer".into(),
        protocols: vec![(
            "cooperative-sticky".into(),
            encode_subscription(&subscription).unwrap(),
        )],
        require_known_member: false,
        version: 9,
    }
}

async fn join(groups: &GroupCoordinator, member_id: &str, owned: &[i32]) -> JoinAnswer {
    let answer = groups.join(GROUP, join_params(member_id, owned)).await;
    assert_eq!(answer.error, ErrorCode::NoError, "{answer:?}");
    answer
}

/// Syncs a classic member; the leader hands out `assign`. Returns the member's partitions.
async fn sync(
    groups: &GroupCoordinator,
    answer: &JoinAnswer,
    assign: Option<&[i32]>,
) -> Result<Vec<i32>, ErrorCode> {
    let assignments = match assign {
        Some(ps) => vec![(
            answer.member_id.clone(),
            encode_assignment(&partitions(ps)).unwrap(),
        )],
        None => Vec::new(),
    };
    let synced = groups
        .sync(
            GROUP,
            &answer.member_id,
            answer.generation,
            None,
            Some("consumer"),
            answer.protocol.as_deref(),
            assignments,
        )
        .await;
    if synced.error != ErrorCode::NoError {
        return Err(synced.error);
    }
    let mut ps: Vec<i32> = decode_assignment(&synced.assignment)
        .unwrap()
        .iter()
        .map(|tp| tp.partition)
        .collect();
    ps.sort_unstable();
    Ok(ps)
}

/// A ConsumerGroupHeartbeat (v1) of `member_id` at `epoch`, subscribed to `t`, owning `owned`.
fn heartbeat(groups: &GroupCoordinator, member_id: &str, epoch: i32, owned: &[i32]) -> Heartbeat {
    let topic = groups.log.topics.get("t").unwrap().id;
    Heartbeat {
        version: 1,
        member_id: member_id.to_string(),
        member_epoch: epoch,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec!["t".into()]),
        owned: Some(if owned.is_empty() {
            Default::default()
        } else {
            [(topic, owned.iter().copied().collect())]
                .into_iter()
                .collect()
        }),
        client_id: "modern".into(),
        client_host: "/127.0.0.1".into(),
        ..Heartbeat::default()
    }
}

fn consumer_heartbeat(
    groups: &GroupCoordinator,
    member_id: &str,
    epoch: i32,
    owned: &[i32],
) -> (i32, Option<Vec<i32>>, ErrorCode) {
    let hb = heartbeat(groups, member_id, epoch, owned);
    let a = groups.consumer_heartbeat(GROUP, hb, 45_000, 5_000);
    let assigned = a.assignment.map(|a| {
        let mut ps: Vec<i32> = a.values().flatten().copied().collect();
        ps.sort_unstable();
        ps
    });
    (a.member_epoch, assigned, a.error)
}

fn commit(groups: &GroupCoordinator, member_id: &str, generation: i32) -> ErrorCode {
    groups.commit(
        8,
        GROUP,
        member_id,
        generation,
        None,
        vec![(("t".into(), 0), 1, -1, None)],
    )[0]
    .1
}

#[tokio::test]
async fn a_classic_group_in_use_upgrades_reconciles_survives_a_restart_and_downgrades() {
    let dir = tempfile::tempdir().unwrap();
    let modern = "modern-member-0001";
    let classic_id;
    {
        let broker = open(dir.path(), "bidirectional");
        let groups = &broker.groups;
        // A classic group of one member owning all four partitions, generation 1.
        let a = join(groups, "", &[]).await;
        assert_eq!((a.generation, a.leader == a.member_id), (1, true));
        assert_eq!(
            sync(groups, &a, Some(&[0, 1, 2, 3])).await,
            Ok(vec![0, 1, 2, 3])
        );
        classic_id = a.member_id.clone();

        // A consumer-protocol member joins: the group converts, the newcomer waits for
        // partitions the classic member still holds.
        let (epoch, assigned, error) = consumer_heartbeat(groups, modern, 0, &[]);
        assert_eq!(error, ErrorCode::NoError);
        assert_eq!((epoch, assigned), (2, Some(vec![])));
        assert_eq!(groups.describe(GROUP).unwrap().group_type, "consumer");
        let view = groups.consumer_describe(GROUP).unwrap();
        assert!(view.group.members[&classic_id].classic.is_some());

        // The classic member is told to rejoin; it reports all four partitions, so it must
        // first give two up: it stays at generation 1 with the two it keeps.
        assert_eq!(
            groups.heartbeat(GROUP, &classic_id, 1, None),
            ErrorCode::RebalanceInProgress
        );
        let rejoined = join(groups, &classic_id, &[0, 1, 2, 3]).await;
        assert_eq!((rejoined.generation, rejoined.leader.as_str()), (1, ""));
        assert!(
            rejoined.members.is_empty(),
            "the broker assigns: no member list"
        );
        let kept = sync(groups, &rejoined, None).await.unwrap();
        assert_eq!(kept.len(), 2);
        assert_eq!(commit(groups, &classic_id, 1), ErrorCode::NoError);
        assert_eq!(commit(groups, &classic_id, 2), ErrorCode::IllegalGeneration);
        // Having revoked, it rejoins (cooperative) and reaches the group epoch.
        let settled = join(groups, &classic_id, &kept).await;
        assert_eq!(settled.generation, 2);
        assert_eq!(sync(groups, &settled, None).await, Ok(kept.clone()));
        assert_eq!(
            groups.heartbeat(GROUP, &classic_id, 2, None),
            ErrorCode::NoError
        );
        // The freed partitions reach the consumer-protocol member.
        let (_, assigned, _) = consumer_heartbeat(groups, modern, 2, &[]);
        let freed = assigned.unwrap();
        assert_eq!(freed.len(), 2);
        assert!(
            freed.iter().all(|p| !kept.contains(p)),
            "{freed:?} vs {kept:?}"
        );
    }
    // Restarted, the coordinator replays the converted group with its classic member.
    let broker = open(dir.path(), "bidirectional");
    let groups = &broker.groups;
    let view = groups.consumer_describe(GROUP).unwrap();
    let classic = view.group.members[&classic_id].classic.clone().unwrap();
    assert_eq!(classic.session_timeout_ms, 30_000);
    assert_eq!(classic.protocols[0].0, "cooperative-sticky");
    assert_eq!(
        groups.heartbeat(GROUP, &classic_id, 2, None),
        ErrorCode::NoError
    );

    // The consumer-protocol member leaves: only a classic member is left, so the group goes
    // back to the classic protocol and rebalances at the group epoch before the leave, so the
    // reconciled classic member's generation is still current.
    let (_, _, error) = consumer_heartbeat(groups, modern, -1, &[]);
    assert_eq!(error, ErrorCode::NoError);
    let summary = groups.describe(GROUP).unwrap();
    assert_eq!(
        (summary.group_type, summary.state),
        ("classic", GroupState::PreparingRebalance)
    );
    assert_eq!(groups.lock()[GROUP].generation, 2);
    assert_eq!(
        groups.heartbeat(GROUP, &classic_id, 2, None),
        ErrorCode::RebalanceInProgress
    );
    let back = join(groups, &classic_id, &[]).await;
    assert_eq!((back.generation, back.leader == classic_id), (3, true));
    assert_eq!(
        sync(groups, &back, Some(&[0, 1, 2, 3])).await,
        Ok(vec![0, 1, 2, 3])
    );
    assert_eq!(commit(groups, &classic_id, 3), ErrorCode::NoError);
}

#[tokio::test]
async fn the_policy_gates_conversions_of_groups_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), "DOWNGRADE");
    let groups = &broker.groups;
    let a = join(groups, "", &[]).await;
    sync(groups, &a, Some(&[0, 1, 2, 3])).await.unwrap();
    let (_, _, error) = consumer_heartbeat(groups, "modern-member-0002", 0, &[]);
    assert_eq!(error, ErrorCode::GroupIdNotFound);
    assert_eq!(groups.describe(GROUP).unwrap().group_type, "classic");
    assert_eq!(
        groups.heartbeat(GROUP, &a.member_id, 1, None),
        ErrorCode::NoError
    );

    // Members whose embedded consumer protocol does not decode keep the group classic.
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), "bidirectional");
    let groups = &broker.groups;
    let mut params = join_params("", &[]);
    params.protocols[0].1 = bytes::Bytes::from_static(b"\x00\x01garbage");
    let a = groups.join(GROUP, params).await;
    assert_eq!(a.error, ErrorCode::NoError);
    let (_, _, error) = consumer_heartbeat(groups, "modern-member-0004", 0, &[]);
    assert_eq!(error, ErrorCode::GroupIdNotFound);
    assert_eq!(groups.describe(GROUP).unwrap().group_type, "classic");

    // An assignment carrying a custom assignor's user data keeps the group classic, with
    // Kafka's message.
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), "bidirectional");
    let groups = &broker.groups;
    let a = join(groups, "", &[]).await;
    let with_user_data = {
        use kafka_protocol::messages::ConsumerProtocolAssignment;
        use kafka_protocol::protocol::Encodable;
        let mut b = bytes::BytesMut::new();
        bytes::BufMut::put_i16(&mut b, 1);
        ConsumerProtocolAssignment::default()
            .with_user_data(Some(bytes::Bytes::from_static(b"sticky")))
            .encode(&mut b, 1)
            .unwrap();
        b.freeze()
    };
    let synced = groups
        .sync(
            GROUP,
            &a.member_id,
            a.generation,
            None,
            None,
            None,
            vec![(a.member_id.clone(), with_user_data)],
        )
        .await;
    assert_eq!(synced.error, ErrorCode::NoError);
    let hb = heartbeat(groups, "modern-member-0005", 0, &[]);
    let answer = groups.consumer_heartbeat(GROUP, hb, 45_000, 5_000);
    assert_eq!(answer.error, ErrorCode::GroupIdNotFound);
    assert!(
        answer
            .message
            .as_deref()
            .unwrap_or("")
            .contains("unsupported custom assignor"),
        "{answer:?}"
    );
    assert_eq!(groups.describe(GROUP).unwrap().group_type, "classic");

    // A classic member may still join a consumer group in use; with downgrades disabled the
    // group stays a consumer group when its consumer-protocol member leaves.
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), "upgrade");
    let groups = &broker.groups;
    let modern = "modern-member-0003";
    let (epoch, _, error) = consumer_heartbeat(groups, modern, 0, &[]);
    assert_eq!((epoch, error), (1, ErrorCode::NoError));
    let mut params = join_params("", &[]);
    params.protocol_type = "connect".into();
    let refused = groups.join(GROUP, params).await;
    assert_eq!(refused.error, ErrorCode::InconsistentGroupProtocol);
    let mut params = join_params("", &[]);
    params.require_known_member = true;
    let first = groups.join(GROUP, params).await;
    assert_eq!(first.error, ErrorCode::MemberIdRequired);
    let joined = join(groups, &first.member_id, &[]).await;
    assert_eq!(joined.generation, 2);
    assert!(
        sync(groups, &joined, None).await.unwrap().is_empty(),
        "the modern member holds them"
    );
    let (_, _, error) = consumer_heartbeat(groups, modern, -1, &[]);
    assert_eq!(error, ErrorCode::NoError);
    assert_eq!(groups.describe(GROUP).unwrap().group_type, "consumer");
    assert_eq!(
        groups.heartbeat(GROUP, &joined.member_id, 2, None),
        ErrorCode::RebalanceInProgress
    );
    assert!(BrokerConfig::from_entries([(
        "group.consumer.migration.policy",
        "sideways".to_string()
    )])
    .and_then(|c| Broker::open(c, "127.0.0.1".into(), 9092).map(|_| ()))
    .is_err());
}

#[tokio::test]
async fn a_classic_static_member_replacing_the_last_consumer_member_downgrades_stably() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path(), "bidirectional");
    let groups = &broker.groups;
    let modern = |epoch: i32, owned: &[i32]| Heartbeat {
        instance_id: Some("i1".into()),
        ..heartbeat(groups, "modern-static-member", epoch, owned)
    };
    let a = groups.consumer_heartbeat(GROUP, modern(0, &[]), 45_000, 5_000);
    assert_eq!((a.error, a.member_epoch), (ErrorCode::NoError, 1));
    // A dynamic classic member joins; the static consumer-protocol member gives two up.
    let b = join(groups, "", &[]).await;
    assert_eq!(b.generation, 2);
    let a = groups.consumer_heartbeat(GROUP, modern(1, &[0, 1, 2, 3]), 45_000, 5_000);
    let kept: Vec<i32> = a.assignment.unwrap().values().flatten().copied().collect();
    assert_eq!(kept.len(), 2);
    let a = groups.consumer_heartbeat(GROUP, modern(1, &kept), 45_000, 5_000);
    assert_eq!(a.member_epoch, 2);
    assert_eq!(
        groups.heartbeat(GROUP, &b.member_id, 2, None),
        ErrorCode::RebalanceInProgress
    );
    let b = join(groups, &b.member_id, &[]).await;
    let b_parts = sync(groups, &b, None).await.unwrap();
    assert_eq!(b_parts.len(), 2);

    // The static instance restarts on the classic protocol: it replaces the consumer-protocol
    // member, the group is classic again at the same generation, and nobody rebalances.
    let mut params = join_params("", &[]);
    params.instance_id = Some("i1".into());
    let replaced = join_with(groups, params).await;
    let summary = groups.describe(GROUP).unwrap();
    assert_eq!(
        (summary.group_type, summary.state),
        ("classic", GroupState::Stable)
    );
    assert_eq!(replaced.generation, 2);
    let mut got = sync(groups, &replaced, None).await.unwrap();
    got.sort_unstable();
    let mut expected = kept.clone();
    expected.sort_unstable();
    assert_eq!(
        got, expected,
        "the newcomer holds the replaced member's partitions"
    );
    assert_eq!(
        groups.heartbeat(GROUP, &b.member_id, 2, None),
        ErrorCode::NoError
    );
}

async fn join_with(groups: &GroupCoordinator, params: JoinParams) -> JoinAnswer {
    let answer = groups.join(GROUP, params).await;
    assert_eq!(answer.error, ErrorCode::NoError, "{answer:?}");
    answer
}
