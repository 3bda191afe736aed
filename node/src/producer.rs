//! `NativeProducer`: the core producer behind KafkaJS's `producer.send` / `sendBatch`.
//!
//! `send` reads the messages on the JavaScript thread and hands them, in call order, to the
//! core's non-waiting batch entry point ([`HoldPolicy::METADATA`]): records whose topic has no
//! metadata yet are held inside the core in order (and fail at `max.block.ms` /
//! `delivery.timeout.ms` if the topic never appears), so calls that were not awaited keep their
//! order, which an idempotent producer's per-partition sequence relies on, without a task or a
//! queue of our own. When `buffer.memory` is full the call rejects with a retriable
//! `KafkaJSError` (`_QUEUE_FULL`) for the records it could not take (the ones before are
//! sent). The Promise settles once every record of the call is acknowledged or one failed.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use napi::bindgen_prelude::{Array, PromiseRaw};
use napi::Env;
use napi_derive::napi;
use odradek::producer::{DeliveryFuture, HoldPolicy};
use odradek::Producer;
use odradek_bindings::Stage;

use crate::{error, records, rt};

/// One partition's outcome of a `send` call (KafkaJS's `RecordMetadata`).
#[napi(object)]
pub struct PartitionResult {
    /// Topic.
    pub topic_name: String,
    /// Partition.
    pub partition: i32,
    /// Always 0: failures reject the call.
    pub error_code: i32,
    /// Offset of the call's first record in this partition, as a string (-1 with acks=0).
    pub base_offset: String,
    /// Log-append time (`-1`: create time).
    pub log_append_time: String,
    /// Not reported by the core (`-1`).
    pub log_start_offset: String,
}

