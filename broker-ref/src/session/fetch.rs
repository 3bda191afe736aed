//! Incremental fetch sessions (KIP-227): the broker remembers, per session, which partitions a
//! fetcher reads and what it last told it about each, so later requests list only what changed
//! and responses carry only partitions with news.
//!
//! This module is the session state machine; it does no I/O. `handlers/fetch.rs` asks
//! [`FetchSessionCache::new_context`] what a request means, reads the partitions that context
//! names, and then reports what it read with [`FetchSessionCache::create_session`] (full fetch
//! with epoch 0) or [`FetchSessionCache::complete_incremental`] (incremental fetch).
//!
//! Request metadata, as in Apache Kafka's `FetchManager.newContext`:
//!
//! | session id | epoch | meaning |
//! |---|---|---|
//! | 0 | -1 (`FINAL_EPOCH`) | sessionless full fetch |
//! | 0 | 0 (`INITIAL_EPOCH`) | full fetch that creates a session (id 0 if the cache has no room) |
//! | S | -1 | close S, sessionless full fetch |
//! | S | 0 | close S, full fetch that creates a new session |
//! | S | E (any other) | incremental fetch on S; E must be S's next epoch |
//! | 0 | E (any other) | `FETCH_SESSION_ID_NOT_FOUND` |
//!
//! A new session expects epoch 1 next; each incremental request moves it on (after
//! `i32::MAX` comes 1). Errors: unknown S → `FETCH_SESSION_ID_NOT_FOUND`, wrong epoch →
//! `INVALID_FETCH_SESSION_EPOCH`, a session created with topic names (Fetch v7–v12) used with
//! topic ids (v13+) or the other way round → `FETCH_SESSION_TOPIC_ID_ERROR`. Each is a top-level
//! error with session id 0 and no partitions. An incremental request that leaves its session
//! without partitions closes it and is answered sessionless.
//!
//! An incremental request adds or updates the partitions it lists (fetch offset, partition max
//! bytes, log start offset, leader epochs) and removes those in `forgotten_topics_data`; the
//! read covers every partition of the session. The response carries a partition only when it
//! has records, an error, or a high watermark, last stable offset or log start offset different
//! from what this session last sent (Kafka's `CachedPartition.maybeUpdateResponseData`, which
//! compares the high watermark and log start offset; the last stable offset is compared too,
//! which changes nothing while it equals the high watermark). A partition answered with an
//! error is remembered with high watermark -1, so it is sent again once the error clears.
//! Partitions that returned records move to the end of the session's order, so a small
//! `max_bytes` serves every partition in turn.
//!
//! Limits (Kafka's configuration keys are not read; `config.rs` is left alone):
//! - [`MAX_SESSIONS`] = 1000 sessions, the default of `max.incremental.fetch.session.cache.slots`.
//! - A session unused for [`SESSION_IDLE_EXPIRY`] (2 minutes, the default of
//!   `min.incremental.fetch.session.eviction.ms`) is dropped on the next cache access, so an
//!   abandoned consumer leaks nothing. (Kafka keeps idle sessions until it needs the slot.)
//! - When the cache is full, a new session may evict, as in Kafka, the session with the fewest
//!   partitions among those older than [`SESSION_IDLE_EXPIRY`], if the new one has more
//!   partitions; otherwise the request is answered sessionless (session id 0).
//! - At most [`MAX_PARTITIONS_PER_SESSION`] partitions per session and
//!   [`MAX_CACHED_PARTITIONS`] in the whole cache (Kafka has neither). A full fetch over either
//!   limit is answered sessionless; an incremental request that would exceed one closes its
//!   session and is answered `FETCH_SESSION_ID_NOT_FOUND`, which makes clients fall back to full
//!   fetches.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use odradek::ErrorCode;
use uuid::Uuid;

