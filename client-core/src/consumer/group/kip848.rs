//! Group membership on KIP-848's consumer protocol (`group.protocol=consumer`): the member
//! heartbeats with ConsumerGroupHeartbeat, the broker computes the assignment, and the member
//! reconciles incrementally: it gives up what it lost (committing first, `on_revoked`), takes
//! what it gained (`on_assigned`), and acknowledges by reporting what it owns on the next
//! heartbeat, at once. Nothing stops the partitions it keeps.
//!
//! Errors are handled as the Java client and librdkafka handle them: FENCED_MEMBER_EPOCH and
//! UNKNOWN_MEMBER_ID lose every partition (`on_lost`) and rejoin with epoch 0 and the same
//! member id; coordinator errors look the coordinator up again and resend the full request;
//! the rest (authorization, an unsupported assignor, a full group, a bad request) stop the
//! membership and surface on `poll`.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::ConsumerGroupHeartbeatResponse;
use uuid::Uuid;

use super::client::{ConsumerHeartbeat, GroupClient};
use super::membership::{
    commit_positions, give_back_on_close, lose, minus, revoke, settled, wait_for_poll, JoinInfo,
    Membership, Progress, Topics,
};
use crate::cluster::backoff::Retry;
use crate::consumer::shared::Shared;
use crate::types::TopicPartition;
use crate::{Error, ErrorCode};

/// Member epoch that joins (or rejoins after being fenced).
const JOIN: i32 = 0;
/// Member epoch that leaves.
const LEAVE: i32 = -1;
/// Member epoch with which a static member leaves temporarily.
const STATIC_LEAVE: i32 = -2;

/// Errors after which the member cannot go on: they surface on the consumer.
fn is_fatal(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::GroupAuthorizationFailed
            | ErrorCode::InvalidRequest
            | ErrorCode::GroupMaxSizeReached
            | ErrorCode::UnsupportedAssignor
            | ErrorCode::UnsupportedVersion
            | ErrorCode::UnreleasedInstanceId
            | ErrorCode::FencedInstanceId
            | ErrorCode::GroupIdNotFound
            | ErrorCode::InvalidRegularExpression
    )
}

/// A random member id, as the Java client makes it (a random UUID in URL-safe base64).
fn new_member_id() -> String {
    use base64::Engine;
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No system randomness: the clock still makes the id unique enough for one group.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        bytes = (nanos ^ u128::from(std::process::id()) << 64).to_be_bytes();
    }
    // Version 4, variant 1, as a random UUID has them.
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The assignment as the broker sends it, by topic id.
type ById = BTreeMap<Uuid, Vec<i32>>;

fn by_id(resp: &ConsumerGroupHeartbeatResponse) -> Option<ById> {
    resp.assignment.as_ref().map(|a| {
        let mut out = ById::new();
        for tp in &a.topic_partitions {
            let ps = out.entry(tp.topic_id).or_default();
            ps.extend(tp.partitions.iter().copied());
            ps.sort_unstable();
            ps.dedup();
        }
        out
    })
}

/// Names the partitions of `target`; `None` while a topic id is not in the metadata yet.
async fn resolve(shared: &Shared, target: &ById) -> Option<Vec<TopicPartition>> {
    let names = |meta: &crate::cluster::ClusterMetadata| -> HashMap<Uuid, String> {
        meta.topics
            .values()
            .map(|t| (t.id, t.name.clone()))
            .collect()
    };
    let mut known = names(&shared.cluster.metadata());
    if target.keys().any(|id| !known.contains_key(id)) {
        if let Ok(meta) = shared.cluster.refresh_all().await {
            known = names(&meta);
        }
    }
    let mut out = Vec::new();
    for (id, ps) in target {
        let name = known.get(id)?;
        out.extend(ps.iter().map(|p| TopicPartition {
            topic: name.clone().into(),
            partition: *p,
        }));
    }
    out.sort();
    Some(out)
}

/// The owned partitions as the heartbeat reports them, by topic id.
fn owned_by_id(shared: &Shared, owned: &[TopicPartition]) -> Vec<TopicPartitions> {
    let meta = shared.cluster.metadata();
    let mut by: BTreeMap<Uuid, Vec<i32>> = BTreeMap::new();
    for tp in owned {
        if let Some(t) = meta.topics.get(tp.topic.as_ref()) {
            by.entry(t.id).or_default().push(tp.partition);
        }
    }
    by.into_iter()
        .map(|(t, ps)| {
            TopicPartitions::default()
                .with_topic_id(t)
                .with_partitions(ps)
        })
        .collect()
}

