//! The client side of incremental fetch sessions (KIP-227), one per broker.
//!
//! A full fetch with epoch 0 lists every partition the fetcher wants and asks the broker for a
//! session. Once the broker answered with a session id, later requests on that session are
//! incremental: they list only partitions that are new or whose fetch parameters changed since
//! the session last heard of them (a partition that returned data has a new fetch offset, so it
//! is listed again), and name the ones the fetcher no longer wants in `forgotten_topics_data`.
//! The broker then answers only partitions with news (records, an error, or moved watermarks):
//! a partition missing from an incremental response simply had nothing new.
//!
//! This module decides the session id, epoch and partition lists of each request and moves the
//! session on from the response; it does no I/O. When anything goes wrong the next request is a
//! full one: after FETCH_SESSION_ID_NOT_FOUND a fresh session (id 0, epoch 0); after any other
//! top-level error or a failed request, whose effect on the broker's epoch is unknown, a full
//! fetch with the old id and epoch 0, which closes the old session and opens a new one (as the
//! Java client's `FetchSessionHandler` does). On close, [`FetchSession::close_metadata`] names
//! the session to end with epoch -1.

use std::collections::HashMap;

use crate::types::TopicPartition;
use crate::ErrorCode;

/// Session id meaning "no session".
pub(crate) const INVALID_SESSION_ID: i32 = 0;
/// Epoch of a full fetch that asks for a new session.
pub(crate) const INITIAL_EPOCH: i32 = 0;
/// Epoch of a fetch that wants no session (and closes the one it names).
pub(crate) const FINAL_EPOCH: i32 = -1;
/// First Fetch version with sessions.
pub(crate) const MIN_SESSION_VERSION: i16 = 7;

/// The epoch after `epoch` (after `i32::MAX` comes 1, as the broker counts).
pub(crate) fn next_epoch(epoch: i32) -> i32 {
    if epoch < 0 {
        FINAL_EPOCH
    } else if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

/// What one partition is fetched with; a change makes an incremental request list it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FetchParams {
    /// Offset to read from.
    pub fetch_offset: i64,
    /// `max.partition.fetch.bytes`.
    pub max_bytes: i32,
    /// The leader epoch the fetcher knows from metadata (-1: unknown), KIP-320.
    pub current_leader_epoch: i32,
}

/// The session fields and partition lists of one Fetch request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SessionRequest {
    /// `session_id` to send.
    pub session_id: i32,
    /// `session_epoch` to send.
    pub epoch: i32,
    /// Partitions to list, in order: all wanted ones for a full fetch, the added or changed
    /// ones for an incremental fetch.
    pub partitions: Vec<(TopicPartition, FetchParams)>,
    /// Partitions to drop from the session (incremental only).
    pub forgotten: Vec<TopicPartition>,
    /// Whether this is a full fetch.
    pub full: bool,
    /// Every partition the fetcher wants: the session's content if the request succeeds.
    wanted: Vec<(TopicPartition, FetchParams)>,
}

/// One broker's fetch session as the client sees it.
#[derive(Debug, Clone)]
pub(crate) struct FetchSession {
    id: i32,
    /// The epoch of the next request (0: the next request is a full fetch).
    epoch: i32,
    /// The partitions of the broker's session with the parameters it last heard.
    partitions: HashMap<TopicPartition, FetchParams>,
}

impl Default for FetchSession {
    fn default() -> Self {
        FetchSession {
            id: INVALID_SESSION_ID,
            epoch: INITIAL_EPOCH,
            partitions: HashMap::new(),
        }
    }
}

impl FetchSession {
    /// The session id (0: none).
    #[cfg(test)]
    pub fn id(&self) -> i32 {
        self.id
    }

    /// The epoch the next request will carry.
    #[cfg(test)]
    pub fn epoch(&self) -> i32 {
        self.epoch
    }

