//! The interception point: tests make the broker misbehave per API key, and watch what clients
//! send.
//!
//! Modelled on franz-go kfake's per-key control functions and librdkafka's mock cluster
//! (`rd_kafka_mock_push_request_errors`, `rd_kafka_mock_broker_set_rtt`). The dispatcher asks
//! the [`Interceptor`] about every decoded request; a matching [`Rule`] makes it
//!
//! - answer with an injected error code instead of calling the handler ([`Action::Error`]): a
//!   response shaped like the real one, built from the request
//!   ([`crate::handlers::error_response`], which lists the supported APIs: Produce, Fetch,
//!   ListOffsets, Metadata, OffsetCommit, OffsetFetch, FindCoordinator, JoinGroup, SyncGroup,
//!   Heartbeat, LeaveGroup, CreateTopics, InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
//!   EndTxn, TxnOffsetCommit; an error rule for any other API is refused when it is added),
//! - handle the request, then hold its response back ([`Action::Delay`]; the connection's later
//!   responses wait too, since responses leave in request order),
//! - read the request and never answer it ([`Action::Drop`]), or
//! - close the connection instead of answering ([`Action::Close`]).
//!
//! A rule can be narrowed to one client id, one broker of an in-process test cluster
//! ([`Rule::broker`]), one topic ([`Rule::topic`]) or one partition ([`Rule::partition`]), and
//! can hold its answer back for a while ([`Rule::delayed`], librdkafka's per-error RTT). An
//! error for a topic or partition fails only the matching items of a Produce, Fetch,
//! ListOffsets or OffsetForLeaderEpoch and the rest of the request is answered normally (see
//! [`super::items`]); for other APIs it fails the whole request when any item matches.
//!
//! Rules are tried in the order they were added and the first match applies; a rule applies a
//! set number of times (once by default) and then disappears, so errors pushed with
//! [`Interceptor::push_errors`] are consumed one per matching request, in order. When the first
//! matching rule is a per-item error, later per-item error rules may claim the request's other
//! items too (each rule at most once per request, each item at most one error). With
//! [`Interceptor::record_requests`] on, every request is also logged ([`LoggedRequest`]: API,
//! version, client id, correlation id, peer, broker, partitions, and what the interceptor
//! did).
//!
//! With no rule and no log the dispatcher pays one relaxed atomic load per request.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use kafka_protocol::messages::ApiKey;
use odradek::ErrorCode;

use super::items::{self, Item};
use crate::handlers::{error_response, RequestContext};
use crate::{Error, Result};

/// Most requests the log keeps; older entries are dropped first.
pub const MAX_LOGGED_REQUESTS: usize = 10_000;

/// What the broker does with a request a rule matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Answer with this error code (in the API's own response shape) without handling the
    /// request.
    Error(ErrorCode),
    /// Handle the request, then send the response this much later.
    Delay(Duration),
    /// Read the request and send nothing (the connection stays open).
    Drop,
    /// Close the connection instead of answering.
    Close,
}

/// Which requests an action applies to, and how many times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    api_key: ApiKey,
    client_id: Option<String>,
    broker: Option<i32>,
    topic: Option<String>,
    partition: Option<i32>,
    action: Action,
    /// Extra time before the answer (or the closing) goes out.
    delay: Option<Duration>,
    /// Applications left; `None` applies until the rule is removed.
    remaining: Option<u64>,
}

impl Rule {
    /// `action` for the next request of `api_key` (once; see [`Rule::times`], [`Rule::always`]).
    pub fn new(api_key: ApiKey, action: Action) -> Rule {
        Rule {
            api_key,
            client_id: None,
            broker: None,
            topic: None,
            partition: None,
            action,
            delay: None,
            remaining: Some(1),
        }
    }

    /// Only requests that arrive at this broker (node id) of an in-process test cluster; a
    /// broker started with `server::start` is its configured `node.id`.
    pub fn broker(mut self, node_id: i32) -> Rule {
        self.broker = Some(node_id);
        self
    }