/// Waits for every delivery and folds them into one result per partition.
async fn settle(deliveries: Vec<DeliveryFuture>) -> napi::Result<Vec<PartitionResult>> {
    let mut base: BTreeMap<(Arc<str>, i32), (i64, i64)> = BTreeMap::new();
    let mut first_error = None;
    for d in deliveries {
        match d.await {
            Ok(meta) => {
                let entry = base
                    .entry((meta.topic.clone(), meta.partition))
                    .or_insert((i64::MAX, -1));
                if meta.offset >= 0 {
                    entry.0 = entry.0.min(meta.offset);
                }
                entry.1 = entry.1.max(meta.timestamp);
            }
            Err(e) => {
                if first_error.is_none() {
                    first_error = Some(error::from_core(&e, Stage::Delivery));
                }
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    Ok(base
        .into_iter()
        .map(|((topic, partition), (offset, _))| PartitionResult {
            topic_name: topic.to_string(),
            partition,
            error_code: 0,
            base_offset: if offset == i64::MAX { -1 } else { offset }.to_string(),
            log_append_time: "-1".to_string(),
            log_start_offset: "-1".to_string(),
        })
        .collect())
}

/// The native producer (one per KafkaJS producer and acks/compression combination).
#[napi]
pub struct NativeProducer {
    core: Arc<Producer>,
    stats: odradek_bindings::stats::Emitter,
}

#[napi]
impl NativeProducer {
    /// Creates a producer from Kafka property names (nothing is connected yet).
    #[napi(constructor)]
    pub fn new(
        config: HashMap<String, String>,
        #[napi(ts_arg_type = "(() => Promise<string>) | undefined | null")] token_provider: Option<
            crate::oauth::JsTokenCallback,
        >,
    ) -> napi::Result<Self> {
        let config = crate::oauth::client_config(config, token_provider)?;
        let core = rt::enter(|| Producer::new(config))?.map_err(error::request)?;
        Ok(NativeProducer {
            core: Arc::new(core),
            stats: odradek_bindings::stats::Emitter::new("producer"),
        })
    }

    /// A statistics snapshot as JSON in librdkafka's schema (docs/statistics.md); starts new
    /// window statistics, so the shell calls it once per `statistics.interval.ms`.
    #[napi]
    pub fn statistics(&self) -> String {
        let shell = odradek_bindings::stats::ProducerShell {
            replyq: 0,
            msg_max: 0,
        };
        odradek_bindings::stats::producer_json(&self.stats, &self.core, shell)
    }

    /// Sends `[{ topic, messages }]`; resolves with one result per partition written to, once
    /// every record is acknowledged (per the producer's `acks`), or rejects with the first
    /// failure.
    #[napi(ts_return_type = "Promise<Array<PartitionResult>>")]
    pub fn send<'env>(
        &self,
        env: &'env Env,
        topic_messages: Array<'env>,
    ) -> napi::Result<PromiseRaw<'env, Vec<PartitionResult>>> {
        let records = records::topic_messages(&topic_messages)?;
        let appended = self
            .core
            .try_send_batch_with(&records, true, HoldPolicy::METADATA)
            .map_err(|e| error::from_core(&e, Stage::Enqueue))?;
        // Records appended or held before a refused one are still delivered; the call reports
        // the refusal (or that buffer.memory had no room for the rest).
        let refused = match appended.refused.first() {
            Some((_, e)) => Some(error::from_core(e, Stage::Enqueue)),
            None if appended.consumed < records.len() => Some(error::from_core(
                &odradek::Error::QueueFull(format!(
                    "buffer.memory ({} bytes) is full: {} of {} records not sent",
                    self.core.cluster().config().producer.buffer_memory,
                    records.len() - appended.consumed,
                    records.len()
                )),
                Stage::Enqueue,
            )),
            None => None,
        };
        let deliveries: Vec<DeliveryFuture> = (0..appended.consumed)
            .filter_map(|i| appended.deliveries.delivery(i))
            .collect();
        rt::promise(env, async move {
            let settled = settle(deliveries).await;
            match refused {
                Some(e) => Err(e),
                None => settled,
            }
        })
    }

    /// Fetches metadata for `topics` (creating them if the broker auto-creates topics): what
    /// KafkaJS's `connect` and partition lookups need. Resolves with the partition counts.
    #[napi(ts_return_type = "Promise<Array<number>>")]
    pub fn partitions_for<'env>(
        &self,
        env: &'env Env,
        topics: Vec<String>,
    ) -> napi::Result<PromiseRaw<'env, Vec<u32>>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            let timeout = core.cluster().config().producer.max_block;
            let deadline = std::time::Instant::now() + timeout;
            let mut out = Vec::with_capacity(topics.len());
            for t in &topics {
                let info = core
                    .cluster()
                    .topic(t, deadline)
                    .await
                    .map_err(error::request)?;
                out.push(info.partitions.len() as u32);
            }
            Ok(out)
        })
    }

    /// Checks that a broker answers (KafkaJS's `connect`).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn connect<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            core.cluster().refresh().await.map_err(error::request)?;
            Ok(())
        })
    }

    /// Calls `callback` with every throttle time a broker reports to this client (KIP-219):
    /// each non-zero one, and the return to 0. Replaces an earlier callback.
    #[napi]
    pub fn on_throttle(
        &self,
        #[napi(ts_arg_type = "(event: ThrottleInfo) => void")]
        callback: crate::throttle::JsThrottleCallback,
    ) {
        crate::throttle::listen(self.core.cluster(), callback);
    }

    /// Calls `callback` with every client-level error (an authentication failure, a broker
    /// that cannot be reached any more, every broker down). Replaces an earlier callback.
    #[napi]
    pub fn on_client_error(
        &self,
        #[napi(ts_arg_type = "(event: ClientErrorInfo) => void")]
        callback: crate::client_errors::JsClientErrorCallback,
    ) {
        crate::client_errors::listen(self.core.cluster(), callback);
    }

    /// Calls `callback` with every request event of this client's connections (answered,
    /// timed out, waiting for an in-flight slot); set once the application listens to them.
    #[napi]
    pub fn on_request(
        &self,
        #[napi(ts_arg_type = "(event: RequestInfoJs) => void")]
        callback: crate::requests::JsRequestCallback,
    ) {
        crate::requests::listen(self.core.cluster(), callback);
    }

    /// Sends everything queued without waiting for `linger.ms` and waits for it.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn flush<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            core.flush().await;
            Ok(())
        })
    }

    /// Registers the producer's `transactional.id` (fencing older instances) and gets its
    /// producer id; once, before the first transaction. Waits up to `max.block.ms`.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn init_transactions<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            let timeout = core.cluster().config().producer.max_block;
            core.init_transactions(timeout)
                .await
                .map_err(error::request)
        })
    }

    /// Opens a transaction.
    #[napi]
    pub fn begin_transaction(&self) -> napi::Result<()> {
        self.core.begin_transaction().map_err(error::request)
    }

    /// Adds `group_id`'s offsets (the next offsets to consume) to the open transaction. With
    /// `consumer` (a member of that group) the commit carries its member id, generation and
    /// `group.instance.id`, so the coordinator fences a consumer that lost its partitions
    /// (KIP-447), as the Java client's `sendOffsetsToTransaction(offsets, groupMetadata)`.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn send_offsets_to_transaction<'env>(
        &self,
        env: &'env Env,
        group_id: String,
        offsets: Vec<crate::consumer::JsTopicPartitionOffset>,
        consumer: Option<&crate::consumer::NativeConsumer>,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        let member = consumer.map(|c| c.core.clone());
        let mut list = Vec::with_capacity(offsets.len());
        for o in &offsets {
            let offset = o
                .offset
                .trim()
                .parse::<i64>()
                .map_err(|_| error::invalid(format!("invalid offset `{}`", o.offset)))?;
            list.push((
                odradek::producer::TopicPartition {
                    topic: o.topic.as_str().into(),
                    partition: o.partition,
                },
                offset,
            ));
        }
        let core = self.core.clone();
        rt::promise(env, async move {
            let from_member = match member {
                Some(c) => c.consumer_group_metadata().await,
                None => None,
            };
            let group = match from_member {
                Some(g) if g.group_id == group_id => g,
                Some(g) => {
                    return Err(error::invalid(format!(
                        "sendOffsets: the consumer is a member of group `{}`, not `{group_id}`",
                        g.group_id
                    )))
                }
                None => odradek::producer::GroupMetadata::new(group_id),
            };
            core.send_offsets_to_transaction(&list, &group)
                .await
                .map_err(error::request)
        })
    }

    /// Sends what is queued and commits the open transaction.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn commit_transaction<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            let timeout = core.cluster().config().producer.delivery_timeout;
            core.commit_transaction(timeout)
                .await
                .map_err(error::request)
        })
    }

    /// Aborts the open transaction.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn abort_transaction<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            let timeout = core.cluster().config().producer.delivery_timeout;
            core.abort_transaction(timeout)
                .await
                .map_err(error::request)
        })
    }

    /// Flushes and closes the producer; later sends fail.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            core.close().await;
            Ok(())
        })
    }
}