    /// The request for `wanted` (in the order the broker should read them). `full` forces a
    /// full fetch, which lists partitions in exactly this order (an incremental fetch is read in
    /// the broker's session order); `sessions` is false when the broker's Fetch version has no
    /// sessions, which makes every request a sessionless full fetch.
    pub fn request(
        &self,
        wanted: Vec<(TopicPartition, FetchParams)>,
        full: bool,
        sessions: bool,
    ) -> SessionRequest {
        if !sessions {
            return SessionRequest {
                session_id: INVALID_SESSION_ID,
                epoch: FINAL_EPOCH,
                partitions: wanted.clone(),
                forgotten: Vec::new(),
                full: true,
                wanted,
            };
        }
        if full || self.epoch == INITIAL_EPOCH || self.id == INVALID_SESSION_ID {
            return SessionRequest {
                // A known id with epoch 0 closes that session and opens a new one.
                session_id: self.id,
                epoch: INITIAL_EPOCH,
                partitions: wanted.clone(),
                forgotten: Vec::new(),
                full: true,
                wanted,
            };
        }
        let partitions = wanted
            .iter()
            .filter(|(tp, params)| self.partitions.get(tp) != Some(params))
            .cloned()
            .collect();
        let mut forgotten: Vec<TopicPartition> = self
            .partitions
            .keys()
            .filter(|tp| !wanted.iter().any(|(w, _)| w == *tp))
            .cloned()
            .collect();
        forgotten.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
        SessionRequest {
            session_id: self.id,
            epoch: self.epoch,
            partitions,
            forgotten,
            full: false,
            wanted,
        }
    }

    /// Moves the session on from the response to `request`: its top-level error and session id.
    /// Returns whether the error was a session error (the partitions were not read; the next
    /// request, a full fetch, can follow at once).
    pub fn on_response(
        &mut self,
        request: &SessionRequest,
        error: ErrorCode,
        response_session_id: i32,
    ) -> bool {
        match error {
            ErrorCode::NoError => {
                if request.epoch == FINAL_EPOCH || response_session_id == INVALID_SESSION_ID {
                    // Sessionless answer (no room on the broker, or the session emptied):
                    // the next request asks for a new one.
                    self.reset(INVALID_SESSION_ID);
                } else {
                    self.id = response_session_id;
                    self.epoch = if request.full {
                        next_epoch(INITIAL_EPOCH)
                    } else {
                        next_epoch(request.epoch)
                    };
                    self.partitions = request.wanted.iter().cloned().collect();
                }
                false
            }
            ErrorCode::FetchSessionIdNotFound => {
                self.reset(INVALID_SESSION_ID);
                true
            }
            ErrorCode::InvalidFetchSessionEpoch | ErrorCode::FetchSessionTopicIdError => {
                self.reset(self.id);
                true
            }
            _ => {
                self.reset(self.id);
                false
            }
        }
    }

    /// The request got no answer: whether the broker applied it is unknown, so the next
    /// request closes the session and starts a new one.
    pub fn on_failure(&mut self) {
        self.reset(self.id);
    }

    /// `(session id, epoch -1)` to close the session on the broker, if there is one.
    pub fn close_metadata(&self) -> Option<(i32, i32)> {
        (self.id != INVALID_SESSION_ID).then_some((self.id, FINAL_EPOCH))
    }