/// The membership task on the consumer protocol: runs until the consumer unsubscribes or
/// closes.
pub(crate) async fn run(shared: Arc<Shared>, m: Arc<Membership>) {
    let cfg = shared.cluster.config().consumer.clone();
    let Some(group) = shared.group.clone() else {
        return;
    };
    let (names, regex) = match &m.topics {
        Topics::Names(n) => (n.clone(), String::new()),
        Topics::Pattern(re) => (Vec::new(), re.as_str().to_string()),
    };
    // The consumer protocol is incremental: rebalance events carry only the change.
    m.cooperative.store(true, Ordering::Release);
    {
        let mut g = group.lock().await;
        if g.member_id.is_empty() {
            g.member_id = new_member_id();
        }
        g.generation = JOIN;
    }
    let mut epoch = JOIN;
    let mut interval = Duration::from_millis(5000);
    // Whether the next heartbeat carries everything (joining, or after an error).
    let mut full = true;
    // Whether the next heartbeat acknowledges a change of what the member owns (sent at once).
    let mut ack = false;
    // The assignment last received and not yet applied (a topic id not in the metadata yet).
    let mut pending: Option<ById> = None;
    // When the heartbeat response with the target being applied arrived (GROUP_JOIN duration).
    let mut target_at = Instant::now();
    let mut retry = Retry::default();
    let mut next_commit = Instant::now() + cfg.auto_commit_interval;
    loop {
        if m.stop.load(Ordering::Acquire) {
            break;
        }
        if cfg.enable_auto_commit && epoch > 0 && Instant::now() >= next_commit {
            let owned = m.assigned();
            if let Err(e) = commit_positions(&shared, Some(&owned), Progress::Processed).await {
                tracing::debug!(error = %e, "auto-commit failed");
            }
            next_commit = Instant::now() + cfg.auto_commit_interval;
        }
        let idle = m.last_poll.lock().map(|t| t.elapsed()).unwrap_or_default();
        if idle > cfg.max_poll_interval && epoch > 0 {
            tracing::warn!("max.poll.interval.ms exceeded: leaving the group until the next poll");
            let lost = m.assigned();
            leave(&group, LEAVE, cfg.group_instance_id.clone()).await;
            lose(&shared, &m, &lost, cfg.max_poll_interval).await;
            epoch = JOIN;
            full = true;
            // Rejoins once the application polls again (or stops).
            wait_for_poll(&m, cfg.max_poll_interval).await;
            continue;
        }
        let owned = m.assigned();
        let request = ConsumerHeartbeat {
            member_epoch: epoch,
            instance_id: if full {
                cfg.group_instance_id.clone()
            } else {
                None
            },
            rack_id: (full && !cfg.client_rack.is_empty()).then(|| cfg.client_rack.clone()),
            rebalance_timeout_ms: if full {
                cfg.max_poll_interval.as_millis().min(i32::MAX as u128) as i32
            } else {
                -1
            },
            topic_names: full.then(|| names.clone()),
            topic_regex: full.then(|| regex.clone()),
            server_assignor: if full {
                cfg.remote_assignor.clone()
            } else {
                None
            },
            owned: (full || ack).then(|| {
                if epoch == JOIN {
                    Vec::new()
                } else {
                    owned_by_id(&shared, &owned)
                }
            }),
        };
        let budget = cfg.max_poll_interval.max(interval * 3);
        let sent = tokio::time::timeout(budget, async {
            group.lock().await.consumer_heartbeat(&request).await
        })
        .await
        .unwrap_or_else(|_| Err(Error::Timeout("no heartbeat answer".into())));
        let resp = match sent {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(error = %e, "consumer group heartbeat failed; retrying");
                shared.cluster.on_error(&e);
                group.lock().await.forget_coordinator();
                full = true;
                let wait = retry.failed(shared.cluster.config());
                wake_or_sleep(&m, wait).await;
                continue;
            }
        };
        let code = ErrorCode::from_code(resp.error_code);
        match code {
            ErrorCode::NoError => {}
            ErrorCode::FencedMemberEpoch | ErrorCode::UnknownMemberId => {
                tracing::info!(error = %code, "fenced by the group coordinator: rejoining");
                let lost = m.assigned();
                lose(&shared, &m, &lost, cfg.max_poll_interval).await;
                epoch = JOIN;
                group.lock().await.generation = JOIN;
                full = true;
                pending = None;
                continue;
            }
            c if GroupClient::is_coordinator_error(c) => {
                full = true;
                let wait = retry.failed(shared.cluster.config());
                wake_or_sleep(&m, wait).await;
                continue;
            }
            ErrorCode::TopicAuthorizationFailed => {
                tracing::warn!(
                    message = resp.error_message.as_deref().unwrap_or(""),
                    "not authorized to describe a subscribed topic"
                );
                shared.set_error(Error::Kafka(code));
                full = true;
                wake_or_sleep(&m, interval).await;
                continue;
            }
            c if is_fatal(c) => {
                tracing::error!(
                    error = %c,
                    message = resp.error_message.as_deref().unwrap_or(""),
                    "cannot be a member of the group"
                );
                shared.set_error(Error::Kafka(c));
                let lost = m.assigned();
                lose(&shared, &m, &lost, cfg.max_poll_interval).await;
                m.stopped.notify_waiters();
                return;
            }
            other => {
                tracing::debug!(error = %other, "consumer group heartbeat refused; retrying");
                full = true;
                let wait = retry.failed(shared.cluster.config());
                wake_or_sleep(&m, wait).await;
                continue;
            }
        }
        retry.succeeded();
        full = false;
        ack = false;
        if let Some(id) = resp.member_id.as_ref().filter(|id| !id.is_empty()) {
            group.lock().await.member_id = id.to_string();
        }
        epoch = resp.member_epoch;
        group.lock().await.generation = epoch;
        if resp.heartbeat_interval_ms > 0 {
            interval = Duration::from_millis(resp.heartbeat_interval_ms as u64);
        }
        if let Some(target) = by_id(&resp) {
            pending = Some(target);
            target_at = Instant::now();
        }
        if let Some(target) = pending.take() {
            match resolve(&shared, &target).await {
                Some(new) => {
                    let join = JoinInfo {
                        member_id: group.lock().await.member_id.clone(),
                        generation: epoch,
                        protocol: cfg.remote_assignor.clone().unwrap_or_default(),
                        ..JoinInfo::default()
                    };
                    reconcile(
                        &shared,
                        &m,
                        new,
                        cfg.enable_auto_commit,
                        cfg.max_poll_interval,
                    )
                    .await;
                    m.joined(JoinInfo {
                        duration: target_at.elapsed(),
                        ..join
                    });
                    // Acknowledge what the member owns now, without waiting for the interval.
                    ack = true;
                    continue;
                }
                None => pending = Some(target),
            }
        }
        wake_or_sleep(&m, interval).await;
    }
    // Leaving: commit what was delivered, give the partitions back, then leave.
    give_back_on_close(&shared, &m, cfg.enable_auto_commit && epoch > 0).await;
    if epoch > 0 {
        // A static member leaves temporarily: a restart within the session gets its
        // partitions back without a rebalance.
        let leave_epoch = if cfg.group_instance_id.is_some() {
            STATIC_LEAVE
        } else {
            LEAVE
        };
        leave(&group, leave_epoch, cfg.group_instance_id.clone()).await;
    }
    m.set_assigned(Vec::new());
    m.stopped.notify_waiters();
}

