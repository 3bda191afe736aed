//! The producer: the bindings' [`ProducerClient`] in push mode. `send` hands a record to the
//! core without waiting for its delivery (it waits only while `buffer.memory` is full, up to
//! `max.block.ms`, as the Java client's `send` does); outcomes reach the foreign
//! [`DeliveryListener`] in batches, on a runtime thread, each under the id the caller gave the
//! record. One foreign call per batch of reports, not per record, keeps the boundary cheap.

mod transactions;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use odradek_bindings::codes;
use odradek_bindings::producer::{Delivery, Event, EventSink, Mode, ProducerClient};
use odradek_bindings::ClientError;
use tokio::sync::oneshot;

use crate::config::{self, Role};
use crate::error::ErrorInfo;
use crate::spawn::on_runtime;
use crate::{ClientErrorListener, NativeError, OutgoingRecord};

/// A record's outcome, under the id it was sent with.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct DeliveryReport {
    /// The id given to `send`.
    pub id: u64,
    /// Partition written to (-1 when the partition was never chosen).
    pub partition: i32,
    /// Offset (-1 on failure or with `acks=0`).
    pub offset: i64,
    /// Timestamp of the record as written (-1 on failure).
    pub timestamp: i64,
    /// Why the record was not written; `null` on success.
    pub error: Option<ErrorInfo>,
}

/// A record of a [`NativeProducer::send_batch`] that was refused before it was queued.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct SendRefusal {
    /// Its index in the batch (its id is `first_id + index`).
    pub index: u32,
    /// Why.
    pub error: ErrorInfo,
}

/// Receives delivery reports. Called on a runtime thread, never concurrently for one producer;
/// an implementation must return quickly and must not throw.
#[uniffi::export(with_foreign)]
pub trait DeliveryListener: Send + Sync {
    /// A batch of reports, in completion order.
    fn on_deliveries(&self, reports: Vec<DeliveryReport>);
}

/// What the bindings' producer carries per record or flush.
pub(crate) enum Waiter {
    /// A record: report under this id.
    Record(u64),
    /// A `flush` call waiting for everything before it.
    Flush(oneshot::Sender<()>),
}

/// A Kafka producer (wrapped by the Kotlin `KafkaProducer`).
#[derive(uniffi::Object)]
pub struct NativeProducer {
    client: Arc<ProducerClient<Waiter>>,
    max_block: Duration,
}

impl std::fmt::Debug for NativeProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeProducer").finish_non_exhaustive()
    }
}

fn report(id: u64, result: Result<odradek::RecordMetadata, ClientError>) -> DeliveryReport {
    match result {
        Ok(m) => DeliveryReport {
            id,
            partition: m.partition,
            offset: m.offset,
            timestamp: m.timestamp,
            error: None,
        },
        Err(e) => DeliveryReport {
            id,
            partition: -1,
            offset: -1,
            timestamp: -1,
            error: Some(ErrorInfo::from(&e)),
        },
    }
}

/// Hands a batch of events to the listeners: reports in order, each flush released only after
/// every report before it was handed over, client-level errors to `errors` (logged without).
fn dispatch(
    listener: &dyn DeliveryListener,
    errors: Option<&dyn ClientErrorListener>,
    events: Vec<Event<Waiter>>,
) {
    let mut reports = Vec::with_capacity(events.len());
    for event in events {
        match event {
            Event::Delivery(Delivery {
                opaque: Waiter::Record(id),
                result,
            }) => reports.push(report(id, result)),
            Event::Flushed(Waiter::Flush(done)) => {
                if !reports.is_empty() {
                    listener.on_deliveries(std::mem::take(&mut reports));
                }
                // The flush caller may have been cancelled: nobody to tell then.
                let _ = done.send(());
            }
            Event::Error(e) => match errors {
                Some(l) => l.on_error(ErrorInfo::from(&e)),
                None => tracing::warn!(error = %e, "producer error"),
            },
            Event::Delivery(_) | Event::Flushed(Waiter::Record(_)) | Event::Stats(_) => {}
        }
    }
    if !reports.is_empty() {
        listener.on_deliveries(reports);
    }
}

