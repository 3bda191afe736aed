//! Position validation after a leader change (KIP-320).
//!
//! The consumer remembers the leader epoch of the last batch it consumed from each partition.
//! When metadata shows a newer leader epoch for a partition, the log may have been truncated
//! on the new leader (an unclean election, or records the old leader never replicated): the
//! consumer stops fetching that partition and asks the new leader with OffsetForLeaderEpoch
//! where the last consumed epoch ends in its log. If it ends before our position, the records
//! past that point are gone or different, so the position moves back to that end offset (the
//! first offset known to diverge) and nothing the new leader holds is skipped. An undefined
//! answer (the leader knows no such epoch) resets the position per `auto.offset.reset`. With
//! `auto.offset.reset=none` either case is reported from `poll` as [`Error::LogTruncation`]
//! (Java's `LogTruncationException`, a kind of `OffsetOutOfRangeException`; librdkafka's
//! `_LOG_TRUNCATION` in the bindings) and the position stays. This follows the Java
//! consumer's `SubscriptionState` rules.

use std::collections::HashMap;

use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{ApiKey, BrokerId, OffsetForLeaderEpochRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::shared::Shared;
use super::state::{PartState, Reset};
use crate::config::OffsetReset;
use crate::types::TopicPartition;
use crate::{Error, ErrorCode};

/// First OffsetForLeaderEpoch version a consumer may use (it carries `replica_id`; Java skips
/// validation against brokers without it).
const MIN_VERSION: i16 = 3;
/// `replica_id` of a consumer in OffsetForLeaderEpoch.
const CONSUMER_REPLICA_ID: i32 = -1;

/// What an OffsetForLeaderEpoch answer means for a position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The log still holds everything up to the position: fetch on.
    Valid,
    /// The log diverges before the position: continue from `offset` (with `epoch` as the last
    /// consumed epoch).
    Diverged {
        /// The end offset of our last consumed epoch on the new leader.
        offset: i64,
        /// The epoch that offset ends.
        epoch: i32,
    },
    /// The leader does not know the epoch: look the position up per `auto.offset.reset`.
    Reset(Reset),
    /// Ask again after a metadata refresh.
    Retry,
    /// The log was truncated below the position and there is no policy to move it: report
    /// it, with the first offset known to diverge (`None`: the leader does not know the epoch).
    Truncated(Option<i64>),
    /// Raise this Kafka error from `poll`.
    Fail(ErrorCode),
}

/// The decision for a partition at `position` given the leader's answer `(error, epoch,
/// end_offset)` and the `auto.offset.reset` policy.
pub(crate) fn decide(
    position: i64,
    error: ErrorCode,
    epoch: i32,
    end_offset: i64,
    policy: OffsetReset,
) -> Verdict {
    let reset = match policy {
        OffsetReset::Earliest => Some(Reset::Earliest),
        OffsetReset::Latest => Some(Reset::Latest),
        OffsetReset::None => None,
    };
    if !error.is_ok() {
        return if error.is_retriable() || error.invalidates_metadata() {
            Verdict::Retry
        } else {
            Verdict::Fail(error)
        };
    }
    if epoch < 0 || end_offset < 0 {
        return match reset {
            Some(r) => Verdict::Reset(r),
            None => Verdict::Truncated(None),
        };
    }
    if end_offset < position {
        return match reset {
            Some(_) => Verdict::Diverged {
                offset: end_offset,
                epoch,
            },
            None => Verdict::Truncated(Some(end_offset)),
        };
    }
    Verdict::Valid
}

/// Notes the leader epoch metadata reports for a partition: a newer one than the partition
/// was fetched under makes it wait for validation (when it has consumed something).
pub(crate) fn observe_leader_epoch(p: &mut PartState, epoch: i32) {
    if epoch < 0 {
        return;
    }
    match p.leader_epoch {
        Some(known) if epoch > known => {
            p.leader_epoch = Some(epoch);
            if p.last_epoch.is_some() && p.position.is_some() {
                p.awaiting_validation = true;
            }
        }
        Some(_) => {}
        None => p.leader_epoch = Some(epoch),
    }
}

