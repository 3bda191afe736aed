//! The offset store and commits, with librdkafka's semantics.
//!
//! A commit without explicit offsets sends the *stored* offsets: with
//! `enable.auto.offset.store` (the default) a record's offset + 1 is stored when the record is
//! handed to the application, otherwise only `store_offsets` stores. Only offsets that changed
//! since this client last committed them are sent; nothing to send is `_NO_OFFSET`.
//! `enable.auto.commit` commits the stored offsets every `auto.commit.interval.ms`, when
//! partitions are revoked, and on close. The core's own auto-commit (of fetch positions, which
//! run ahead of what the application has seen) is switched off by this layer.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use odradek::producer::TopicPartition;
use odradek::ErrorCode;

use super::{lock, Inner};
use crate::{codes, ClientError, Stage};

/// One offset to commit or store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitOffset {
    /// The partition.
    pub partition: TopicPartition,
    /// The offset of the next record to consume (a consumed record's offset + 1).
    pub offset: i64,
    /// Metadata committed with the offset.
    pub metadata: Option<String>,
}

/// What a commit sends.
#[derive(Debug, Clone)]
pub enum CommitSource {
    /// The stored offsets of assigned partitions that changed since they were last committed
    /// (`commit()` without arguments).
    Stored,
    /// Exactly these offsets (`commit(offsets=...)`, `commit(message=...)` as offset + 1).
    Offsets(Vec<CommitOffset>),
}

/// One partition's result in a [`CommitReport`].
#[derive(Debug, Clone)]
pub struct CommittedOffset {
    /// The partition.
    pub partition: TopicPartition,
    /// The offset sent.
    pub offset: i64,
    /// The broker's error for this partition.
    pub error: Option<ClientError>,
}

/// The outcome of a commit: `error` is the request's error, or the first partition's error.
#[derive(Debug, Clone)]
pub struct CommitReport {
    /// `None` when every partition was committed.
    pub error: Option<ClientError>,
    /// Per partition, in request order (empty when nothing was sent).
    pub offsets: Vec<CommittedOffset>,
}

impl CommitReport {
    fn failed(error: ClientError) -> Self {
        CommitReport {
            error: Some(error),
            offsets: Vec::new(),
        }
    }

    /// `Ok(offsets)` when everything was committed, else the error.
    pub fn into_result(self) -> Result<Vec<CommittedOffset>, ClientError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.offsets),
        }
    }
}

/// Stored offsets and what this client last committed, per partition.
#[derive(Debug, Default)]
pub(crate) struct OffsetStore {
    stored: HashMap<TopicPartition, (i64, Option<String>)>,
    committed: HashMap<TopicPartition, i64>,
}

impl OffsetStore {
    /// Stores `offset` (the next record to consume) for a partition.
    pub fn store(&mut self, tp: &TopicPartition, offset: i64, metadata: Option<String>) {
        match self.stored.get_mut(tp) {
            Some(slot) => *slot = (offset, metadata),
            None => {
                self.stored.insert(tp.clone(), (offset, metadata));
            }
        }
    }

    /// Stored offsets of partitions `wanted` accepts that differ from the last commit.
    pub fn pending(&self, wanted: impl Fn(&TopicPartition) -> bool) -> Vec<CommitOffset> {
        let mut out: Vec<CommitOffset> = self
            .stored
            .iter()
            .filter(|(tp, (o, _))| wanted(tp) && self.committed.get(*tp) != Some(o))
            .map(|(tp, (o, m))| CommitOffset {
                partition: tp.clone(),
                offset: *o,
                metadata: m.clone(),
            })
            .collect();
        out.sort_by(|a, b| {
            (&a.partition.topic, a.partition.partition)
                .cmp(&(&b.partition.topic, b.partition.partition))
        });
        out
    }

    /// The offset stored for a partition, if any.
    pub fn stored_offset(&self, tp: &TopicPartition) -> Option<i64> {
        self.stored.get(tp).map(|(o, _)| *o)
    }

    /// Records a successful commit.
    pub fn committed(&mut self, tp: &TopicPartition, offset: i64) {
        self.committed.insert(tp.clone(), offset);
    }

    /// Drops what is known about partitions `keep` rejects (revoked, lost, unassigned).
    pub fn retain(&mut self, keep: impl Fn(&TopicPartition) -> bool) {
        self.stored.retain(|tp, _| keep(tp));
        self.committed.retain(|tp, _| keep(tp));
    }
}

/// Resolves what a commit sends: explicit offsets as given, or the stored ones of assigned
/// partitions (`_NO_OFFSET` when there are none).
pub(crate) fn resolve(
    inner: &Inner,
    source: CommitSource,
) -> Result<Vec<CommitOffset>, ClientError> {
    let offsets = match source {
        CommitSource::Offsets(list) => list,
        CommitSource::Stored => {
            let assigned = inner.core.assignment();
            lock(&inner.group.store).pending(|tp| assigned.contains(tp))
        }
    };
    check(offsets)
}

/// Stored offsets of `partitions` not committed yet (revoked partitions, whether or not the
/// application has unassigned them already).
pub(crate) fn stored_for(inner: &Inner, partitions: &[TopicPartition]) -> Vec<CommitOffset> {
    lock(&inner.group.store).pending(|tp| partitions.contains(tp))
}