    /// Only the items of this topic (see the module comment for which APIs answer per item).
    pub fn topic(mut self, topic: impl Into<String>) -> Rule {
        self.topic = Some(topic.into());
        self
    }

    /// Only this partition of `topic`.
    pub fn partition(mut self, topic: impl Into<String>, partition: i32) -> Rule {
        self.topic = Some(topic.into());
        self.partition = Some(partition);
        self
    }

    /// Holds the answer back this long first (an error with a round-trip time, as librdkafka's
    /// `rd_kafka_mock_broker_push_request_error_rtts`).
    pub fn delayed(mut self, delay: Duration) -> Rule {
        self.delay = Some(delay);
        self
    }

    /// The API the rule is for.
    pub fn api_key(&self) -> ApiKey {
        self.api_key
    }

    /// Whether the rule concerns items (a topic or partition filter).
    fn per_item(&self) -> bool {
        self.topic.is_some()
    }

    fn matches_item(&self, item: &Item) -> bool {
        self.topic.as_deref().is_none_or(|t| t == item.topic)
            && self.partition.is_none_or(|p| p == item.partition)
    }

    /// Only requests whose header carries this client id.
    pub fn client_id(mut self, client_id: impl Into<String>) -> Rule {
        self.client_id = Some(client_id.into());
        self
    }

    /// Applies to the next `n` matching requests (0 is treated as 1).
    pub fn times(mut self, n: u64) -> Rule {
        self.remaining = Some(n.max(1));
        self
    }

    /// Applies to every matching request until removed.
    pub fn always(mut self) -> Rule {
        self.remaining = None;
        self
    }

    fn matches(&self, ctx: &RequestContext<'_>, node_id: i32) -> bool {
        self.api_key == ctx.api_key
            && self
                .client_id
                .as_deref()
                .is_none_or(|id| id == ctx.client_id())
            && self.broker.is_none_or(|b| b == node_id)
    }
}

/// Names a rule for [`Interceptor::remove`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RuleId(u64);

impl RuleId {
    /// The id as a number (for language bindings).
    pub fn get(self) -> u64 {
        self.0
    }

    /// An id from [`RuleId::get`]'s number.
    pub fn from_raw(id: u64) -> RuleId {
        RuleId(id)
    }
}

/// One request as the log saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedRequest {
    /// The API.
    pub api_key: ApiKey,
    /// Its version.
    pub api_version: i16,
    /// The header's client id (`None`: null).
    pub client_id: Option<String>,
    /// The header's correlation id.
    pub correlation_id: i32,
    /// Where the request came from.
    pub peer: SocketAddr,
    /// The broker (node id) that received it.
    pub broker: i32,
    /// The topic-partitions it named (partition -1 for topic-level items such as Metadata's).
    pub partitions: Vec<(String, i32)>,
    /// What the interceptor did with the whole request (`None`: handled normally, or only
    /// some items failed: see `item_errors`).
    pub action: Option<Action>,
    /// Errors injected into single items.
    pub item_errors: Vec<(String, i32, ErrorCode)>,
}

/// What the dispatcher does with one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// An action for the whole request.
    pub whole: Option<Action>,
    /// Errors for single items (the rest is handled normally).
    pub item_errors: Vec<(Item, ErrorCode)>,
    /// Time to hold the answer back (from [`Rule::delayed`]).
    pub delay: Option<Duration>,
}

#[derive(Debug, Default)]
struct State {
    rules: Vec<(RuleId, Rule)>,
    next_id: u64,
    recording: bool,
    log: VecDeque<LoggedRequest>,
}

/// Uses up one application of rule `i`; true if it is now gone.
fn consume(rules: &mut [(RuleId, Rule)], i: usize) -> bool {
    match rules[i].1.remaining.as_mut() {
        Some(left) => {
            *left = left.saturating_sub(1);
            *left == 0
        }
        None => false,
    }
}

