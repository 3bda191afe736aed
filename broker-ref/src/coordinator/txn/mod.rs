//! The transaction coordinator (transaction protocol V1: clients add partitions with
//! AddPartitionsToTxn), persisted in the compacted internal topic `__transaction_state`.
//!
//! Each transactional id lives in partition `abs(javaHashCode(id)) % transaction.state.log.num.partitions`
//! (Kafka's placement). Every state change is appended there in Kafka's record layout
//! ([`storage`]) before it is acknowledged and replayed at startup. Ending a transaction writes
//! PrepareCommit/PrepareAbort, then a COMMIT/ABORT marker into every partition of the
//! transaction (for `__consumer_offsets` partitions the group coordinator then publishes or
//! drops the transaction's offsets), then CompleteCommit/CompleteAbort; all of it happens before
//! EndTxn is answered. A restart finds a transaction still in a Prepare state and writes its
//! markers again ([`TransactionCoordinator::recover`]); a marker written twice is harmless.
//!
//! In cluster mode ([`TransactionCoordinator::own_partitions_only`]) a broker coordinates the ids
//! of the `__transaction_state` partitions it leads (loaded when it becomes their leader, with
//! the partition's leader epoch as the coordinator epoch its markers carry), and the markers go
//! to the partitions' leaders: a persisted Prepare state is handed to the cluster layer's
//! completer ([`TransactionCoordinator::set_completer`]), which writes them with WriteTxnMarkers
//! and then calls [`TransactionCoordinator::markers_written`]. Callers wait for
//! `__transaction_state` to be replicated before they answer.
//!
//! One lock guards every transactional id. It is held while markers are written and while a
//! transactional produce or offset commit is verified and appended ([`TransactionCoordinator::with_verified`]),
//! so a write can never land after its transaction's marker (a hanging transaction). Lock order:
//! transactions, then groups, then a partition.

pub mod metadata;
pub mod storage;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use odradek::records::{BatchBuilder, Compression};
use odradek::ErrorCode;

use crate::clock::now_ms;
use crate::config::BrokerConfig;
use crate::coordinator::producer_ids::ProducerIdManager;
use crate::coordinator::storage::partition_for_group;
use crate::coordinator::{CoordinatorLog, GroupCoordinator, InternalTopic, OFFSETS_TOPIC};
use crate::partition::Marker;
use crate::{Error, Result};
use metadata::{TxnMetadata, TxnState};

/// Name of the transaction state topic.
pub const TRANSACTION_TOPIC: &str = "__transaction_state";

/// The coordinator epoch a single node writes into markers (one coordinator, never moved).
const COORDINATOR_EPOCH: i32 = 0;

/// A transaction whose Prepare state is persisted and whose markers are to be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedTxn {
    /// Producer id of the markers.
    pub producer_id: i64,
    /// Producer epoch of the markers.
    pub epoch: i16,
    /// COMMIT (true) or ABORT markers.
    pub commit: bool,
    /// The partitions that get a marker.
    pub partitions: Vec<(String, i32)>,
    /// The coordinator epoch the markers carry.
    pub coordinator_epoch: i32,
    /// The id's `__transaction_state` partition.
    pub state_partition: i32,
}

/// A transaction as DescribeTransactions and ListTransactions report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnView {
    /// Transactional id.
    pub transactional_id: String,
    /// State.
    pub state: TxnState,
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub epoch: i16,
    /// Timeout (ms).
    pub timeout_ms: i32,
    /// Start of the open transaction (ms), or -1.
    pub start_ms: i64,
    /// Partitions of the transaction.
    pub partitions: Vec<(String, i32)>,
}