/// One partition waiting for validation.
struct Pending {
    tp: TopicPartition,
    position: i64,
    last_epoch: i32,
    current_epoch: i32,
    generation: u64,
}

/// Validates every partition waiting for it, one OffsetForLeaderEpoch per leader.
pub(crate) async fn validate_positions(shared: &Shared) {
    let meta = shared.cluster.metadata();
    let mut by_leader: HashMap<i32, Vec<Pending>> = HashMap::new();
    {
        let state = shared.lock();
        for (tp, p) in &state.parts {
            if !p.awaiting_validation {
                continue;
            }
            let (Some(position), Some(last_epoch), Some(current_epoch)) =
                (p.position, p.last_epoch, p.leader_epoch)
            else {
                continue;
            };
            let Some(leader) = meta.leader(&tp.topic, tp.partition) else {
                continue;
            };
            by_leader.entry(leader).or_default().push(Pending {
                tp: tp.clone(),
                position,
                last_epoch,
                current_epoch,
                generation: p.generation,
            });
        }
    }
    for (leader, pending) in by_leader {
        let answers = match ask(shared, leader, &pending).await {
            Ok(a) => a,
            Err(e) => {
                tracing::debug!(broker = leader, error = %e, "position validation failed; will retry");
                shared.cluster.on_error(&e);
                continue;
            }
        };
        apply(shared, &pending, &answers);
    }
}

/// `(error, epoch, end offset)` per partition from the leader, or `None` per partition when the
/// broker is too old to validate against (positions are then taken as valid, as Java does).
async fn ask(
    shared: &Shared,
    leader: i32,
    pending: &[Pending],
) -> crate::Result<HashMap<TopicPartition, Option<(ErrorCode, i32, i64)>>> {
    let conn = shared.cluster.connection(leader).await?;
    let usable = conn
        .versions()
        .version(ApiKey::OffsetForLeaderEpoch)
        .is_ok_and(|v| v >= MIN_VERSION);
    if !usable {
        return Ok(pending.iter().map(|p| (p.tp.clone(), None)).collect());
    }
    let mut topics: Vec<OffsetForLeaderTopic> = Vec::new();
    for p in pending {
        let part = OffsetForLeaderPartition::default()
            .with_partition(p.tp.partition)
            .with_current_leader_epoch(p.current_epoch)
            .with_leader_epoch(p.last_epoch);
        match topics
            .iter_mut()
            .find(|t| t.topic.as_str() == p.tp.topic.as_ref())
        {
            Some(t) => t.partitions.push(part),
            None => topics.push(
                OffsetForLeaderTopic::default()
                    .with_topic(TopicName(StrBytes::from_string(p.tp.topic.to_string())))
                    .with_partitions(vec![part]),
            ),
        }
    }
    let request = OffsetForLeaderEpochRequest::default()
        .with_replica_id(BrokerId(CONSUMER_REPLICA_ID))
        .with_topics(topics);
    let response = conn.send(&request).await?;
    let mut out = HashMap::new();
    for t in response.topics {
        for p in t.partitions {
            let tp = TopicPartition {
                topic: t.topic.to_string().into(),
                partition: p.partition,
            };
            let code = ErrorCode::from_code(p.error_code);
            out.insert(tp, Some((code, p.leader_epoch, p.end_offset)));
        }
    }
    Ok(out)
}

