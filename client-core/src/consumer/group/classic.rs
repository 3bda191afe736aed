//! Membership on the classic protocol: JoinGroup / SyncGroup / Heartbeat, the leader's
//! assignment, eager and cooperative (KIP-429) rebalances, static members.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::membership::{
    commit_positions, give_back_on_close, lose, minus, revoke, settled, wait_for_poll, JoinInfo,
    Membership, Progress, Topics,
};
use super::{decode_assignment, decode_subscription, encode_assignment, encode_subscription};
use super::{Assignor, GroupClient, Subscription};
use crate::cluster::backoff::Retry;
use crate::consumer::shared::Shared;
use crate::{Error, ErrorCode};

async fn topic_names(shared: &Shared, topics: &Topics) -> Vec<String> {
    match topics {
        Topics::Names(n) => n.clone(),
        Topics::Pattern(re) => {
            let meta = shared
                .cluster
                .refresh_all()
                .await
                .unwrap_or_else(|_| shared.cluster.metadata());
            let mut names: Vec<String> = meta
                .topics
                .keys()
                .filter(|t| !t.starts_with("__") && re.is_match(t))
                .cloned()
                .collect();
            names.sort();
            names
        }
    }
}

async fn partition_counts(shared: &Shared, topics: &[String]) -> HashMap<String, i32> {
    let mut out = HashMap::new();
    let deadline = Instant::now() + shared.cluster.config().request_timeout;
    for t in topics {
        if let Ok(info) = shared.cluster.topic(t, deadline).await {
            out.insert(t.clone(), info.partitions.len() as i32);
        }
    }
    out
}