/// The transaction coordinator.
#[derive(Debug)]
pub struct TransactionCoordinator {
    log: CoordinatorLog,
    /// Told when a marker reaches a `__consumer_offsets` partition (pending offsets).
    groups: Arc<GroupCoordinator>,
    /// Producer ids for new transactional ids and exhausted epochs.
    producer_ids: Arc<ProducerIdManager>,
    txns: Mutex<HashMap<String, TxnMetadata>>,
    partitions: i32,
    max_timeout_ms: i32,
    id_expiration_ms: i64,
    /// `__transaction_state`, created on first use.
    topic: InternalTopic,
    /// Cluster mode: the `__transaction_state` partitions this broker leads and has loaded,
    /// each with its coordinator epoch; `None` on a single node, which coordinates every id.
    owned: Mutex<Option<HashMap<i32, i32>>>,
    /// Cluster mode: receives the ids whose markers are to be written.
    completer: Mutex<Option<UnboundedSender<String>>>,
    /// Woken whenever a transaction reaches a Complete state.
    completed: tokio::sync::Notify,
}

impl TransactionCoordinator {
    /// Creates the coordinator and replays `__transaction_state` if it exists. The topic is
    /// created on first use ([`TransactionCoordinator::ensure_topic`]), as Kafka does.
    pub fn open(
        config: &BrokerConfig,
        log: CoordinatorLog,
        groups: Arc<GroupCoordinator>,
        producer_ids: Arc<ProducerIdManager>,
    ) -> Result<TransactionCoordinator> {
        let partitions = config.int("transaction.state.log.num.partitions").max(1);
        let coordinator = TransactionCoordinator {
            log,
            groups,
            producer_ids,
            txns: Mutex::new(HashMap::new()),
            partitions,
            max_timeout_ms: config.int("transaction.max.timeout.ms"),
            id_expiration_ms: i64::from(config.int("transactional.id.expiration.ms")),
            topic: InternalTopic::new(
                TRANSACTION_TOPIC,
                partitions,
                config.get("transaction.state.log.segment.bytes"),
            ),
            owned: Mutex::new(None),
            completer: Mutex::new(None),
            completed: tokio::sync::Notify::new(),
        };
        coordinator.replay()?;
        Ok(coordinator)
    }

