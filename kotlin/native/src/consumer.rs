//! The consumer: the bindings' [`ConsumerClient`], shaped like the Java client's. `poll`
//! returns up to `max.poll.records` records; rebalance events are served inside `poll` (and
//! `unsubscribe` / `close`), on the caller's thread, through the foreign
//! [`RebalanceListener`], so the listener may commit or seek as in Java.

mod offsets;
mod rebalance;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use odradek_bindings::consumer::{ConsumerClient, Item, OFFSET_BEGINNING, OFFSET_END};
use odradek_bindings::ClientError;
use tokio::sync::{oneshot, Notify};

use crate::config::{self, Role};
use crate::types::{from_core_list, to_core_list};
use crate::{ClientErrorListener, ErrorInfo, IncomingRecord, NativeError, TopicPartition};

pub use rebalance::RebalanceListener;

/// A Kafka consumer (wrapped by the Kotlin `KafkaConsumer`).
#[derive(uniffi::Object)]
pub struct NativeConsumer {
    client: Arc<ConsumerClient>,
    listener: Mutex<Option<Arc<dyn RebalanceListener>>>,
    /// Client-level errors, served inside `poll`.
    error_listener: Option<Arc<dyn ClientErrorListener>>,
    /// Woken when a group event is queued.
    group_event: Arc<Notify>,
    /// A consume error met after records of the same poll: thrown by the next poll.
    pending_error: Mutex<Option<ClientError>>,
    max_poll_records: usize,
}

impl std::fmt::Debug for NativeConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeConsumer").finish_non_exhaustive()
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl NativeConsumer {
    /// Hands the client-level errors waiting to the error listener (kept without one, up to
    /// the bindings' bound).
    fn serve_errors(&self) {
        if let Some(l) = &self.error_listener {
            for e in self.client.take_errors() {
                l.on_error(ErrorInfo::from(&e));
            }
        }
    }

    /// Waits up to `wait` for the core to queue records, or until a group event is queued.
    async fn fetch(&self, wait: Duration) {
        let (done, fetched) = oneshot::channel();
        self.client.fetch_then(wait, move |n| {
            let _ = done.send(n);
        });
        tokio::select! {
            _ = fetched => {}
            _ = self.group_event.notified() => {}
        }
    }

    /// Takes up to `max.poll.records` queued records; a consume error ends the batch (thrown
    /// now if no record came before it, else by the next poll).
    fn take_records(&self) -> Result<Vec<IncomingRecord>, NativeError> {
        if let Some(e) = lock(&self.pending_error).take() {
            return Err(e.into());
        }
        let mut records = Vec::new();
        while records.len() < self.max_poll_records {
            match self.client.take_one() {
                None => break,
                Some(Item::Record(r)) => records.push(IncomingRecord::from_core(r)),
                Some(Item::Error(e)) if records.is_empty() => return Err(e.into()),
                Some(Item::Error(e)) => {
                    *lock(&self.pending_error) = Some(e);
                    break;
                }
                Some(Item::Eof { .. }) => {}
            }
        }
        Ok(records)
    }
}

#[uniffi::export]
impl NativeConsumer {
    /// Creates a consumer from Kafka property names (`bootstrap.servers`, `group.id`,
    /// `auto.offset.reset`, `isolation.level`, ...); unknown keys fail here, naming the key.
    #[uniffi::constructor]
    pub fn new(
        config: HashMap<String, String>,
        error_listener: Option<Arc<dyn ClientErrorListener>>,
    ) -> Result<Arc<Self>, NativeError> {
        let (core, settings) = config::for_role(Role::Consumer, config)?;
        let max_poll_records = core.consumer.max_poll_records.max(1);
        let client = ConsumerClient::from_config(core, settings)?;
        let group_event = Arc::new(Notify::new());
        let wake = group_event.clone();
        client.set_event_hook(Some(Arc::new(move || wake.notify_one())));
        Ok(Arc::new(NativeConsumer {
            client: Arc::new(client),
            listener: Mutex::new(None),
            error_listener,
            group_event,
            pending_error: Mutex::new(None),
            max_poll_records,
        }))
    }