/// Applies a new assignment: revoked partitions first (commit, `on_revoked`), then the added
/// ones (`on_assigned`).
async fn reconcile(
    shared: &Shared,
    m: &Membership,
    new: Vec<TopicPartition>,
    auto_commit: bool,
    max_wait: Duration,
) {
    let owned = m.assigned();
    let revoked = minus(&owned, &new);
    if !revoked.is_empty() {
        revoke(shared, m, &revoked, auto_commit).await;
    }
    let added = minus(&new, &owned);
    if added.is_empty() && revoked.is_empty() {
        return;
    }
    m.set_assigned(new.clone());
    match &m.listener {
        Some(l) if l.applies_assignment() => {
            l.on_assigned(&added);
            if !settled(l.as_ref(), max_wait).await {
                shared.set_group_assignment(&new, &added);
            }
        }
        listener => {
            shared.set_group_assignment(&new, &added);
            if let Some(l) = listener {
                l.on_assigned(&added);
            }
        }
    }
    tracing::info!(
        partitions = new.len(),
        added = added.len(),
        revoked = revoked.len(),
        "consumer group assignment reconciled"
    );
}

async fn leave(group: &tokio::sync::Mutex<GroupClient>, epoch: i32, instance_id: Option<String>) {
    let request = ConsumerHeartbeat {
        member_epoch: epoch,
        instance_id,
        ..ConsumerHeartbeat::leaving()
    };
    let mut g = group.lock().await;
    if let Err(e) = g.consumer_heartbeat(&request).await {
        tracing::debug!(error = %e, "leaving the group failed; the session will expire instead");
    }
    g.generation = -1;
}

async fn wake_or_sleep(m: &Membership, wait: Duration) {
    tokio::select! {
        _ = tokio::time::sleep(wait) => {}
        _ = m.wake.notified() => {}
    }
}