    /// Creates `__transaction_state` if it does not exist yet (FindCoordinator for a
    /// transactional id, and every state write, call this first).
    pub fn ensure_topic(&self) -> Result<()> {
        self.topic.ensure(&self.log.topics)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, TxnMetadata>> {
        self.txns.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn replay(&self) -> Result<()> {
        let Some(topic) = self.log.topics.get(TRANSACTION_TOPIC) else {
            return Ok(());
        };
        let mut txns = self.lock();
        for partition in topic.partitions() {
            for (id, meta) in read_states(&partition, false)? {
                match meta {
                    Some(meta) => txns.insert(id, meta),
                    None => txns.remove(&id),
                };
            }
        }
        tracing::info!(
            transactional_ids = txns.len(),
            "transaction coordinator loaded"
        );
        Ok(())
    }

    /// Cluster mode: this broker coordinates only the ids of the `__transaction_state`
    /// partitions it leads ([`TransactionCoordinator::load_partition`]); nothing is loaded yet.
    pub fn own_partitions_only(&self) {
        *self.owned.lock().unwrap_or_else(|e| e.into_inner()) = Some(HashMap::new());
        self.lock().clear();
    }

    /// Cluster mode: where persisted Prepare states go to have their markers written.
    pub fn set_completer(&self, completer: UnboundedSender<String>) {
        *self.completer.lock().unwrap_or_else(|e| e.into_inner()) = Some(completer);
    }

    fn owned(&self) -> MutexGuard<'_, Option<HashMap<i32, i32>>> {
        self.owned.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether this broker coordinates `txn_id` now.
    pub fn coordinates(&self, txn_id: &str) -> bool {
        let p = self.partition_for(txn_id);
        self.owned().as_ref().is_none_or(|o| o.contains_key(&p))
    }

    /// Whether this is a cluster node's coordinator (markers go through the completer).
    fn clustered(&self) -> bool {
        self.owned().is_some()
    }

    /// The coordinator epoch of `txn_id`'s partition (0 on a single node), if coordinated here.
    fn coordinator_epoch(&self, txn_id: &str) -> Option<i32> {
        let p = self.partition_for(txn_id);
        match self.owned().as_ref() {
            None => Some(COORDINATOR_EPOCH),
            Some(o) => o.get(&p).copied(),
        }
    }

    /// The spec of `__transaction_state` (name, partitions, config overrides), for the
    /// cluster layer to have the controller create it.
    pub fn topic_spec(
        &self,
    ) -> (
        &'static str,
        i32,
        std::collections::BTreeMap<String, String>,
    ) {
        self.topic.spec()
    }

    /// This broker became the leader of `__transaction_state` partition `index`: its ids are
    /// loaded from the whole log (a new leader's log holds everything committed), coordinated
    /// from now on with the partition's leader epoch as coordinator epoch, and every one
    /// found between its Prepare state and its markers is handed to the completer.
    pub fn load_partition(&self, index: i32) -> Result<()> {
        let Some(partition) = self
            .log
            .topics
            .get(TRANSACTION_TOPIC)
            .and_then(|t| t.partition(index))
        else {
            return Ok(());
        };
        let states = read_states(&partition, true)?;
        let mut txns = self.lock();
        txns.retain(|id, _| self.partition_for(id) != index);
        for (id, meta) in states {
            match meta {
                Some(meta) => txns.insert(id, meta),
                None => txns.remove(&id),
            };
        }
        if let Some(owned) = self.owned().as_mut() {
            owned.insert(index, partition.leader_epoch());
        }
        let mut unfinished = 0;
        for (id, meta) in txns.iter_mut() {
            if self.partition_for(id) != index {
                continue;
            }
            if meta.state == TxnState::PrepareEpochFence {
                meta.state = TxnState::PrepareAbort;
            }
            if matches!(meta.state, TxnState::PrepareCommit | TxnState::PrepareAbort) {
                unfinished += 1;
                self.hand_to_completer(id);
            }
        }
        tracing::info!(
            partition = index,
            coordinator_epoch = partition.leader_epoch(),
            unfinished,
            "transaction coordinator took over the partition's transactional ids"
        );
        Ok(())
    }

    /// This broker no longer leads `__transaction_state` partition `index`: its ids go
    /// (requests for them are answered NOT_COORDINATOR; a completer working on one stops).
    pub fn unload_partition(&self, index: i32) {
        let was = self
            .owned()
            .as_mut()
            .is_some_and(|o| o.remove(&index).is_some());
        if was {
            self.lock().retain(|id, _| self.partition_for(id) != index);
            self.completed.notify_waiters();
            tracing::info!(
                partition = index,
                "transaction coordinator gave up the partition's transactional ids"
            );
        }
    }

    fn hand_to_completer(&self, txn_id: &str) {
        if let Some(tx) = self
            .completer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            let _ = tx.send(txn_id.to_string());
        }
    }

    /// The `__transaction_state` partition of `txn_id`.
    pub fn partition_for(&self, txn_id: &str) -> i32 {
        partition_for_group(txn_id, self.partitions)
    }

    /// Appends `txn_id`'s state (or a tombstone) to its partition.
    fn persist(&self, txn_id: &str, meta: Option<&TxnMetadata>) -> Result<()> {
        let clustered = self.clustered();
        if !clustered {
            self.ensure_topic()?;
        }
        let partition = self
            .log
            .topics
            .get(TRANSACTION_TOPIC)
            .and_then(|t| t.partition(self.partition_for(txn_id)))
            .ok_or_else(|| {
                Error::kafka(
                    ErrorCode::CoordinatorNotAvailable,
                    "transaction state partition missing",
                )
            })?;
        if clustered {
            // Only the partition's leader writes (leadership may have moved a moment ago).
            partition.check_produce(1)?;
        }
        let (key, value) = storage::txn_record(txn_id, meta);
        let now = now_ms();
        let mut b = BatchBuilder::new(Compression::None);
        b.append(now, Some(&key), value.as_deref(), &[])?;
        partition.append_record_set(b.build()?, now)?;
        Ok(())
    }

    /// Persists a change, mapping a failure to COORDINATOR_NOT_AVAILABLE.
    fn persist_or_unavailable(&self, txn_id: &str, meta: &TxnMetadata) -> Result<(), ErrorCode> {
        self.persist(txn_id, Some(meta)).map_err(|e| {
            tracing::warn!(transactional_id = txn_id, error = %e, "persisting transaction state failed");
            ErrorCode::CoordinatorNotAvailable
        })
    }

    /// Writes the COMMIT/ABORT marker of `meta`'s transaction into each of its partitions.
    fn write_markers(&self, meta: &TxnMetadata, commit: bool) {
        let now = now_ms();
        let marker = Marker {
            producer_id: meta.producer_id,
            producer_epoch: meta.epoch,
            commit,
            coordinator_epoch: COORDINATOR_EPOCH,
        };
        for (topic, index) in &meta.partitions {
            let Some(partition) = self.log.topics.get(topic).and_then(|t| t.partition(*index))
            else {
                continue; // deleted meanwhile
            };
            if let Err(e) = partition.write_marker(marker, now) {
                tracing::warn!(topic = %topic, partition = index, producer_id = meta.producer_id, error = %e, "writing a transaction marker failed");
                continue;
            }
            if topic == OFFSETS_TOPIC {
                self.groups.complete_txn(*index, meta.producer_id, commit);
            }
        }
    }

    /// Ends `meta`'s open transaction: Prepare state persisted, markers, Complete state.
    fn complete(
        &self,
        txn_id: &str,
        meta: &mut TxnMetadata,
        commit: bool,
    ) -> Result<(), ErrorCode> {
        let before = meta.clone();
        meta.state = if commit {
            TxnState::PrepareCommit
        } else {
            TxnState::PrepareAbort
        };
        meta.last_update_ms = now_ms();
        if let Err(code) = self.persist_or_unavailable(txn_id, meta) {
            *meta = before;
            return Err(code);
        }
        if self.clustered() {
            self.hand_to_completer(txn_id);
        } else {
            self.finish(txn_id, meta);
        }
        Ok(())
    }

    /// Cluster mode: the markers `txn_id`'s Prepare state needs, if it is in one and
    /// coordinated here.
    pub fn prepared(&self, txn_id: &str) -> Option<PreparedTxn> {
        let coordinator_epoch = self.coordinator_epoch(txn_id)?;
        let txns = self.lock();
        let meta = txns.get(txn_id)?;
        let commit = match meta.state {
            TxnState::PrepareCommit => true,
            TxnState::PrepareAbort => false,
            _ => return None,
        };
        Some(PreparedTxn {
            producer_id: meta.producer_id,
            epoch: meta.epoch,
            commit,
            partitions: meta.partitions.iter().cloned().collect(),
            coordinator_epoch,
            state_partition: self.partition_for(txn_id),
        })
    }

    /// Cluster mode: every marker of `prepared` is written; the transaction moves to its
    /// Complete state (if it is still that Prepare state here) and waiting EndTxns wake.
    pub fn markers_written(&self, txn_id: &str, prepared: &PreparedTxn) {
        let mut txns = self.lock();
        if self.coordinator_epoch(txn_id) != Some(prepared.coordinator_epoch) {
            return;
        }
        let Some(meta) = txns.get_mut(txn_id) else {
            return;
        };
        let expected = if prepared.commit {
            TxnState::PrepareCommit
        } else {
            TxnState::PrepareAbort
        };
        if meta.state != expected
            || (meta.producer_id, meta.epoch) != (prepared.producer_id, prepared.epoch)
        {
            return;
        }
        self.mark_complete(txn_id, meta, prepared.commit);
        drop(txns);
        self.completed.notify_waiters();
    }

    /// Cluster mode: waits until `txn_id`'s transaction is no longer in a Prepare state (its
    /// markers are written), up to `timeout`. NOT_COORDINATOR when this broker stops
    /// coordinating it, CONCURRENT_TRANSACTIONS (retriable) when time runs out.
    pub async fn wait_completed(&self, txn_id: &str, timeout: Duration) -> Result<(), ErrorCode> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.completed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !self.coordinates(txn_id) {
                return Err(ErrorCode::NotCoordinator);
            }
            let state = self.lock().get(txn_id).map(|m| m.state);
            match state {
                Some(TxnState::PrepareCommit | TxnState::PrepareAbort) => {}
                Some(_) => return Ok(()),
                None => return Err(ErrorCode::InvalidProducerIdMapping),
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Err(ErrorCode::ConcurrentTransactions);
            }
        }
    }

    /// Writes the markers of a transaction in a Prepare state and moves it to Complete.
    fn finish(&self, txn_id: &str, meta: &mut TxnMetadata) {
        let commit = meta.state == TxnState::PrepareCommit;
        self.write_markers(meta, commit);
        self.mark_complete(txn_id, meta, commit);
    }

    /// Moves a transaction whose markers are written to its Complete state and persists it.
    fn mark_complete(&self, txn_id: &str, meta: &mut TxnMetadata, commit: bool) {
        meta.state = if commit {
            TxnState::CompleteCommit
        } else {
            TxnState::CompleteAbort
        };
        meta.partitions.clear();
        meta.last_update_ms = now_ms();
        if let Err(e) = self.persist(txn_id, Some(meta)) {
            // The markers are written; a restart (or the next coordinator) redoes them from
            // the Prepare state.
            tracing::warn!(transactional_id = txn_id, error = %e, "persisting a completed transaction failed");
        }
    }

    /// Completes every transaction a restart found between its Prepare state and its markers.
    pub fn recover(&self) {
        let mut txns = self.lock();
        for (id, meta) in txns.iter_mut() {
            match meta.state {
                TxnState::PrepareCommit | TxnState::PrepareAbort => {
                    tracing::info!(transactional_id = %id, state = meta.state.name(), "completing a transaction interrupted by a restart");
                    self.finish(id, meta);
                }
                TxnState::PrepareEpochFence => {
                    meta.state = TxnState::PrepareAbort;
                    self.finish(id, meta);
                }
                _ => {}
            }
        }
    }

    /// InitProducerId for a transactional producer: checks the timeout, creates the id or
    /// starts a new producer session with a bumped epoch. An open transaction of the previous
    /// session is aborted first with a fenced epoch, so a zombie can neither write nor commit.
    pub fn init_producer_id(
        &self,
        txn_id: &str,
        timeout_ms: i32,
        expected: Option<(i64, i16)>,
    ) -> Result<(i64, i16), ErrorCode> {
        if timeout_ms <= 0 || timeout_ms > self.max_timeout_ms {
            return Err(ErrorCode::InvalidTransactionTimeout);
        }
        let mut txns = self.lock();
        let now = now_ms();
        let existing = txns.get(txn_id).cloned();
        let mut meta = match existing {
            Some(m) => m,
            None => {
                let id = self
                    .producer_ids
                    .next_id()
                    .map_err(|_| ErrorCode::CoordinatorNotAvailable)?;
                TxnMetadata::new(id, timeout_ms, now)
            }
        };
        if matches!(
            meta.state,
            TxnState::PrepareCommit | TxnState::PrepareAbort | TxnState::PrepareEpochFence
        ) {
            return Err(ErrorCode::ConcurrentTransactions);
        }
        if meta.check_expected(expected)? {
            return Ok((meta.producer_id, meta.epoch));
        }
        if meta.state == TxnState::Ongoing {
            meta.fence();
            self.complete(txn_id, &mut meta, false)?;
            txns.insert(txn_id.to_string(), meta.clone());
            if self.clustered() {
                // As Kafka: the client retries until the fenced transaction's abort completed.
                return Err(ErrorCode::ConcurrentTransactions);
            }
        }
        let rotated_id = if meta.epoch_exhausted() {
            Some(
                self.producer_ids
                    .next_id()
                    .map_err(|_| ErrorCode::CoordinatorNotAvailable)?,
            )
        } else {
            None
        };
        meta.init_session(timeout_ms, now, rotated_id);
        self.persist_or_unavailable(txn_id, &meta)?;
        let answer = (meta.producer_id, meta.epoch);
        txns.insert(txn_id.to_string(), meta);
        Ok(answer)
    }

    /// AddPartitionsToTxn / AddOffsetsToTxn: adds `partitions` to the open transaction,
    /// opening one if needed.
    pub fn add_partitions(
        &self,
        txn_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
    ) -> Result<(), ErrorCode> {
        let mut txns = self.lock();
        let meta = txns
            .get_mut(txn_id)
            .ok_or(ErrorCode::InvalidProducerIdMapping)?;
        meta.check_producer(producer_id, epoch)?;
        meta.can_add_partitions()?;
        let before = meta.clone();
        if meta.add_partitions(partitions, now_ms()) {
            if let Err(code) = self.persist_or_unavailable(txn_id, meta) {
                *meta = before;
                return Err(code);
            }
        }
        Ok(())
    }

    /// Checks that `partition` is in the open transaction of `txn_id` for this producer.
    fn check_in_txn(
        txns: &HashMap<String, TxnMetadata>,
        txn_id: &str,
        producer_id: i64,
        epoch: i16,
        partition: &(String, i32),
    ) -> Result<(), ErrorCode> {
        let meta = txns
            .get(txn_id)
            .ok_or(ErrorCode::InvalidProducerIdMapping)?;
        meta.check_producer(producer_id, epoch)?;
        if meta.state == TxnState::Ongoing && meta.partitions.contains(partition) {
            Ok(())
        } else {
            Err(ErrorCode::InvalidTxnState)
        }
    }

    /// Whether `partition` is in the open transaction (AddPartitionsToTxn v4+ `verify_only`).
    pub fn verify(
        &self,
        txn_id: &str,
        producer_id: i64,
        epoch: i16,
        partition: &(String, i32),
    ) -> Result<(), ErrorCode> {
        Self::check_in_txn(&self.lock(), txn_id, producer_id, epoch, partition)
    }

    /// Runs `write` (a transactional produce or offset commit to `partition`) only if the
    /// partition is in the producer's open transaction, holding the lock throughout so the
    /// transaction cannot end in between.
    pub fn with_verified<T>(
        &self,
        txn_id: &str,
        producer_id: i64,
        epoch: i16,
        partition: &(String, i32),
        write: impl FnOnce() -> T,
    ) -> Result<T, ErrorCode> {
        let txns = self.lock();
        Self::check_in_txn(&txns, txn_id, producer_id, epoch, partition)?;
        Ok(write())
    }

    /// EndTxn: commits or aborts the open transaction (markers written before it returns).
    /// Returns the producer id and epoch.
    pub fn end_txn(
        &self,
        txn_id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
    ) -> Result<(i64, i16), ErrorCode> {
        let mut txns = self.lock();
        let meta = txns
            .get_mut(txn_id)
            .ok_or(ErrorCode::InvalidProducerIdMapping)?;
        meta.check_producer(producer_id, epoch)?;
        if meta.check_end(commit)? {
            self.complete(txn_id, meta, commit)?;
        }
        Ok((meta.producer_id, meta.epoch))
    }

    /// DescribeTransactions for one id.
    pub fn describe(&self, txn_id: &str) -> Option<TxnView> {
        self.lock().get(txn_id).map(|m| view(txn_id, m))
    }

    /// Every transactional id, ordered by id.
    pub fn list(&self) -> Vec<TxnView> {
        let mut out: Vec<TxnView> = self.lock().iter().map(|(id, m)| view(id, m)).collect();
        out.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
        out
    }

    /// Timers: aborts transactions past their timeout (fencing the producer's epoch, as Kafka
    /// does) and expires ids idle for `transactional.id.expiration.ms`.
    pub fn tick(&self) {
        let mut txns = self.lock();
        let now = now_ms();
        let mut expired = Vec::new();
        for (id, meta) in txns.iter_mut() {
            if meta.timed_out(now) {
                tracing::info!(transactional_id = %id, producer_id = meta.producer_id, "aborting a transaction past its timeout");
                meta.fence();
                if let Err(code) = self.complete(id, meta, false) {
                    tracing::warn!(transactional_id = %id, error = %code, "aborting a timed-out transaction failed");
                }
            } else if matches!(
                meta.state,
                TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
            ) && now.saturating_sub(meta.last_update_ms) > self.id_expiration_ms
            {
                expired.push(id.clone());
            }
        }
        for id in expired {
            if self.persist(&id, None).is_ok() {
                tracing::info!(transactional_id = %id, "transactional id expired");
                txns.remove(&id);
            }
        }
    }
}