/// Session id meaning "no session".
pub const INVALID_SESSION_ID: i32 = 0;
/// Epoch of a full fetch that asks for a new session.
pub const INITIAL_EPOCH: i32 = 0;
/// Epoch of a full fetch that wants no session.
pub const FINAL_EPOCH: i32 = -1;
/// Most sessions cached at once (Kafka's `max.incremental.fetch.session.cache.slots` default).
pub const MAX_SESSIONS: usize = 1000;
/// Idle time after which a session is dropped (Kafka's
/// `min.incremental.fetch.session.eviction.ms` default, 120 000 ms).
pub const SESSION_IDLE_EXPIRY: Duration = Duration::from_secs(120);
/// Most partitions one session may hold.
pub const MAX_PARTITIONS_PER_SESSION: usize = 50_000;
/// Most partitions all sessions together may hold (about 150 bytes each).
pub const MAX_CACHED_PARTITIONS: usize = 1_000_000;

/// The epoch that follows `epoch` (Kafka's `FetchMetadata.nextEpoch`).
pub fn next_epoch(epoch: i32) -> i32 {
    if epoch < 0 {
        FINAL_EPOCH
    } else if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

/// How a session names a topic: by name (Fetch v7–v12) or by id (v13+).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TopicKey {
    /// Topic name.
    Name(Arc<str>),
    /// Topic id.
    Id(Uuid),
}

/// One partition of a session.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PartitionKey {
    /// The topic.
    pub topic: TopicKey,
    /// Partition index.
    pub partition: i32,
}

/// What a fetcher asked for one partition; kept in the session between requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchParams {
    /// Offset to read from.
    pub fetch_offset: i64,
    /// Byte limit for this partition.
    pub partition_max_bytes: i32,
    /// The fetcher's log start offset (followers only; -1 from consumers).
    pub log_start_offset: i64,
    /// The fetcher's view of the leader epoch (-1: unknown).
    pub current_leader_epoch: i32,
    /// Epoch of the last fetched batch (-1: unknown).
    pub last_fetched_epoch: i32,
}

/// What a read of one partition produced, as far as sessions care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionResult {
    /// Error code of the partition (0: none).
    pub error_code: i16,
    /// Whether records were returned.
    pub has_records: bool,
    /// High watermark sent.
    pub high_watermark: i64,
    /// Last stable offset sent.
    pub last_stable_offset: i64,
    /// Log start offset sent.
    pub log_start_offset: i64,
    /// Whether the answer names a preferred read replica (KIP-392: always sent, as Kafka does).
    pub has_preferred_replica: bool,
}

/// The partitions an incremental or full request lists, and those it forgets.
#[derive(Debug, Clone, Default)]
pub struct SessionUpdate {
    /// Partitions added or updated, in request order.
    pub partitions: Vec<(PartitionKey, FetchParams)>,
    /// Partitions to remove from the session.
    pub forgotten: Vec<PartitionKey>,
}

/// What a Fetch request means, decided by [`FetchSessionCache::new_context`].
#[derive(Debug, Clone, PartialEq)]
pub enum FetchContext {
    /// Read the request's partitions and answer with session id 0.
    Sessionless,
    /// Read these partitions (the request's, duplicates merged) and answer all of them; then
    /// try to create a session with [`FetchSessionCache::create_session`].
    Full {
        /// Whether the session names topics by id.
        uses_topic_ids: bool,
        /// The partitions to read, in request order.
        partitions: Vec<(PartitionKey, FetchParams)>,
    },
    /// Read every partition of the session, then ask
    /// [`FetchSessionCache::complete_incremental`] which to answer.
    Incremental {
        /// The session.
        session_id: i32,
        /// The session's epoch after this request (the next one the fetcher must send).
        epoch: i32,
        /// Every partition of the session, in session order.
        partitions: Vec<(PartitionKey, FetchParams)>,
    },
    /// Answer with this top-level error, session id 0 and no partitions.
    Error(ErrorCode),
}

/// Limits of a [`FetchSessionCache`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Most sessions.
    pub max_sessions: usize,
    /// Most partitions in one session.
    pub max_partitions_per_session: usize,
    /// Most partitions over all sessions.
    pub max_cached_partitions: usize,
    /// Idle time after which a session is dropped; also the age a session must reach before a
    /// bigger new session may evict it.
    pub idle_expiry: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_sessions: MAX_SESSIONS,
            max_partitions_per_session: MAX_PARTITIONS_PER_SESSION,
            max_cached_partitions: MAX_CACHED_PARTITIONS,
            idle_expiry: SESSION_IDLE_EXPIRY,
        }
    }
}

