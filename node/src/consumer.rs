//! `NativeConsumer`: the core consumer behind KafkaJS's `consumer.run`.
//!
//! The JavaScript run loop (`node/lib/consumer.js`) calls `poll` for a batch, hands its messages
//! to `eachMessage` / `eachBatch`, then `commit`s what was processed: the core's own auto-commit
//! (which commits positions as soon as records are polled) is turned off so that, as in KafkaJS,
//! only offsets of messages whose handler finished are committed. Rebalances are recorded by a
//! listener on the core's membership task and taken by the loop between batches (KafkaJS's
//! `GROUP_JOIN` event, and re-applying pauses to newly assigned partitions).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;
use odradek::config::OffsetReset;
use odradek::consumer::{RebalanceListener, TopicMatch};
use odradek::producer::TopicPartition;
use odradek::Consumer;
use odradek_bindings::Stage;

use crate::pack::{self, Polled};
use crate::{error, rt};

/// A topic partition as JavaScript passes it.
#[napi(object)]
#[derive(Clone)]
pub struct JsTopicPartition {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
}

/// A topic partition and an offset (a string, as KafkaJS keeps offsets).
#[napi(object)]
pub struct JsTopicPartitionOffset {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Offset; `-1` where nothing is committed.
    pub offset: String,
}

/// A rebalance the group went through: `assigned`, `revoked` or `lost` partitions.
#[napi(object)]
pub struct RebalanceEvent {
    /// `assigned`, `revoked` or `lost`.
    pub kind: String,
    /// The partitions concerned.
    pub partitions: Vec<JsTopicPartition>,
}

/// The member's identity in its group.
#[napi(object)]
pub struct GroupMember {
    /// Group id.
    pub group_id: String,
    /// Member id ("" before joining).
    pub member_id: String,
    /// Generation (-1 outside one).
    pub generation_id: i32,
}

fn to_js(tps: &[TopicPartition]) -> Vec<JsTopicPartition> {
    tps.iter()
        .map(|tp| JsTopicPartition {
            topic: tp.topic.to_string(),
            partition: tp.partition,
        })
        .collect()
}

fn from_js(tps: &[JsTopicPartition]) -> Vec<TopicPartition> {
    tps.iter()
        .map(|tp| TopicPartition {
            topic: tp.topic.as_str().into(),
            partition: tp.partition,
        })
        .collect()
}

fn parse_offset(s: &str) -> napi::Result<i64> {
    s.trim()
        .parse::<i64>()
        .map_err(|_| error::invalid(format!("invalid offset `{s}`")))
}

/// Records the group's rebalances for the run loop.
#[derive(Debug, Default)]
struct Recorder {
    events: Mutex<Vec<(&'static str, Vec<TopicPartition>)>>,
}

impl Recorder {
    fn push(&self, kind: &'static str, partitions: &[TopicPartition]) {
        if let Ok(mut e) = self.events.lock() {
            e.push((kind, partitions.to_vec()));
        }
    }
}

impl RebalanceListener for Recorder {
    fn on_assigned(&self, partitions: &[TopicPartition]) {
        self.push("assigned", partitions);
    }
    fn on_revoked(&self, partitions: &[TopicPartition]) {
        self.push("revoked", partitions);
    }
    fn on_lost(&self, partitions: &[TopicPartition]) {
        self.push("lost", partitions);
    }
}

/// The latest join of the group (KafkaJS's GROUP_JOIN payload).
#[napi(object)]
pub struct JoinInfoJs {
    /// Member id.
    pub member_id: String,
    /// Generation (the member epoch under KIP-848).
    pub generation_id: i32,
    /// The leader's member id ("" under KIP-848, which has no leader).
    pub leader_id: String,
    /// Whether this member led the generation.
    pub is_leader: bool,
    /// The assignor the group chose ("" when the broker picks under KIP-848).
    pub group_protocol: String,
    /// From JoinGroup (KIP-848: the heartbeat response with the target) to the assignment, ms.
    pub duration: f64,
}

/// One per-topic `auto.offset.reset` rule: a topic or a pattern.
#[napi(object)]
pub struct TopicResetRule {
    /// Exactly this topic.
    pub topic: Option<String>,
    /// Topics this regular expression matches.
    pub pattern: Option<String>,
    /// Start at the beginning (else at the end) without a committed offset.
    pub from_beginning: bool,
}

/// The native consumer.
#[napi]
pub struct NativeConsumer {
    pub(crate) core: Arc<Consumer>,
    recorder: Arc<Recorder>,
    stats: odradek_bindings::stats::Emitter,
}

#[napi]
impl NativeConsumer {
    /// Creates a consumer from Kafka property names (nothing is connected yet).
    #[napi(constructor)]
    pub fn new(
        config: HashMap<String, String>,
        #[napi(ts_arg_type = "(() => Promise<string>) | undefined | null")] token_provider: Option<
            crate::oauth::JsTokenCallback,
        >,
    ) -> napi::Result<Self> {
        let config = crate::oauth::client_config(config, token_provider)?;
        let core = rt::enter(|| Consumer::new(config))?.map_err(error::request)?;
        Ok(NativeConsumer {
            core: Arc::new(core),
            recorder: Arc::new(Recorder::default()),
            stats: odradek_bindings::stats::Emitter::new("consumer"),
        })
    }