    fn reset(&mut self, id: i32) {
        self.id = id;
        self.epoch = INITIAL_EPOCH;
        self.partitions.clear();
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

    fn at(p: i32, offset: i64) -> (TopicPartition, FetchParams) {
        (
            tp(p),
            FetchParams {
                fetch_offset: offset,
                max_bytes: 1000,
                current_leader_epoch: 0,
            },
        )
    }

    fn listed(r: &SessionRequest) -> Vec<(i32, i64)> {
        r.partitions
            .iter()
            .map(|(tp, p)| (tp.partition, p.fetch_offset))
            .collect()
    }

    /// A session established with partitions 0 and 1 at offset 0, epoch 1 next.
    fn established() -> FetchSession {
        let mut s = FetchSession::default();
        let r = s.request(vec![at(0, 0), at(1, 0)], false, true);
        assert!(!s.on_response(&r, ErrorCode::NoError, 77));
        s
    }

    #[test]
    fn first_request_is_full_with_epoch_zero_and_creates_the_session() {
        let s = FetchSession::default();
        let r = s.request(vec![at(0, 5), at(1, 7)], false, true);
        assert!(r.full);
        assert_eq!((r.session_id, r.epoch), (0, 0));
        assert_eq!(listed(&r), [(0, 5), (1, 7)]);
        let s = established();
        assert_eq!((s.id(), s.epoch()), (77, 1));
    }

    #[test]
    fn incremental_lists_only_changed_and_new_partitions_and_forgets_dropped_ones() {
        let mut s = established();
        // Nothing changed: an empty incremental poll.
        let r = s.request(vec![at(0, 0), at(1, 0)], false, true);
        assert!(!r.full);
        assert_eq!((r.session_id, r.epoch), (77, 1));
        assert!(r.partitions.is_empty() && r.forgotten.is_empty());
        s.on_response(&r, ErrorCode::NoError, 77);
        assert_eq!(s.epoch(), 2);
        // Partition 0 moved on, 1 has buffered data (not wanted), 2 is new.
        let r = s.request(vec![at(0, 10), at(2, 3)], false, true);
        assert_eq!((r.session_id, r.epoch), (77, 2));
        assert_eq!(listed(&r), [(0, 10), (2, 3)]);
        assert_eq!(r.forgotten, [tp(1)]);
        s.on_response(&r, ErrorCode::NoError, 77);
        // The session now holds 0@10 and 2@3; 1 comes back as an addition.
        let r = s.request(vec![at(0, 10), at(1, 4), at(2, 3)], false, true);
        assert_eq!(listed(&r), [(1, 4)]);
        assert!(r.forgotten.is_empty());
    }

    #[test]
    fn a_changed_leader_epoch_or_max_bytes_is_a_change() {
        let s = established();
        let mut changed = at(0, 0);
        changed.1.current_leader_epoch = 3;
        let mut bigger = at(1, 0);
        bigger.1.max_bytes = 2000;
        let r = s.request(vec![changed, bigger], false, true);
        assert_eq!(listed(&r), [(0, 0), (1, 0)]);
    }

    #[test]
    fn unknown_session_starts_over_with_a_new_one() {
        let mut s = established();
        let r = s.request(vec![at(0, 1), at(1, 0)], false, true);
        assert!(s.on_response(&r, ErrorCode::FetchSessionIdNotFound, 0));
        let r = s.request(vec![at(0, 1), at(1, 0)], false, true);
        assert!(r.full);
        assert_eq!((r.session_id, r.epoch), (0, 0));
        assert_eq!(listed(&r), [(0, 1), (1, 0)]);
    }

    #[test]
    fn wrong_epoch_or_failure_closes_the_old_session_with_a_full_fetch() {
        let mut s = established();
        let r = s.request(vec![at(0, 1)], false, true);
        assert!(s.on_response(&r, ErrorCode::InvalidFetchSessionEpoch, 0));
        let r = s.request(vec![at(0, 1)], false, true);
        assert!(r.full);
        assert_eq!((r.session_id, r.epoch), (77, 0));
        s.on_response(&r, ErrorCode::NoError, 78);
        assert_eq!((s.id(), s.epoch()), (78, 1));

        let r = s.request(vec![at(0, 1)], false, true);
        s.on_failure();
        let again = s.request(vec![at(0, 1)], false, true);
        assert!(again.full && !r.full);
        assert_eq!((again.session_id, again.epoch), (78, 0));
    }

    #[test]
    fn other_top_level_errors_also_start_over_but_are_not_session_errors() {
        let mut s = established();
        let r = s.request(vec![at(0, 1)], false, true);
        assert!(!s.on_response(&r, ErrorCode::UnknownServerError, 0));
        assert_eq!((s.id(), s.epoch()), (77, 0));
    }

    #[test]
    fn sessionless_answers_and_no_session_support() {
        let mut s = FetchSession::default();
        let r = s.request(vec![at(0, 0)], false, true);
        // No room on the broker: no session; the next request tries again.
        s.on_response(&r, ErrorCode::NoError, 0);
        assert_eq!((s.id(), s.epoch()), (0, 0));
        // An incremental request that emptied the session is answered sessionless.
        let mut s = established();
        let r = s.request(vec![], false, true);
        assert_eq!(r.forgotten.len(), 2);
        s.on_response(&r, ErrorCode::NoError, 0);
        assert_eq!((s.id(), s.epoch()), (0, 0));
        // An old broker: every request sessionless.
        let r = established().request(vec![at(0, 0)], false, false);
        assert!(r.full);
        assert_eq!((r.session_id, r.epoch), (0, -1));
    }

    #[test]
    fn forced_full_fetch_keeps_the_requested_order_and_renews_the_session() {
        let mut s = established();
        let r = s.request(vec![at(1, 0), at(0, 0)], true, true);
        assert!(r.full);
        assert_eq!((r.session_id, r.epoch), (77, 0));
        assert_eq!(listed(&r), [(1, 0), (0, 0)]);
        s.on_response(&r, ErrorCode::NoError, 90);
        assert_eq!((s.id(), s.epoch()), (90, 1));
        assert!(s
            .request(vec![at(1, 0), at(0, 0)], false, true)
            .partitions
            .is_empty());
    }

    #[test]
    fn epochs_wrap_to_one_and_close_uses_the_final_epoch() {
        assert_eq!(next_epoch(i32::MAX), 1);
        assert_eq!(next_epoch(5), 6);
        assert_eq!(next_epoch(FINAL_EPOCH), FINAL_EPOCH);
        assert_eq!(FetchSession::default().close_metadata(), None);
        assert_eq!(established().close_metadata(), Some((77, FINAL_EPOCH)));
    }
}