/// Applies the answers to partitions whose position did not move meanwhile.
fn apply(
    shared: &Shared,
    pending: &[Pending],
    answers: &HashMap<TopicPartition, Option<(ErrorCode, i32, i64)>>,
) {
    let mut state = shared.lock();
    let mut woke_poll = false;
    for pend in pending {
        let Some(p) = state.parts.get_mut(&pend.tp) else {
            continue;
        };
        if p.generation != pend.generation || p.position != Some(pend.position) {
            continue;
        }
        let policy = shared.reset_policy(&pend.tp.topic);
        let verdict = match answers.get(&pend.tp) {
            Some(Some((code, epoch, end))) => decide(pend.position, *code, *epoch, *end, policy),
            Some(None) => Verdict::Valid,
            None => Verdict::Retry,
        };
        match verdict {
            Verdict::Valid => p.awaiting_validation = false,
            Verdict::Diverged { offset, epoch } => {
                tracing::info!(
                    topic = %pend.tp.topic,
                    partition = pend.tp.partition,
                    position = pend.position,
                    offset,
                    "log truncation detected: moving back to the first offset known to diverge"
                );
                p.seek(offset);
                p.last_epoch = Some(epoch);
            }
            Verdict::Reset(reset) => {
                tracing::info!(
                    topic = %pend.tp.topic,
                    partition = pend.tp.partition,
                    position = pend.position,
                    "log truncation detected with an unknown epoch: resetting the position"
                );
                p.request_reset(reset);
            }
            Verdict::Retry => shared.cluster.invalidate(),
            Verdict::Truncated(divergent_offset) => {
                tracing::warn!(
                    topic = %pend.tp.topic,
                    partition = pend.tp.partition,
                    position = pend.position,
                    ?divergent_offset,
                    "log truncation detected and auto.offset.reset is none: reporting it"
                );
                p.awaiting_validation = false;
                p.error = Some(Error::LogTruncation {
                    topic: pend.tp.topic.to_string(),
                    partition: pend.tp.partition,
                    position: pend.position,
                    divergent_offset,
                });
                woke_poll = true;
            }
            Verdict::Fail(e) => {
                p.awaiting_validation = false;
                p.error = Some(Error::Kafka(e));
                woke_poll = true;
            }
        }
    }
    drop(state);
    if woke_poll {
        shared.data_ready.notify_waiters();
    }
    shared.fetch_wake.notify_one();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_epoch_ending_at_or_after_the_position_is_valid() {
        let v = decide(100, ErrorCode::NoError, 3, 100, OffsetReset::Earliest);
        assert_eq!(v, Verdict::Valid);
        let v = decide(100, ErrorCode::NoError, 3, 250, OffsetReset::None);
        assert_eq!(v, Verdict::Valid);
    }

    #[test]
    fn truncation_moves_back_to_the_divergence_point_or_fails_without_a_policy() {
        let v = decide(100, ErrorCode::NoError, 2, 80, OffsetReset::Latest);
        assert_eq!(
            v,
            Verdict::Diverged {
                offset: 80,
                epoch: 2
            }
        );
        let v = decide(100, ErrorCode::NoError, 2, 80, OffsetReset::None);
        assert_eq!(v, Verdict::Truncated(Some(80)));
    }

    #[test]
    fn an_unknown_epoch_resets_per_policy() {
        for (epoch, end) in [(-1, 50), (4, -1)] {
            let v = decide(100, ErrorCode::NoError, epoch, end, OffsetReset::Earliest);
            assert_eq!(v, Verdict::Reset(Reset::Earliest));
            let v = decide(100, ErrorCode::NoError, epoch, end, OffsetReset::Latest);
            assert_eq!(v, Verdict::Reset(Reset::Latest));
            let v = decide(100, ErrorCode::NoError, epoch, end, OffsetReset::None);
            assert_eq!(v, Verdict::Truncated(None));
        }
    }

    #[test]
    fn stale_or_fenced_epochs_retry_and_other_errors_fail() {
        for code in [
            ErrorCode::FencedLeaderEpoch,
            ErrorCode::UnknownLeaderEpoch,
            ErrorCode::NotLeaderOrFollower,
        ] {
            assert_eq!(
                decide(100, code, -1, -1, OffsetReset::Earliest),
                Verdict::Retry
            );
        }
        let v = decide(
            100,
            ErrorCode::TopicAuthorizationFailed,
            -1,
            -1,
            OffsetReset::Earliest,
        );
        assert_eq!(v, Verdict::Fail(ErrorCode::TopicAuthorizationFailed));
    }

    fn tp(p: i32) -> TopicPartition {
        TopicPartition {
            topic: "t".into(),
            partition: p,
        }
    }

    /// A consumer's shared state with partitions 0..3 at position 100, last consumed epoch 2,
    /// now led under epoch 3 and waiting for validation.
    fn shared(policy: &str) -> Shared {
        let config = crate::ClientConfig::from_map([
            ("bootstrap.servers", "127.0.0.1:9"),
            ("auto.offset.reset", policy),
        ])
        .unwrap();
        let shared = Shared {
            cluster: crate::cluster::Cluster::new(config),
            state: std::sync::Mutex::new(super::super::state::State::default()),
            fetch_wake: tokio::sync::Notify::new(),
            data_ready: tokio::sync::Notify::new(),
            group: None,
            error: std::sync::Mutex::new(None),
            committed: None,
            resets: Default::default(),
        };
        for i in 0..3 {
            let mut p = PartState::new(None);
            p.seek(100);
            p.last_epoch = Some(2);
            p.leader_epoch = Some(3);
            p.awaiting_validation = true;
            shared.lock().parts.insert(tp(i), p);
        }
        shared
    }

    fn pending(shared: &Shared) -> Vec<Pending> {
        let state = shared.lock();
        (0..3)
            .map(|i| Pending {
                tp: tp(i),
                position: 100,
                last_epoch: 2,
                current_epoch: 3,
                generation: state.parts[&tp(i)].generation,
            })
            .collect()
    }

    #[test]
    fn scripted_answers_move_validate_or_reset_positions() {
        let shared = shared("earliest");
        let answers = HashMap::from([
            (tp(0), Some((ErrorCode::NoError, 2, 80))),
            (tp(1), Some((ErrorCode::NoError, 2, 140))),
            (tp(2), Some((ErrorCode::NoError, -1, -1))),
        ]);
        apply(&shared, &pending(&shared), &answers);
        let state = shared.lock();
        let p0 = &state.parts[&tp(0)];
        assert_eq!((p0.position, p0.fetch_offset), (Some(80), Some(80)));
        assert_eq!(p0.last_epoch, Some(2));
        assert!(!p0.awaiting_validation);
        let p1 = &state.parts[&tp(1)];
        assert_eq!((p1.position, p1.awaiting_validation), (Some(100), false));
        let p2 = &state.parts[&tp(2)];
        assert_eq!((p2.position, p2.reset), (None, Some(Reset::Earliest)));
    }

    #[test]
    fn a_moved_position_ignores_the_answer_and_none_policy_fails() {
        let shared = shared("none");
        let pending = pending(&shared);
        shared.lock().parts.get_mut(&tp(1)).unwrap().seek(500);
        let answers = HashMap::from([
            (tp(0), Some((ErrorCode::NoError, 2, 80))),
            (tp(1), Some((ErrorCode::NoError, 2, 80))),
            (tp(2), Some((ErrorCode::FencedLeaderEpoch, -1, -1))),
        ]);
        apply(&shared, &pending, &answers);
        let state = shared.lock();
        let p0 = &state.parts[&tp(0)];
        match &p0.error {
            Some(
                e @ Error::LogTruncation {
                    position: 100,
                    divergent_offset: Some(80),
                    ..
                },
            ) => assert_eq!(e.kafka_code(), ErrorCode::OffsetOutOfRange),
            other => panic!("expected a log truncation: {other:?}"),
        }
        assert_eq!(p0.position, Some(100), "no silent move without a policy");
        assert_eq!(state.parts[&tp(1)].position, Some(500), "seeked meanwhile");
        let p2 = &state.parts[&tp(2)];
        assert!(
            p2.awaiting_validation && p2.error.is_none(),
            "retried later"
        );
    }

    #[test]
    fn a_newer_leader_epoch_asks_for_validation_once_something_was_consumed() {
        let mut p = PartState::new(None);
        observe_leader_epoch(&mut p, 5);
        assert_eq!(p.leader_epoch, Some(5));
        assert!(!p.awaiting_validation, "first sight is not a change");
        p.seek(10);
        observe_leader_epoch(&mut p, 6);
        assert!(
            !p.awaiting_validation,
            "nothing consumed yet: nothing to validate"
        );
        p.last_epoch = Some(6);
        observe_leader_epoch(&mut p, 6);
        observe_leader_epoch(&mut p, 4);
        observe_leader_epoch(&mut p, -1);
        assert!(!p.awaiting_validation, "same, older or unknown epoch");
        observe_leader_epoch(&mut p, 7);
        assert!(p.awaiting_validation);
        assert_eq!(p.leader_epoch, Some(7));
    }
}