impl State {
    fn push(&mut self, rule: Rule) -> RuleId {
        let id = RuleId(self.next_id);
        self.next_id += 1;
        self.rules.push((id, rule));
        id
    }
}

/// Refuses an injected error for an API whose error response cannot be built.
fn check_supported(rule: &Rule) -> Result<()> {
    let answerable = error_response::supports(rule.api_key) || items::splittable(rule.api_key);
    if matches!(rule.action, Action::Error(_)) && !answerable {
        return Err(Error::Intercept(format!(
            "injecting an error into {:?} is not supported; supported APIs: {:?}",
            rule.api_key,
            error_response::SUPPORTED
        )));
    }
    if rule.partition.is_some() && rule.topic.is_none() {
        return Err(Error::Intercept("a partition filter needs a topic".into()));
    }
    Ok(())
}

/// Per-API-key fault injection and request log, shared by every connection of a broker
/// (`RunningBroker::interceptor`).
///
/// ```no_run
/// # async fn example(running: odradek_broker::server::RunningBroker) -> odradek_broker::Result<()> {
/// use std::time::Duration;
/// use kafka_protocol::messages::ApiKey;
/// use odradek::ErrorCode;
/// use odradek_broker::server::{Action, Rule};
///
/// let hooks = &running.interceptor;
/// // The next two Produce requests fail as if this broker had lost leadership.
/// hooks.push_errors(ApiKey::Produce, [ErrorCode::NotLeaderOrFollower; 2])?;
/// // Every Fetch from client "slow-consumer" is answered a second late.
/// hooks.add(
///     Rule::new(ApiKey::Fetch, Action::Delay(Duration::from_secs(1)))
///         .client_id("slow-consumer")
///         .always(),
/// )?;
/// hooks.record_requests(true);
/// // ... run the client ...
/// let produced = hooks
///     .requests()
///     .iter()
///     .filter(|r| r.api_key == ApiKey::Produce)
///     .count();
/// # let _ = produced;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Default)]
pub struct Interceptor {
    /// Whether any rule exists or the log is on: the only thing read when neither is.
    active: AtomicBool,
    state: Mutex<State>,
}

impl Interceptor {
    /// An interceptor with no rules and the log off.
    pub fn new() -> Interceptor {
        Interceptor::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn refresh_active(&self, state: &State) {
        let active = state.recording || !state.rules.is_empty();
        self.active.store(active, Ordering::Relaxed);
    }

    /// Adds a rule after those already there. Fails for an [`Action::Error`] on an API that
    /// has no error response (see [`error_response::SUPPORTED`]).
    pub fn add(&self, rule: Rule) -> Result<RuleId> {
        check_supported(&rule)?;
        let mut state = self.lock();
        let id = state.push(rule);
        self.refresh_active(&state);
        Ok(id)
    }

    /// Queues one error per code for the next requests of `api_key`, consumed one per request
    /// in order (librdkafka's `push_request_errors`). All or none are added.
    pub fn push_errors(
        &self,
        api_key: ApiKey,
        codes: impl IntoIterator<Item = ErrorCode>,
    ) -> Result<()> {
        let rules: Vec<Rule> = codes
            .into_iter()
            .map(|code| Rule::new(api_key, Action::Error(code)))
            .collect();
        if let Some(first) = rules.first() {
            check_supported(first)?;
        }
        let mut state = self.lock();
        for rule in rules {
            state.push(rule);
        }
        self.refresh_active(&state);
        Ok(())
    }

    /// Removes a rule; false if it was already used up or removed.
    pub fn remove(&self, id: RuleId) -> bool {
        let mut state = self.lock();
        let before = state.rules.len();
        state.rules.retain(|(r, _)| *r != id);
        self.refresh_active(&state);
        state.rules.len() != before
    }

    /// Removes every rule (the log is kept).
    pub fn clear_rules(&self) {
        let mut state = self.lock();
        state.rules.clear();
        self.refresh_active(&state);
    }

    /// How many rules are still waiting to apply (pushed errors not consumed yet included).
    pub fn pending_rules(&self) -> usize {
        self.lock().rules.len()
    }

    /// Turns the request log on or off (turning it off keeps what was logged).
    pub fn record_requests(&self, on: bool) {
        let mut state = self.lock();
        state.recording = on;
        self.refresh_active(&state);
    }

    /// The logged requests, oldest first.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.lock().log.iter().cloned().collect()
    }