#[uniffi::export]
impl NativeProducer {
    /// Creates a producer from Kafka property names (`bootstrap.servers`, `linger.ms`,
    /// `compression.type`, `transactional.id`, ...); unknown keys and bad values fail here,
    /// naming the key.
    #[uniffi::constructor]
    pub fn new(
        config: HashMap<String, String>,
        listener: Arc<dyn DeliveryListener>,
        error_listener: Option<Arc<dyn ClientErrorListener>>,
    ) -> Result<Arc<Self>, NativeError> {
        let (core, settings) = config::for_role(Role::Producer, config)?;
        let max_block = core.producer.max_block;
        let sink: EventSink<Waiter> =
            Arc::new(move |events| dispatch(&*listener, error_listener.as_deref(), events));
        let client = ProducerClient::from_config(core, settings, Mode::Push(sink))?;
        Ok(Arc::new(NativeProducer {
            client: Arc::new(client),
            max_block,
        }))
    }

    /// Sends a record; its outcome is reported to the listener under `id`. Errors found before
    /// the record is queued (too large, unknown partition, closed, `buffer.memory` still full
    /// after `max.block.ms`) are thrown instead, and nothing is reported for `id`.
    pub fn send(&self, record: OutgoingRecord, id: u64) -> Result<(), NativeError> {
        let record = record.into_core();
        let mut deadline = None;
        loop {
            match self
                .client
                .produce(|| record.clone(), Some(Waiter::Record(id)))
            {
                Err(e) if e.code() == codes::QUEUE_FULL => {
                    let until = *deadline.get_or_insert_with(|| Instant::now() + self.max_block);
                    if Instant::now() >= until {
                        return Err(e.into());
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
                other => return other.map_err(NativeError::from),
            }
        }
    }

    /// Sends `records` in order, the i-th under id `first_id + i`: one foreign call for many
    /// records (each call across the boundary costs the foreign side a few allocations, so
    /// the Kotlin producer hands records over in batches). Waits while `buffer.memory` is full,
    /// up to `max.block.ms`, like [`NativeProducer::send`]; records refused before they were
    /// queued are returned (nothing is reported for them), the others are reported to the
    /// listener.
    pub fn send_batch(&self, records: Vec<OutgoingRecord>, first_id: u64) -> Vec<SendRefusal> {
        let records: Vec<odradek::ProducerRecord> =
            records.into_iter().map(OutgoingRecord::into_core).collect();
        let mut refused = Vec::new();
        let mut start = 0;
        let mut deadline = None;
        while start < records.len() {
            let rest = &records[start..];
            let outcome = self.client.produce_batch(rest.len(), |i| {
                Ok((
                    rest[i].clone(),
                    Some(Waiter::Record(first_id + (start + i) as u64)),
                ))
            });
            let failed = match outcome {
                Ok(o) => o.failed,
                // The client is unusable: every record is refused with the same error.
                Err(e) => (0..rest.len()).map(|i| (i, e.clone())).collect(),
            };
            // `_QUEUE_FULL` failures are the tail the client stopped at: retry them in order
            // once there is room again, until max.block.ms.
            let full_from = failed
                .iter()
                .find(|(_, e)| e.code() == codes::QUEUE_FULL)
                .map(|(i, _)| *i);
            for (i, e) in &failed {
                if full_from.is_none_or(|f| *i < f) {
                    refused.push(SendRefusal {
                        index: (start + i) as u32,
                        error: ErrorInfo::from(e),
                    });
                }
            }
            let Some(f) = full_from else { break };
            let until = *deadline.get_or_insert_with(|| Instant::now() + self.max_block);
            if Instant::now() >= until {
                refused.extend(
                    failed
                        .iter()
                        .filter(|(i, _)| *i >= f)
                        .map(|(i, e)| SendRefusal {
                            index: (start + i) as u32,
                            error: ErrorInfo::from(e),
                        }),
                );
                break;
            }
            start += f;
            std::thread::sleep(Duration::from_micros(200));
        }
        refused
    }

    /// Sends everything queued without waiting for `linger.ms` and returns once every record
    /// sent before the call is resolved and its report handed to the listener.
    pub async fn flush(&self) -> Result<(), NativeError> {
        self.client.check_usable()?;
        let (done, wait) = oneshot::channel();
        self.client.flush_then_notify(Waiter::Flush(done));
        wait.await.map_err(|_| {
            NativeError::from(ClientError::new(
                codes::DESTROY,
                Some("the producer stopped before the flush completed".into()),
            ))
        })
    }

    /// Records sent but not yet reported.
    pub fn in_flight(&self) -> u64 {
        self.client.len() as u64
    }

    /// Flushes (bounded by `delivery.timeout.ms`) and closes the producer; later sends fail
    /// with `_DESTROY`.
    pub async fn shutdown(&self) -> Result<(), NativeError> {
        on_runtime(self.client.close()).await
    }
}