/// The membership task on the classic protocol: runs until the consumer unsubscribes or closes.
pub(super) async fn run(shared: Arc<Shared>, m: Arc<Membership>) {
    let cfg = shared.cluster.config().consumer.clone();
    let assignors: Vec<Assignor> = cfg
        .assignors
        .iter()
        .filter_map(|a| Assignor::from_name(a))
        .collect();
    let Some(group) = shared.group.clone() else {
        return;
    };
    // Failed joins and syncs in a row back off exponentially (KIP-580).
    let mut retry = Retry::default();
    let mut cooperative = false;
    'rejoin: while !m.stop.load(Ordering::Acquire) {
        // Eager protocols give everything back before joining.
        let owned = m.assigned();
        if !cooperative && !owned.is_empty() {
            revoke(&shared, &m, &owned, cfg.enable_auto_commit).await;
            m.set_assigned(Vec::new());
        }
        let join_started = Instant::now();
        let topics = topic_names(&shared, &m.topics).await;
        let owned = m.assigned();
        let protocols: Vec<(String, bytes::Bytes)> = assignors
            .iter()
            .filter_map(|a| {
                let s = Subscription {
                    topics: topics.clone(),
                    owned: owned.clone(),
                    user_data: None,
                };
                encode_subscription(&s)
                    .ok()
                    .map(|b| (a.name().to_string(), b))
            })
            .collect();
        let joined = {
            let mut g = group.lock().await;
            g.join(
                protocols,
                cfg.session_timeout.as_millis() as i32,
                cfg.max_poll_interval.as_millis() as i32,
            )
            .await
        };
        let resp = match joined {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(error = %e, "join request failed; retrying");
                shared.cluster.on_error(&e);
                retry.wait(shared.cluster.config()).await;
                continue;
            }
        };
        let code = ErrorCode::from_code(resp.error_code);
        match code {
            ErrorCode::NoError => {}
            ErrorCode::MemberIdRequired => {
                group.lock().await.member_id = resp.member_id.to_string();
                continue;
            }
            ErrorCode::UnknownMemberId | ErrorCode::IllegalGeneration => {
                group.lock().await.member_id.clear();
                continue;
            }
            ErrorCode::RebalanceInProgress => continue,
            ErrorCode::FencedInstanceId
            | ErrorCode::GroupAuthorizationFailed
            | ErrorCode::InvalidSessionTimeout => {
                tracing::error!(error = %code, "cannot join the group");
                shared.set_error(Error::Kafka(code));
                return;
            }
            other => {
                tracing::debug!(error = %other, "join failed; retrying");
                retry.wait(shared.cluster.config()).await;
                continue;
            }
        }
        let protocol = resp
            .protocol_name
            .as_ref()
            .map(|p| p.to_string())
            .unwrap_or_default();
        let assignor = Assignor::from_name(&protocol).unwrap_or(Assignor::Range);
        cooperative = assignor.is_cooperative();
        m.cooperative.store(cooperative, Ordering::Release);
        {
            let mut g = group.lock().await;
            g.member_id = resp.member_id.to_string();
            g.generation = resp.generation_id;
        }
        let assignments = if resp.leader == resp.member_id {
            let mut members: BTreeMap<String, Subscription> = BTreeMap::new();
            for member in &resp.members {
                if let Ok(s) = decode_subscription(&member.metadata) {
                    members.insert(member.member_id.to_string(), s);
                }
            }
            let all_topics: Vec<String> = {
                let mut t: Vec<String> = members.values().flat_map(|s| s.topics.clone()).collect();
                t.sort();
                t.dedup();
                t
            };
            let counts = partition_counts(&shared, &all_topics).await;
            let plan = assignor.assign(&members, &counts);
            plan.into_iter()
                .filter_map(|(member, parts)| encode_assignment(&parts).ok().map(|b| (member, b)))
                .collect()
        } else {
            Vec::new()
        };
        let synced = group.lock().await.sync(&protocol, assignments).await;
        let new = match synced.and_then(|b| decode_assignment(&b)) {
            Ok(n) => n,
            Err(Error::Kafka(ErrorCode::UnknownMemberId)) => {
                group.lock().await.member_id.clear();
                continue;
            }
            // A rebalance that moved on rejoins at once (as Java does); any other failure
            // (the coordinator moved or is unreachable) backs off first.
            Err(
                e @ Error::Kafka(ErrorCode::RebalanceInProgress | ErrorCode::IllegalGeneration),
            ) => {
                tracing::debug!(error = %e, "sync failed; rejoining");
                continue;
            }
            Err(e) => {
                tracing::debug!(error = %e, "sync failed; rejoining after a backoff");
                shared.cluster.on_error(&e);
                retry.wait(shared.cluster.config()).await;
                continue;
            }
        };
        retry.succeeded();
        let revoked = minus(&owned, &new);
        if !revoked.is_empty() {
            revoke(&shared, &m, &revoked, cfg.enable_auto_commit).await;
        }
        let added = minus(&new, &owned);
        m.joined(JoinInfo {
            member_id: resp.member_id.to_string(),
            generation: resp.generation_id,
            leader_id: resp.leader.to_string(),
            is_leader: resp.leader == resp.member_id,
            protocol: protocol.clone(),
            duration: join_started.elapsed(),
        });
        m.set_assigned(new.clone());
        match &m.listener {
            Some(l) if l.applies_assignment() => {
                l.on_assigned(&added);
                if !settled(l.as_ref(), cfg.max_poll_interval).await {
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
        tracing::info!(generation = resp.generation_id, partitions = new.len(), protocol = %protocol, "joined group");
        if cooperative && !revoked.is_empty() {
            // Follow-up rebalance so the revoked partitions reach their new owners.
            continue 'rejoin;
        }
        let mut next_commit = Instant::now() + cfg.auto_commit_interval;
        let mut last_beat_ok = Instant::now();
        let heartbeater = group.lock().await.heartbeater();
        // A coordinator that stopped answering: close its connection (a commit waiting on it
        // holds the group client) and look for the coordinator again. Never waits for the
        // group client's lock: the request holding it may be the one hung.
        let give_up_on_coordinator = || {
            // Forgotten first, then closed: a commit the close fails may be retried at once,
            // and must not go back to the same coordinator.
            if let Some(node) = heartbeater.give_up() {
                shared
                    .cluster
                    .close_coordinator_connection(node, "coordinator unanswered for the session");
            }
        };
        loop {
            tokio::select! {
                _ = tokio::time::sleep(cfg.heartbeat_interval) => {}
                _ = m.wake.notified() => {}
            }
            if m.stop.load(Ordering::Acquire) {
                break 'rejoin;
            }
            if cfg.enable_auto_commit && Instant::now() >= next_commit {
                let owned = m.assigned();
                let commit = commit_positions(&shared, Some(&owned), Progress::Processed);
                match tokio::time::timeout(beat_budget(&cfg, last_beat_ok), commit).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::debug!(error = %e, "auto-commit failed"),
                    Err(_) => {
                        tracing::debug!(
                            "auto-commit unanswered: looking for the coordinator again"
                        );
                        give_up_on_coordinator();
                    }
                }
                next_commit = Instant::now() + cfg.auto_commit_interval;
            }
            let idle = m.last_poll.lock().map(|t| t.elapsed()).unwrap_or_default();
            if idle > cfg.max_poll_interval {
                tracing::warn!(
                    "max.poll.interval.ms exceeded: leaving the group until the next poll"
                );
                let lost = m.assigned();
                let _ = group.lock().await.leave().await;
                lose(&shared, &m, &lost, cfg.max_poll_interval).await;
                // Wait for the application to poll again before rejoining.
                if !wait_for_poll(&m, cfg.max_poll_interval).await {
                    break 'rejoin;
                }
                continue 'rejoin;
            }
            // Without the group client's lock (see `client::Heartbeater`), except to
            // double-check an unknown-member answer with another broker.
            let beat = async {
                match heartbeater.beat().await {
                    Err(Error::Kafka(code)) if GroupClient::is_membership_error(code) => {
                        group.lock().await.heartbeat().await
                    }
                    answer => answer,
                }
            };
            let beat = match tokio::time::timeout(beat_budget(&cfg, last_beat_ok), beat).await {
                Ok(beat) => beat,
                Err(_) => {
                    give_up_on_coordinator();
                    Err(Error::Timeout(
                        "no heartbeat answer within session.timeout.ms: looking for the coordinator again".into(),
                    ))
                }
            };
            match beat {
                Ok(()) => {
                    let gap = last_beat_ok.elapsed();
                    if gap > cfg.heartbeat_interval * 3 {
                        tracing::debug!(
                            gap_ms = gap.as_millis() as u64,
                            "heartbeat answered after a gap"
                        );
                    }
                    last_beat_ok = Instant::now();
                }
                Err(Error::Kafka(ErrorCode::RebalanceInProgress)) => continue 'rejoin,
                Err(Error::Kafka(
                    code @ (ErrorCode::IllegalGeneration
                    | ErrorCode::UnknownMemberId
                    | ErrorCode::FencedInstanceId),
                )) => {
                    let lost = m.assigned();
                    lose(&shared, &m, &lost, cfg.max_poll_interval).await;
                    if code == ErrorCode::UnknownMemberId {
                        group.lock().await.member_id.clear();
                    }
                    if code == ErrorCode::FencedInstanceId {
                        shared.set_error(Error::Kafka(code));
                        return;
                    }
                    continue 'rejoin;
                }
                Err(e) => tracing::debug!(error = %e, "heartbeat failed; retrying"),
            }
        }
    }
    // Leaving: commit what was delivered, then leave (dynamic members only).
    give_back_on_close(&shared, &m, cfg.enable_auto_commit).await;
    if let Err(e) = group.lock().await.leave().await {
        tracing::debug!(error = %e, "leaving the group failed; the session will expire instead");
    }
    m.set_assigned(Vec::new());
    m.stopped.notify_waiters();
}

/// How long the next heartbeat (or auto-commit) may wait for the coordinator: what is left of
/// the session since the last answered heartbeat, at least one heartbeat interval. A
/// coordinator that stops answering (a hung broker) is given up on once the session would
/// expire, as the Java client does, so the member finds the new coordinator (which keeps its
/// membership) before the session ends there too.
fn beat_budget(cfg: &crate::config::ConsumerConfig, last_beat_ok: Instant) -> Duration {
    cfg.session_timeout
        .saturating_sub(last_beat_ok.elapsed())
        .max(cfg.heartbeat_interval)
}