/// A partition as the session remembers it: the fetcher's last parameters and what the broker
/// last sent.
#[derive(Debug, Clone)]
struct CachedPartition {
    key: PartitionKey,
    params: FetchParams,
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
}

impl CachedPartition {
    /// Whether `result` must be sent, updating what the session remembers as sent (Kafka's
    /// `maybeUpdateResponseData` with `updateResponseData = true`).
    fn must_respond(&mut self, result: &PartitionResult) -> bool {
        let mut respond = result.has_records || result.has_preferred_replica;
        if self.high_watermark != result.high_watermark {
            respond = true;
            self.high_watermark = result.high_watermark;
        }
        if self.last_stable_offset != result.last_stable_offset {
            respond = true;
            self.last_stable_offset = result.last_stable_offset;
        }
        if self.log_start_offset != result.log_start_offset {
            respond = true;
            self.log_start_offset = result.log_start_offset;
        }
        if result.error_code != 0 {
            // Forget the high watermark so the partition is sent again once the error clears.
            self.high_watermark = -1;
            respond = true;
        }
        respond
    }
}

/// One session: its partitions in order (a sequence number per partition, so one can move to
/// the end in O(log n)) and its bookkeeping.
#[derive(Debug)]
struct Session {
    epoch: i32,
    uses_topic_ids: bool,
    created: Instant,
    last_used: Instant,
    index: HashMap<PartitionKey, u64>,
    order: BTreeMap<u64, CachedPartition>,
    next_seq: u64,
}

impl Session {
    fn len(&self) -> usize {
        self.order.len()
    }

    fn push(&mut self, partition: CachedPartition) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.index.insert(partition.key.clone(), seq);
        self.order.insert(seq, partition);
    }

    fn get_mut(&mut self, key: &PartitionKey) -> Option<&mut CachedPartition> {
        let seq = self.index.get(key)?;
        self.order.get_mut(seq)
    }

    fn remove(&mut self, key: &PartitionKey) {
        if let Some(seq) = self.index.remove(key) {
            self.order.remove(&seq);
        }
    }

    fn move_to_end(&mut self, key: &PartitionKey) {
        if let Some(seq) = self.index.get(key).copied() {
            if let Some(p) = self.order.remove(&seq) {
                self.push(p);
            }
        }
    }

    fn snapshot(&self) -> Vec<(PartitionKey, FetchParams)> {
        self.order
            .values()
            .map(|p| (p.key.clone(), p.params))
            .collect()
    }
}

#[derive(Debug, Default)]
struct CacheState {
    sessions: HashMap<i32, Session>,
    /// `(last used, id)` of every session, oldest first.
    by_last_used: BTreeSet<(Instant, i32)>,
    /// Partitions over all sessions.
    partitions: usize,
}

impl CacheState {
    fn remove(&mut self, id: i32) -> Option<Session> {
        let session = self.sessions.remove(&id)?;
        self.by_last_used.remove(&(session.last_used, id));
        self.partitions = self.partitions.saturating_sub(session.len());
        Some(session)
    }

    fn touch(&mut self, id: i32, now: Instant) {
        if let Some(session) = self.sessions.get_mut(&id) {
            self.by_last_used.remove(&(session.last_used, id));
            session.last_used = now.max(session.last_used);
            self.by_last_used.insert((session.last_used, id));
        }
    }

    /// Drops every session idle for longer than `idle`.
    fn expire(&mut self, now: Instant, idle: Duration) {
        while let Some(&(last_used, id)) = self.by_last_used.first() {
            if now.saturating_duration_since(last_used) <= idle {
                break;
            }
            tracing::debug!(session = id, "fetch session expired");
            self.remove(id);
        }
    }

    fn new_session_id(&self) -> i32 {
        loop {
            let id = (Uuid::new_v4().as_u128() as u32 & 0x7fff_ffff) as i32;
            if id != INVALID_SESSION_ID && !self.sessions.contains_key(&id) {
                return id;
            }
        }
    }
}