/// The states stored in `partition` in log order (`None`: a tombstone), up to its high
/// watermark, or its log end with `to_log_end` (a new leader).
fn read_states(
    partition: &crate::partition::Partition,
    to_log_end: bool,
) -> Result<Vec<(String, Option<TxnMetadata>)>> {
    let mut out = Vec::new();
    crate::coordinator::read_batches(partition, to_log_end, |batch| {
        if !batch.is_control() {
            for r in batch.records()? {
                let r = r?;
                let Some(key) = r.key.as_ref() else { continue };
                if let Some(state) = storage::decode(key, r.value.as_ref()) {
                    out.push(state);
                }
            }
        }
        Ok(())
    })?;
    Ok(out)
}

fn view(txn_id: &str, m: &TxnMetadata) -> TxnView {
    TxnView {
        transactional_id: txn_id.to_string(),
        state: m.state,
        producer_id: m.producer_id,
        epoch: m.epoch,
        timeout_ms: m.timeout_ms,
        start_ms: if m.state == TxnState::Ongoing {
            m.start_ms
        } else {
            -1
        },
        partitions: m.partitions.iter().cloned().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::Broker;
    use bytes::Bytes;
    use std::collections::BTreeMap;

    fn open(dir: &std::path::Path) -> std::sync::Arc<Broker> {
        let config = BrokerConfig::from_entries([
            ("log.dirs", dir.to_str().unwrap()),
            ("offsets.topic.num.partitions", "1"),
            ("transaction.state.log.num.partitions", "2"),
        ])
        .unwrap();
        Broker::open(config, "127.0.0.1".into(), 0).unwrap()
    }

    fn txn_batch(pid: i64, epoch: i16) -> Bytes {
        let mut b = BatchBuilder::new(Compression::None)
            .producer(pid, epoch, 0)
            .transactional(true);
        b.append(1, None, Some(b"v"), &[]).unwrap();
        b.build().unwrap()
    }

    #[test]
    fn a_restart_completes_a_prepared_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let broker = open(dir.path());
        broker
            .topics
            .create("t", 1, BTreeMap::new(), false)
            .unwrap();
        let (pid, epoch) = broker.txns.init_producer_id("x", 60_000, None).unwrap();
        let tp = ("t".to_string(), 0);
        broker
            .txns
            .add_partitions("x", pid, epoch, std::slice::from_ref(&tp))
            .unwrap();
        let partition = broker.topics.get("t").unwrap().partition(0).unwrap();
        partition
            .append_record_set(txn_batch(pid, epoch), now_ms())
            .unwrap();
        assert_eq!(partition.last_stable_offset(), 0);
        // Crash after PrepareCommit was persisted, before any marker.
        {
            let mut txns = broker.txns.lock();
            let meta = txns.get_mut("x").unwrap();
            meta.state = TxnState::PrepareCommit;
            broker.txns.persist("x", Some(meta)).unwrap();
        }
        drop(partition);
        drop(broker);

        let broker = open(dir.path());
        let view = broker.txns.describe("x").unwrap();
        assert_eq!(view.state, TxnState::CompleteCommit);
        let partition = broker.topics.get("t").unwrap().partition(0).unwrap();
        assert_eq!(
            (partition.high_watermark(), partition.last_stable_offset()),
            (2, 2),
            "the commit marker was written on open"
        );
        // The completed state was persisted: another restart changes nothing.
        drop(partition);
        drop(broker);
        let broker = open(dir.path());
        assert_eq!(
            broker.txns.describe("x").unwrap().state,
            TxnState::CompleteCommit
        );
        let partition = broker.topics.get("t").unwrap().partition(0).unwrap();
        assert_eq!(partition.high_watermark(), 2);
    }

    #[test]
    fn idle_ids_expire() {
        let dir = tempfile::tempdir().unwrap();
        let broker = open(dir.path());
        broker.txns.init_producer_id("old", 60_000, None).unwrap();
        broker.txns.lock().get_mut("old").unwrap().last_update_ms = 0;
        broker.txns.tick();
        assert!(broker.txns.describe("old").is_none());
        drop(broker);
        let broker = open(dir.path());
        assert!(
            broker.txns.describe("old").is_none(),
            "the tombstone was replayed"
        );
    }
}