fn check(offsets: Vec<CommitOffset>) -> Result<Vec<CommitOffset>, ClientError> {
    if offsets.is_empty() {
        return Err(ClientError::new(
            codes::NO_OFFSET,
            Some("Commit failed: no offset stored".to_string()),
        ));
    }
    if let Some(bad) = offsets.iter().find(|o| o.offset < 0) {
        return Err(ClientError::invalid_arg(format!(
            "invalid offset {} to commit for {}-{}",
            bad.offset, bad.partition.topic, bad.partition.partition
        )));
    }
    Ok(offsets)
}

/// Whether a partition's commit error is worth retrying: the coordinator moved or is loading,
/// or the request timed out. Others (UNKNOWN_TOPIC_OR_PARTITION, a stale generation) are the
/// application's to see, as librdkafka reports them.
fn retry(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::NotCoordinator
            | ErrorCode::CoordinatorNotAvailable
            | ErrorCode::CoordinatorLoadInProgress
            | ErrorCode::RequestTimedOut
    )
}

/// Sends `offsets`, retrying coordinator moves and timeouts until
/// `request.timeout.ms` passes, and records what was committed in the store.
pub(crate) async fn send(inner: Arc<Inner>, offsets: Vec<CommitOffset>) -> CommitReport {
    let list: Vec<(TopicPartition, i64, Option<String>)> = offsets
        .iter()
        .map(|o| (o.partition.clone(), o.offset, o.metadata.clone()))
        .collect();
    let config = inner.core.cluster().config();
    let deadline = Instant::now() + config.request_timeout;
    let backoff = config.retry_backoff;
    let results = loop {
        match inner.core.commit_offsets(&list).await {
            Ok(results) if Instant::now() < deadline && results.iter().any(|(_, c)| retry(*c)) => {
                tokio::time::sleep(backoff).await;
            }
            Ok(results) => break results,
            Err(e) if e.is_retriable() && Instant::now() < deadline => {
                inner.core.cluster().on_error(&e);
                tokio::time::sleep(backoff).await;
            }
            Err(e) => return CommitReport::failed(ClientError::from_core(&e, Stage::Request)),
        }
    };
    let codes: HashMap<TopicPartition, ErrorCode> = results.into_iter().collect();
    let mut report = CommitReport {
        error: None,
        offsets: Vec::with_capacity(offsets.len()),
    };
    let mut store = lock(&inner.group.store);
    for o in offsets {
        let error = match codes.get(&o.partition) {
            Some(c) if c.is_ok() => {
                store.committed(&o.partition, o.offset);
                None
            }
            Some(c) => Some(ClientError::from_core(
                &odradek::Error::Kafka(*c),
                Stage::Request,
            )),
            None => Some(ClientError::new(
                codes::BAD_MSG,
                Some("the commit response left out a partition".to_string()),
            )),
        };
        if report.error.is_none() {
            report.error = error.clone();
        }
        report.offsets.push(CommittedOffset {
            partition: o.partition,
            offset: o.offset,
            error,
        });
    }
    report
}

/// Lists the whole assignment in a report of a commit of stored offsets, as librdkafka does:
/// partitions that had nothing to commit appear with `OFFSET_INVALID` and no error.
pub(crate) fn with_assignment(
    mut report: CommitReport,
    assigned: &[TopicPartition],
) -> CommitReport {
    if report.offsets.is_empty() {
        return report;
    }
    let mut sent: HashMap<TopicPartition, CommittedOffset> = report
        .offsets
        .drain(..)
        .map(|o| (o.partition.clone(), o))
        .collect();
    for tp in assigned {
        let entry = sent.remove(tp).unwrap_or_else(|| CommittedOffset {
            partition: tp.clone(),
            offset: super::OFFSET_INVALID,
            error: None,
        });
        report.offsets.push(entry);
    }
    report.offsets.extend(sent.into_values());
    report
}

/// Commits the stored offsets of assigned partitions every `interval` while the client lives;
/// results are queued as commit events when the shell asked for them.
pub(crate) async fn auto_commit(inner: Weak<Inner>, interval: Duration) {
    let mut tick = tokio::time::interval(interval.max(Duration::from_millis(1)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if inner.is_closed() {
            return;
        }
        let Ok(offsets) = resolve(&inner, CommitSource::Stored) else {
            continue;
        };
        let report = send(inner.clone(), offsets).await;
        if let Some(e) = &report.error {
            tracing::debug!(error = %e, "auto-commit failed");
        }
        inner.push_commit_report(report);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition {
            topic: "t".into(),
            partition: p,
        }
    }

    #[test]
    fn only_changed_offsets_are_pending() {
        let mut s = OffsetStore::default();
        s.store(&tp(0), 5, None);
        s.store(&tp(1), 7, Some("m".into()));
        let all = s.pending(|_| true);
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].offset, all[1].metadata.as_deref()), (5, Some("m")));
        s.committed(&tp(0), 5);
        let left = s.pending(|_| true);
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].partition, tp(1));
        assert!(s.pending(|t| t.partition == 0).is_empty());
        s.store(&tp(0), 6, None);
        assert_eq!(s.pending(|t| t.partition == 0)[0].offset, 6);
        s.retain(|t| t.partition == 1);
        assert_eq!(s.pending(|_| true).len(), 1);
    }
}