    /// A statistics snapshot as JSON in librdkafka's schema (docs/statistics.md); starts new
    /// window statistics, so the shell calls it once per `statistics.interval.ms`. Offsets
    /// are committed explicitly here (no offset store): `stored_offset` is -1001.
    #[napi]
    pub fn statistics(&self) -> String {
        let none = |_: &odradek::TopicPartition| None;
        let shell = odradek_bindings::stats::ConsumerShell {
            replyq: 0,
            stored: &none,
        };
        odradek_bindings::stats::consumer_json(&self.stats, &self.core, shell)
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

    /// Joins the group for `topics`, or for every topic matching `pattern` when given.
    #[napi]
    pub fn subscribe(&self, topics: Vec<String>, pattern: Option<String>) -> napi::Result<()> {
        let listener: Arc<dyn RebalanceListener> = self.recorder.clone();
        let _guard = rt::handle()?;
        let _enter = _guard.enter();
        match pattern {
            Some(p) => self.core.subscribe_pattern(&p, Some(listener)),
            None => {
                let names: Vec<&str> = topics.iter().map(String::as_str).collect();
                self.core.subscribe(&names, Some(listener))
            }
        }
        .map_err(error::request)
    }

    /// Per-topic `auto.offset.reset` (KafkaJS's per-subscription `fromBeginning`): each rule
    /// names a topic or a pattern (the `subscribe` pattern syntax), first match wins; other
    /// topics follow `auto.offset.reset`. Replaces earlier rules.
    #[napi]
    pub fn set_topic_resets(&self, rules: Vec<TopicResetRule>) -> napi::Result<()> {
        let mut out = Vec::with_capacity(rules.len());
        for r in rules {
            let matcher = match (r.topic, r.pattern) {
                (Some(t), None) => TopicMatch::Name(t),
                (None, Some(p)) => TopicMatch::pattern(&p).map_err(error::request)?,
                _ => return Err(error::invalid("a reset rule needs a topic or a pattern")),
            };
            let policy = if r.from_beginning {
                OffsetReset::Earliest
            } else {
                OffsetReset::Latest
            };
            out.push((matcher, policy));
        }
        self.core.set_topic_offset_resets(out);
        Ok(())
    }

    /// Waits up to `timeout_ms` for records and resolves with them, packed (see `pack`).
    #[napi(ts_return_type = "Promise<Polled>")]
    pub fn poll<'env>(
        &self,
        env: &'env Env,
        timeout_ms: u32,
    ) -> napi::Result<PromiseRaw<'env, Polled>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            let records = core
                .poll(Duration::from_millis(u64::from(timeout_ms)))
                .await
                .map_err(|e| error::from_core(&e, Stage::Consume))?;
            Ok(pack::pack(&records))
        })
    }

    /// Rebalances since the last call, oldest first.
    #[napi]
    pub fn take_events(&self) -> Vec<RebalanceEvent> {
        let events = match self.recorder.events.lock() {
            Ok(mut e) => std::mem::take(&mut *e),
            Err(_) => Vec::new(),
        };
        events
            .into_iter()
            .map(|(kind, tps)| RebalanceEvent {
                kind: kind.to_string(),
                partitions: to_js(&tps),
            })
            .collect()
    }

    /// Partitions currently assigned.
    #[napi]
    pub fn assignment(&self) -> Vec<JsTopicPartition> {
        to_js(&self.core.assignment())
    }

    /// Commits `offsets` (the next offset to consume per partition) for the group.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn commit<'env>(
        &self,
        env: &'env Env,
        offsets: Vec<JsTopicPartitionOffset>,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        let mut list = Vec::with_capacity(offsets.len());
        for o in &offsets {
            list.push((
                TopicPartition {
                    topic: o.topic.as_str().into(),
                    partition: o.partition,
                },
                parse_offset(&o.offset)?,
            ));
        }
        let core = self.core.clone();
        rt::promise(env, async move {
            if list.is_empty() {
                return Ok(());
            }
            core.commit_sync(Some(&list)).await.map_err(error::request)
        })
    }

    /// The group's committed offsets for `partitions` (`-1` where none).
    #[napi(ts_return_type = "Promise<Array<JsTopicPartitionOffset>>")]
    pub fn committed<'env>(
        &self,
        env: &'env Env,
        partitions: Vec<JsTopicPartition>,
    ) -> napi::Result<PromiseRaw<'env, Vec<JsTopicPartitionOffset>>> {
        let tps = from_js(&partitions);
        let core = self.core.clone();
        rt::promise(env, async move {
            let found = core.committed(&tps).await.map_err(error::request)?;
            Ok(tps
                .iter()
                .map(|tp| JsTopicPartitionOffset {
                    topic: tp.topic.to_string(),
                    partition: tp.partition,
                    offset: found.get(tp).copied().flatten().unwrap_or(-1).to_string(),
                })
                .collect())
        })
    }

    /// Moves an assigned partition's position: an offset, `-2` (earliest) or `-1` (latest).
    /// Records of the partition already fetched are dropped.
    #[napi]
    pub fn seek(&self, topic: String, partition: i32, offset: String) -> napi::Result<()> {
        let tp = TopicPartition {
            topic: topic.as_str().into(),
            partition,
        };
        let _h = rt::handle()?;
        let _enter = _h.enter();
        match parse_offset(&offset)? {
            o if o >= 0 => self.core.seek(&tp, o),
            -2 => self.core.seek_to_beginning(std::slice::from_ref(&tp)),
            -1 => self.core.seek_to_end(std::slice::from_ref(&tp)),
            o => return Err(error::invalid(format!("invalid offset {o} to seek to"))),
        }
        .map_err(error::request)
    }

    /// Pauses the given partitions that are assigned (others are ignored: the run loop
    /// re-applies pauses after each rebalance).
    #[napi]
    pub fn pause(&self, partitions: Vec<JsTopicPartition>) -> napi::Result<()> {
        let assigned = self.core.assignment();
        let tps: Vec<TopicPartition> = from_js(&partitions)
            .into_iter()
            .filter(|tp| assigned.contains(tp))
            .collect();
        self.core.pause(&tps).map_err(error::request)
    }

    /// Resumes the given partitions that are assigned.
    #[napi]
    pub fn resume(&self, partitions: Vec<JsTopicPartition>) -> napi::Result<()> {
        let assigned = self.core.assignment();
        let tps: Vec<TopicPartition> = from_js(&partitions)
            .into_iter()
            .filter(|tp| assigned.contains(tp))
            .collect();
        let _h = rt::handle()?;
        let _enter = _h.enter();
        self.core.resume(&tps).map_err(error::request)
    }

    /// The partition's high watermark as its latest fetch reported it (KafkaJS's
    /// `batch.highWatermark`; no request): a decimal string, "-1" while unknown. With
    /// read_committed it is the last stable offset, the end of what the consumer may read.
    #[napi]
    pub fn high_watermark(&self, topic: String, partition: i32) -> String {
        let tp = odradek::TopicPartition::new(topic, partition);
        let read_committed = self.core.cluster().config().consumer.read_committed;
        match self.core.fetched_watermarks(&tp) {
            Some((_, stable)) if read_committed && stable >= 0 => stable.to_string(),
            Some((high, _)) => high.to_string(),
            None => "-1".to_string(),
        }
    }

    /// Partitions paused.
    #[napi]
    pub fn paused(&self) -> Vec<JsTopicPartition> {
        to_js(&self.core.paused())
    }

    /// The member's group id, member id and generation.
    #[napi(ts_return_type = "Promise<GroupMember | null>")]
    pub fn group_member<'env>(
        &self,
        env: &'env Env,
    ) -> napi::Result<PromiseRaw<'env, Option<GroupMember>>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            Ok(core
                .group_metadata()
                .await
                .map(|(group_id, member_id, generation_id)| GroupMember {
                    group_id,
                    member_id,
                    generation_id,
                }))
        })
    }

    /// What the latest completed join gave this member (KafkaJS's GROUP_JOIN payload): null
    /// before the first assignment.
    #[napi]
    pub fn join_info(&self) -> Option<JoinInfoJs> {
        self.core.join_info().map(|j| JoinInfoJs {
            member_id: j.member_id,
            generation_id: j.generation,
            leader_id: j.leader_id,
            is_leader: j.is_leader,
            group_protocol: j.protocol,
            duration: j.duration.as_millis() as f64,
        })
    }

    /// Leaves the group and closes connections.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let core = self.core.clone();
        rt::promise(env, async move {
            core.close().await;
            Ok(())
        })
    }
}