/// The broker's fetch sessions.
#[derive(Debug, Default)]
pub struct FetchSessionCache {
    limits: SessionLimits,
    state: Mutex<CacheState>,
}

impl FetchSessionCache {
    /// A cache with Kafka's default size and this module's limits.
    pub fn new() -> FetchSessionCache {
        FetchSessionCache::default()
    }

    /// A cache with other limits (tests).
    pub fn with_limits(limits: SessionLimits) -> FetchSessionCache {
        FetchSessionCache {
            limits,
            state: Mutex::new(CacheState::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, CacheState> {
        // The state stays consistent between statements, so a panic elsewhere cannot leave it
        // half-updated in a way that matters more than losing a session.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Number of cached sessions.
    pub fn len(&self) -> usize {
        self.lock().sessions.len()
    }

    /// Whether no session is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of partitions over all sessions.
    pub fn cached_partitions(&self) -> usize {
        self.lock().partitions
    }

    /// The epoch session `id` expects next, if it exists.
    pub fn session_epoch(&self, id: i32) -> Option<i32> {
        self.lock().sessions.get(&id).map(|s| s.epoch)
    }

    /// Decides what a request with this session id and epoch means, applying an incremental
    /// request's changes to its session. `uses_topic_ids` is true for Fetch v13+. `update` is
    /// called only when the request's partitions matter (not for sessionless fetches).
    pub fn new_context(
        &self,
        session_id: i32,
        epoch: i32,
        uses_topic_ids: bool,
        update: impl FnOnce() -> SessionUpdate,
        now: Instant,
    ) -> FetchContext {
        let mut state = self.lock();
        state.expire(now, self.limits.idle_expiry);
        if epoch == INITIAL_EPOCH || epoch == FINAL_EPOCH {
            if session_id != INVALID_SESSION_ID && state.remove(session_id).is_some() {
                tracing::debug!(session = session_id, "fetch session closed by a full fetch");
            }
            if epoch == FINAL_EPOCH {
                return FetchContext::Sessionless;
            }
            drop(state);
            return FetchContext::Full {
                uses_topic_ids,
                partitions: dedup(update().partitions),
            };
        }
        let Some(session) = state.sessions.get_mut(&session_id) else {
            return FetchContext::Error(ErrorCode::FetchSessionIdNotFound);
        };
        if session.epoch != epoch {
            return FetchContext::Error(ErrorCode::InvalidFetchSessionEpoch);
        }
        if session.uses_topic_ids != uses_topic_ids {
            return FetchContext::Error(ErrorCode::FetchSessionTopicIdError);
        }
        let before = session.len();
        let SessionUpdate {
            partitions,
            forgotten,
        } = update();
        for (key, params) in partitions {
            match session.get_mut(&key) {
                Some(cached) => cached.params = params,
                None => session.push(CachedPartition {
                    key,
                    params,
                    high_watermark: -1,
                    last_stable_offset: -1,
                    log_start_offset: -1,
                }),
            }
        }
        for key in &forgotten {
            session.remove(key);
        }
        let after = session.len();
        let total = (state.partitions + after).saturating_sub(before);
        state.partitions = total;
        if after == 0 {
            state.remove(session_id);
            tracing::debug!(
                session = session_id,
                "fetch session closed: no partitions left"
            );
            return FetchContext::Sessionless;
        }
        if after > self.limits.max_partitions_per_session
            || total > self.limits.max_cached_partitions
        {
            state.remove(session_id);
            tracing::debug!(
                session = session_id,
                partitions = after,
                "fetch session closed: partition limit reached"
            );
            return FetchContext::Error(ErrorCode::FetchSessionIdNotFound);
        }
        state.touch(session_id, now);
        let Some(session) = state.sessions.get_mut(&session_id) else {
            return FetchContext::Error(ErrorCode::FetchSessionIdNotFound);
        };
        session.epoch = next_epoch(epoch);
        FetchContext::Incremental {
            session_id,
            epoch: session.epoch,
            partitions: session.snapshot(),
        }
    }

    /// After a full fetch with epoch 0: creates a session holding `partitions` (the context's)
    /// with what was sent for each (`results`, same order). Returns the new session id, or 0 when
    /// there is no room.
    pub fn create_session(
        &self,
        uses_topic_ids: bool,
        partitions: &[(PartitionKey, FetchParams)],
        results: &[PartitionResult],
        now: Instant,
    ) -> i32 {
        let size = partitions.len();
        let limits = &self.limits;
        if size > limits.max_partitions_per_session || size > limits.max_cached_partitions {
            return INVALID_SESSION_ID;
        }
        let mut state = self.lock();
        state.expire(now, limits.idle_expiry);
        let fits = |s: &CacheState| {
            s.sessions.len() < limits.max_sessions
                && s.partitions + size <= limits.max_cached_partitions
        };
        if !fits(&state) {
            // Kafka's rule for an unprivileged newcomer: evict the smallest session that is
            // older than the eviction time, if the newcomer holds more partitions.
            let victim = state
                .sessions
                .iter()
                .filter(|(_, s)| now.saturating_duration_since(s.created) > limits.idle_expiry)
                .map(|(id, s)| (s.len(), *id))
                .min()
                .filter(|(len, _)| *len < size);
            if let Some((_, id)) = victim {
                tracing::debug!(session = id, "fetch session evicted by a bigger one");
                state.remove(id);
            }
            if !fits(&state) {
                return INVALID_SESSION_ID;
            }
        }
        let id = state.new_session_id();
        let mut session = Session {
            epoch: next_epoch(INITIAL_EPOCH),
            uses_topic_ids,
            created: now,
            last_used: now,
            index: HashMap::with_capacity(size),
            order: BTreeMap::new(),
            next_seq: 0,
        };
        for ((key, params), result) in partitions.iter().zip(results) {
            session.push(CachedPartition {
                key: key.clone(),
                params: *params,
                high_watermark: result.high_watermark,
                last_stable_offset: result.last_stable_offset,
                log_start_offset: result.log_start_offset,
            });
        }
        state.partitions += session.len();
        state.by_last_used.insert((now, id));
        state.sessions.insert(id, session);
        tracing::debug!(session = id, partitions = size, "fetch session created");
        id
    }

    /// After an incremental fetch: says which partitions to answer (`true` at the index of each,
    /// same order as `partitions`, the context's) and records what is sent. `epoch` is the
    /// context's. Errors: the session is gone (`FETCH_SESSION_ID_NOT_FOUND`) or another request
    /// used it meanwhile (`INVALID_FETCH_SESSION_EPOCH`).
    pub fn complete_incremental(
        &self,
        session_id: i32,
        epoch: i32,
        partitions: &[(PartitionKey, FetchParams)],
        results: &[PartitionResult],
        now: Instant,
    ) -> Result<Vec<bool>, ErrorCode> {
        let mut state = self.lock();
        let Some(session) = state.sessions.get_mut(&session_id) else {
            return Err(ErrorCode::FetchSessionIdNotFound);
        };
        if session.epoch != epoch {
            return Err(ErrorCode::InvalidFetchSessionEpoch);
        }
        let mut include = Vec::with_capacity(partitions.len());
        for ((key, _), result) in partitions.iter().zip(results) {
            let respond = session
                .get_mut(key)
                .is_some_and(|cached| cached.must_respond(result));
            if respond && result.has_records {
                session.move_to_end(key);
            }
            include.push(respond);
        }
        state.touch(session_id, now);
        Ok(include)
    }
}

/// Merges repeated partitions of a full request: the first position, the last parameters (what
/// a map keyed by partition gives, as in Kafka).
fn dedup(partitions: Vec<(PartitionKey, FetchParams)>) -> Vec<(PartitionKey, FetchParams)> {
    let mut position: HashMap<PartitionKey, usize> = HashMap::with_capacity(partitions.len());
    let mut out: Vec<(PartitionKey, FetchParams)> = Vec::with_capacity(partitions.len());
    for (key, params) in partitions {
        match position.get(&key) {
            Some(&i) => {
                if let Some(slot) = out.get_mut(i) {
                    slot.1 = params;
                }
            }
            None => {
                position.insert(key.clone(), out.len());
                out.push((key, params));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