    /// The logged requests, oldest first, emptying the log.
    pub fn take_requests(&self) -> Vec<LoggedRequest> {
        self.lock().log.drain(..).collect()
    }

    /// Whether any rule or the log is on (one relaxed load: the dispatcher's fast path).
    #[inline]
    pub(crate) fn is_active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// What to do with a decoded request that arrived at broker `node_id`; `items` lists its
    /// topic-partitions (called only when a rule filters on them or the log is on). Uses up one
    /// application of each rule applied and logs the request if the log is on.
    pub(crate) fn intercept(
        &self,
        ctx: &RequestContext<'_>,
        node_id: i32,
        items: impl FnOnce() -> Vec<Item>,
    ) -> Verdict {
        if !self.is_active() {
            return Verdict::default();
        }
        self.intercept_slow(ctx, node_id, items)
    }

    #[cold]
    fn intercept_slow(
        &self,
        ctx: &RequestContext<'_>,
        node_id: i32,
        items: impl FnOnce() -> Vec<Item>,
    ) -> Verdict {
        let mut state = self.lock();
        let needs_items = state.recording
            || state
                .rules
                .iter()
                .any(|(_, r)| r.per_item() && r.matches(ctx, node_id));
        let items = if needs_items { items() } else { Vec::new() };
        let mut verdict = Verdict::default();
        let mut gone = Vec::new();
        for i in 0..state.rules.len() {
            let rule = &state.rules[i].1;
            if !rule.matches(ctx, node_id) {
                continue;
            }
            let collecting = !verdict.item_errors.is_empty();
            if !rule.per_item() {
                if collecting {
                    continue;
                }
                verdict.whole = Some(rule.action);
                verdict.delay = rule.delay;
                if consume(&mut state.rules, i) {
                    gone.push(i);
                }
                break;
            }
            let matched: Vec<&Item> = items
                .iter()
                .filter(|it| rule.matches_item(it))
                .filter(|it| !verdict.item_errors.iter().any(|(e, _)| e == *it))
                .collect();
            if matched.is_empty() {
                continue;
            }
            match rule.action {
                Action::Error(code) if items::splittable(ctx.api_key) => {
                    verdict
                        .item_errors
                        .extend(matched.into_iter().map(|it| (it.clone(), code)));
                    verdict.delay = verdict.delay.max(rule.delay);
                }
                _ if collecting => continue,
                action => {
                    verdict.whole = Some(action);
                    verdict.delay = rule.delay;
                    if consume(&mut state.rules, i) {
                        gone.push(i);
                    }
                    break;
                }
            }
            if consume(&mut state.rules, i) {
                gone.push(i);
            }
        }
        for i in gone.into_iter().rev() {
            state.rules.remove(i);
        }
        if state.recording {
            if state.log.len() >= MAX_LOGGED_REQUESTS {
                state.log.pop_front();
            }
            state.log.push_back(LoggedRequest {
                api_key: ctx.api_key,
                api_version: ctx.api_version,
                client_id: ctx.client_id.as_ref().map(|c| c.to_string()),
                correlation_id: ctx.correlation_id,
                peer: ctx.peer(),
                broker: node_id,
                partitions: items
                    .iter()
                    .map(|i| (i.topic.clone(), i.partition))
                    .collect(),
                action: verdict.whole,
                item_errors: verdict
                    .item_errors
                    .iter()
                    .map(|(i, c)| (i.topic.clone(), i.partition, *c))
                    .collect(),
            });
        }
        self.refresh_active(&state);
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handlers::ConnectionContext;
    use kafka_protocol::protocol::StrBytes;

    fn ctx<'c>(conn: &'c ConnectionContext, key: ApiKey, client: &str) -> RequestContext<'c> {
        RequestContext {
            connection: conn,
            api_key: key,
            api_version: 3,
            correlation_id: 11,
            client_id: Some(StrBytes::from_string(client.to_string())),
        }
    }

    #[test]
    fn pushed_errors_are_consumed_in_order_one_per_request() {
        let conn = ConnectionContext::plaintext("127.0.0.1:1".parse().unwrap(), "PLAINTEXT");
        let i = Interceptor::new();
        assert_eq!(
            i.intercept(&ctx(&conn, ApiKey::Produce, "a"), 1, Vec::new)
                .whole,
            None
        );
        i.push_errors(
            ApiKey::Produce,
            [ErrorCode::NotLeaderOrFollower, ErrorCode::RequestTimedOut],
        )
        .unwrap();
        assert_eq!(
            i.intercept(&ctx(&conn, ApiKey::Fetch, "a"), 1, Vec::new)
                .whole,
            None
        );
        assert_eq!(
            i.intercept(&ctx(&conn, ApiKey::Produce, "a"), 1, Vec::new)
                .whole,
            Some(Action::Error(ErrorCode::NotLeaderOrFollower))
        );
        assert_eq!(i.pending_rules(), 1);
        assert_eq!(
            i.intercept(&ctx(&conn, ApiKey::Produce, "a"), 1, Vec::new)
                .whole,
            Some(Action::Error(ErrorCode::RequestTimedOut))
        );
        assert_eq!(
            i.intercept(&ctx(&conn, ApiKey::Produce, "a"), 1, Vec::new)
                .whole,
            None
        );
        assert!(!i.active.load(Ordering::Relaxed), "idle again");
    }

    #[test]
    fn filters_counts_removal_and_refusals() {
        let conn = ConnectionContext::plaintext("127.0.0.1:1".parse().unwrap(), "PLAINTEXT");
        let i = Interceptor::new();
        let always = i
            .add(
                Rule::new(ApiKey::Heartbeat, Action::Drop)
                    .client_id("b")
                    .always(),
            )
            .unwrap();
        i.add(Rule::new(ApiKey::Metadata, Action::Close).times(2))
            .unwrap();
        assert_eq!(
            i.intercept(&ctx(&conn, ApiKey::Heartbeat, "a"), 1, Vec::new)
                .whole,
            None
        );
        for _ in 0..3 {
            assert_eq!(
                i.intercept(&ctx(&conn, ApiKey::Heartbeat, "b"), 1, Vec::new)
                    .whole,
                Some(Action::Drop)
            );
        }
        assert_eq!(
            i.intercept(&ctx(&conn, ApiKey::Metadata, "a"), 1, Vec::new)
                .whole,
            Some(Action::Close)
        );
        assert_eq!(
            i.intercept(&ctx(&conn, ApiKey::Metadata, "a"), 1, Vec::new)
                .whole,
            Some(Action::Close)
        );
        assert_eq!(
            i.intercept(&ctx(&conn, ApiKey::Metadata, "a"), 1, Vec::new)
                .whole,
            None
        );
        assert!(i.remove(always));
        assert!(!i.remove(always));
        assert_eq!(
            i.intercept(&ctx(&conn, ApiKey::Heartbeat, "b"), 1, Vec::new)
                .whole,
            None
        );
        let refused = i.push_errors(ApiKey::DescribeConfigs, [ErrorCode::InvalidRequest]);
        assert!(matches!(refused, Err(Error::Intercept(_))), "{refused:?}");
        assert_eq!(i.pending_rules(), 0);
        // Delays and drops are fine for any API.
        i.add(Rule::new(
            ApiKey::DescribeConfigs,
            Action::Delay(Duration::from_millis(1)),
        ))
        .unwrap();
    }

    #[test]
    fn the_log_records_what_was_done() {
        let conn = ConnectionContext::plaintext("127.0.0.1:9".parse().unwrap(), "PLAINTEXT");
        let i = Interceptor::new();
        i.record_requests(true);
        i.push_errors(ApiKey::Fetch, [ErrorCode::NotLeaderOrFollower])
            .unwrap();
        i.intercept(&ctx(&conn, ApiKey::Fetch, "c1"), 1, Vec::new);
        i.intercept(&ctx(&conn, ApiKey::Fetch, "c1"), 1, Vec::new);
        let log = i.take_requests();
        assert_eq!(log.len(), 2);
        assert_eq!(log[0].client_id.as_deref(), Some("c1"));
        assert_eq!(log[0].correlation_id, 11);
        assert_eq!(log[0].peer.port(), 9);
        assert_eq!(
            log[0].action,
            Some(Action::Error(ErrorCode::NotLeaderOrFollower))
        );
        assert_eq!(log[1].action, None);
        assert_eq!(log[1].broker, 1);
        assert!(i.requests().is_empty());
        i.record_requests(false);
        i.intercept(&ctx(&conn, ApiKey::Fetch, "c1"), 1, Vec::new);
        assert!(i.requests().is_empty());
    }

    fn item(topic: &str, partition: i32) -> Item {
        Item {
            topic: topic.into(),
            topic_id: uuid::Uuid::nil(),
            partition,
            current_leader_epoch: -1,
        }
    }

    #[test]
    fn item_rules_fail_only_their_items_and_broker_filters_apply() {
        let conn = ConnectionContext::plaintext("127.0.0.1:1".parse().unwrap(), "PLAINTEXT");
        let i = Interceptor::new();
        i.add(
            Rule::new(
                ApiKey::Produce,
                Action::Error(ErrorCode::NotLeaderOrFollower),
            )
            .partition("t", 1)
            .times(2),
        )
        .unwrap();
        i.add(
            Rule::new(ApiKey::Produce, Action::Error(ErrorCode::KafkaStorageError))
                .topic("u")
                .delayed(Duration::from_millis(5)),
        )
        .unwrap();
        i.add(Rule::new(ApiKey::Produce, Action::Drop).broker(2))
            .unwrap();
        let request = || vec![item("t", 0), item("t", 1), item("u", 0)];
        let v = i.intercept(&ctx(&conn, ApiKey::Produce, "a"), 1, request);
        assert_eq!(v.whole, None);
        assert_eq!(
            v.item_errors,
            vec![
                (item("t", 1), ErrorCode::NotLeaderOrFollower),
                (item("u", 0), ErrorCode::KafkaStorageError)
            ]
        );
        assert_eq!(v.delay, Some(Duration::from_millis(5)));
        // The partition rule has one application left; a request without t/1 leaves it alone.
        let v = i.intercept(&ctx(&conn, ApiKey::Produce, "a"), 1, || vec![item("t", 0)]);
        assert_eq!(v, Verdict::default());
        // On broker 2 the first matching rule is the partition error again, then the drop.
        let v = i.intercept(&ctx(&conn, ApiKey::Produce, "a"), 2, request);
        assert_eq!(v.item_errors.len(), 1);
        let v = i.intercept(&ctx(&conn, ApiKey::Produce, "a"), 2, request);
        assert_eq!(v.whole, Some(Action::Drop));
        assert_eq!(i.pending_rules(), 0);
        // A partition filter needs a topic; a non-splittable API's item error is whole-request.
        let mut bad = Rule::new(ApiKey::Produce, Action::Drop);
        bad.partition = Some(0);
        assert!(i.add(bad).is_err());
        i.add(
            Rule::new(
                ApiKey::OffsetCommit,
                Action::Error(ErrorCode::NotCoordinator),
            )
            .topic("t"),
        )
        .unwrap();
        let v = i.intercept(&ctx(&conn, ApiKey::OffsetCommit, "a"), 1, || {
            vec![item("t", 3)]
        });
        assert_eq!(v.whole, Some(Action::Error(ErrorCode::NotCoordinator)));
    }
}