    /// Subscribes to `topics` (names, or regular expressions starting with `^`), replacing any
    /// previous subscription or assignment. Needs `group.id`.
    pub fn subscribe(
        &self,
        topics: Vec<String>,
        listener: Option<Arc<dyn RebalanceListener>>,
    ) -> Result<(), NativeError> {
        *lock(&self.listener) = listener;
        Ok(self.client.subscribe(&topics)?)
    }

    /// Replaces the assignment with `partitions` (no group membership); each starts at the
    /// committed offset (with `group.id`) or per `auto.offset.reset`.
    pub fn assign(&self, partitions: Vec<TopicPartition>) -> Result<(), NativeError> {
        let list: Vec<_> = partitions
            .iter()
            .map(|tp| (tp.to_core(), odradek_bindings::consumer::OFFSET_INVALID))
            .collect();
        Ok(self.client.assign(&list)?)
    }

    /// The partitions currently assigned.
    pub fn assignment(&self) -> Vec<TopicPartition> {
        from_core_list(&self.client.assignment())
    }

    /// Returns up to `max.poll.records` records, waiting up to `timeout_ms` for the first;
    /// serves rebalance events (listener callbacks) on the calling thread first.
    pub async fn poll(&self, timeout_ms: u64) -> Result<Vec<IncomingRecord>, NativeError> {
        self.client.check_usable()?;
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        let mut fetched = false;
        loop {
            self.serve_errors();
            self.serve_group_events()?;
            let records = self.take_records()?;
            if !records.is_empty() {
                return Ok(records);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if fetched && left.is_zero() {
                return Ok(records);
            }
            self.fetch(left).await;
            fetched = true;
        }
    }

    /// Moves a partition's position to `offset` (it must be assigned).
    pub fn seek(&self, partition: TopicPartition, offset: i64) -> Result<(), NativeError> {
        if offset < 0 {
            return Err(ClientError::invalid_arg(format!(
                "seek offset must not be negative: {offset}"
            ))
            .into());
        }
        Ok(self.client.seek(&partition.to_core(), offset)?)
    }

    /// Moves the partitions' positions to their log start offsets.
    pub fn seek_to_beginning(&self, partitions: Vec<TopicPartition>) -> Result<(), NativeError> {
        for tp in &partitions {
            self.client.seek(&tp.to_core(), OFFSET_BEGINNING)?;
        }
        Ok(())
    }

    /// Moves the partitions' positions to their high watermarks.
    pub fn seek_to_end(&self, partitions: Vec<TopicPartition>) -> Result<(), NativeError> {
        for tp in &partitions {
            self.client.seek(&tp.to_core(), OFFSET_END)?;
        }
        Ok(())
    }

    /// Stops fetching the partitions (until `resume`).
    pub fn pause(&self, partitions: Vec<TopicPartition>) -> Result<(), NativeError> {
        Ok(self.client.pause(&to_core_list(&partitions))?)
    }

    /// Resumes paused partitions.
    pub fn resume(&self, partitions: Vec<TopicPartition>) -> Result<(), NativeError> {
        Ok(self.client.resume(&to_core_list(&partitions))?)
    }

    /// The paused partitions.
    pub fn paused(&self) -> Vec<TopicPartition> {
        from_core_list(&self.client.core().paused())
    }

    /// Leaves the group (the revoke callback runs on this thread while it does).
    pub async fn unsubscribe(&self) -> Result<(), NativeError> {
        let fut = self.client.unsubscribe();
        self.serving(fut).await?;
        *lock(&self.listener) = None;
        Ok(())
    }

    /// Leaves the group (serving the final revoke), commits with `enable.auto.commit`, and
    /// closes connections. Later calls fail.
    pub async fn shutdown(&self) -> Result<(), NativeError> {
        if self.client.is_closed() {
            return Ok(());
        }
        let fut = self.client.close();
        self.serving(fut).await?;
        *lock(&self.listener) = None;
        Ok(())
    }
}
