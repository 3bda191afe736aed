//! The retry loop every admin call runs in.
//!
//! A call is a list of items (topics, partitions, config resources). Each attempt routes the
//! unfinished items to brokers, sends one request per broker (concurrently), and sorts every
//! item's answer into final (a value or a non-retriable error) or retry. Retriable failures —
//! lost connections, timeouts, NOT_CONTROLLER, NOT_LEADER_OR_FOLLOWER, unknown leaders — mark
//! metadata stale and are retried with exponential backoff (`retry.backoff.ms` ..
//! `retry.backoff.max.ms`) until `default.api.timeout.ms` has passed since the call began. Each
//! attempt is itself bounded by what is left of that deadline, so no call outlives it.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use tokio::time::Instant;

use super::client::Admin;
use crate::net::Connection;
use crate::{Error, ErrorCode, Result};

/// Where one item goes in this attempt.
pub(crate) enum Route {
    /// Send it to this broker.
    Node(i32),
    /// Its answer is known without asking a broker (e.g. the topic does not exist).
    Done(Error),
    /// It cannot be sent yet (e.g. its partition has no leader); retry after a metadata refresh.
    Wait(Error),
}

/// One item's answer in one attempt.
pub(crate) enum Outcome<T> {
    /// Final: the value, or an error retrying will not fix.
    Done(Result<T>),
    /// Retriable: try again in the next attempt.
    Retry(Error),
}

/// One admin call: how to route its items and how to send a group of them to one broker.
pub(crate) trait Call {
    /// The per-item value.
    type Output;

    /// Routes the pending items (indexes into the call's item list).
    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>>;

    /// Sends one request for `items` to `connection`, with `timeout_ms` as the request's own
    /// server-side timeout where the API has one, and sorts the answers per item.
    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<Self::Output>)>>;
}

/// Per-item state across attempts.
struct Progress<T> {
    results: Vec<Option<Result<T>>>,
    last_error: Vec<Option<Error>>,
    /// Whether any broker answered anything for any item (a per-item error counts).
    answered: bool,
}

impl<T> Progress<T> {
    fn pending(&self) -> Vec<usize> {
        (0..self.results.len())
            .filter(|&i| self.results[i].is_none())
            .collect()
    }

    fn retry(&mut self, i: usize, e: Error) {
        if let Some(slot) = self.last_error.get_mut(i) {
            *slot = Some(e);
        }
    }

    /// Records a timeout, unless the item was last refused by a quota: the call then ends
    /// with THROTTLING_QUOTA_EXCEEDED, as Java's admin client ends it when the throttle time
    /// outlasts the call (a throttled connection sends nothing until then, so the retry that
    /// timed out never reached the broker).
    fn timed_out(&mut self, i: usize, e: Error) {
        let throttled = self
            .last_error
            .get(i)
            .and_then(Option::as_ref)
            .is_some_and(|last| last.kafka_code() == ErrorCode::ThrottlingQuotaExceeded);
        if !throttled {
            self.retry(i, e);
        }
    }

    fn done(&mut self, i: usize, r: Result<T>) {
        if let Some(slot) = self.results.get_mut(i) {
            if slot.is_none() {
                *slot = Some(r);
            }
        }
    }
}

/// The request's `timeout_ms`: how long the broker may take over the operation before it
/// answers REQUEST_TIMED_OUT, at most `operation_timeout` when one was given.
pub(crate) fn operation_ms(operation_timeout: Option<Duration>, timeout_ms: i32) -> i32 {
    match operation_timeout {
        Some(t) => i32::try_from(t.as_millis())
            .unwrap_or(i32::MAX)
            .min(timeout_ms),
        None => timeout_ms,
    }
}

/// Runs `call` over `n` items until every item has a final answer or the call's deadline
/// (`default.api.timeout.ms`) passes; unfinished items then carry their last error.
///
/// The call fails as a whole only when it could not get anywhere: no broker answered anything
/// before the deadline (e.g. none was reachable), or a routing step failed in a way retrying
/// cannot fix.
pub(crate) async fn run<C: Call>(
    admin: &Admin,
    call: &C,
    n: usize,
) -> Result<Vec<Result<C::Output>>> {
    let config = admin.cluster().config();
    let api_timeout = config.default_api_timeout;
    let deadline = Instant::now() + api_timeout;
    let mut retry = crate::cluster::backoff::Retry::default();
    let mut progress = Progress {
        results: (0..n).map(|_| None).collect(),
        last_error: (0..n).map(|_| None).collect(),
        answered: false,
    };
    let mut first = true;
    loop {
        let pending = progress.pending();
        if pending.is_empty() {
            break;
        }
        if !first {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            tokio::time::sleep(retry.failed(config).min(deadline - now)).await;
        }
        first = false;
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            break;
        }
        let routes = match tokio::time::timeout(remaining, call.route(admin, &pending)).await {
            Err(_) => {
                for &i in &pending {
                    progress.timed_out(
                        i,
                        Error::Timeout("routing (metadata lookup) did not complete".into()),
                    );
                }
                break;
            }
            Ok(Err(e)) if e.is_retriable() => {
                admin.mark_stale();
                for &i in &pending {
                    progress.retry(i, e.duplicate());
                }
                continue;
            }
            Ok(Err(e)) => return Err(e),
            Ok(Ok(routes)) => routes,
        };
        let mut groups: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
        for (i, route) in routes {
            match route {
                Route::Node(node) => groups.entry(node).or_default().push(i),
                Route::Done(e) => progress.done(i, Err(e)),
                Route::Wait(e) => {
                    admin.mark_stale();
                    progress.retry(i, e);
                }
            }
        }
        attempt(admin, call, groups, deadline, &mut progress).await;
    }
    finish(progress, api_timeout)
}

/// Sends every group of one attempt concurrently and records the answers.
async fn attempt<C: Call>(
    admin: &Admin,
    call: &C,
    groups: BTreeMap<i32, Vec<usize>>,
    deadline: Instant,
    progress: &mut Progress<C::Output>,
) {
    let remaining = deadline.saturating_duration_since(Instant::now());
    let request_timeout = admin.cluster().config().request_timeout;
    let timeout_ms = i32::try_from(remaining.min(request_timeout).as_millis()).unwrap_or(i32::MAX);
    let sends = groups.into_iter().map(|(node, items)| async move {
        let outcome = tokio::time::timeout(remaining, async {
            let connection: Arc<Connection> = admin.cluster().connection(node).await?;
            call.send(&connection, &items, timeout_ms).await
        })
        .await
        .unwrap_or_else(|_| {
            Err(Error::Timeout(format!(
                "no answer from broker {node} within default.api.timeout.ms"
            )))
        });
        (items, outcome)
    });
    for (items, outcome) in join_all(sends).await {
        match outcome {
            Ok(answers) => {
                progress.answered = true;
                for (i, answer) in answers {
                    match answer {
                        Outcome::Done(r) => progress.done(i, r),
                        Outcome::Retry(e) => {
                            admin.mark_stale();
                            progress.retry(i, e);
                        }
                    }
                }
            }
            Err(e) if e.is_retriable() => {
                admin.cluster().on_error(&e);
                admin.mark_stale();
                for i in items {
                    if matches!(e, Error::Timeout(_)) {
                        progress.timed_out(i, e.duplicate());
                    } else {
                        progress.retry(i, e.duplicate());
                    }
                }
            }
            Err(e) => {
                for i in items {
                    progress.done(i, Err(e.duplicate()));
                }
            }
        }
    }
}

/// Turns the final state into per-item results (or one error when nothing got anywhere).
fn finish<T>(progress: Progress<T>, api_timeout: Duration) -> Result<Vec<Result<T>>> {
    let Progress {
        results,
        mut last_error,
        answered,
    } = progress;
    let any_done = results.iter().any(Option::is_some);
    if !answered && !any_done && !results.is_empty() {
        let last = last_error
            .iter_mut()
            .find_map(Option::take)
            .map_or_else(|| "no attempt completed".to_string(), |e| e.to_string());
        return Err(Error::Timeout(format!(
            "no broker answered within default.api.timeout.ms ({} ms); last error: {last}",
            api_timeout.as_millis()
        )));
    }
    Ok(results
        .into_iter()
        .zip(last_error)
        .map(|(result, last)| {
            result.unwrap_or_else(|| {
                Err(last.unwrap_or_else(|| {
                    Error::Timeout(format!(
                        "no final answer within default.api.timeout.ms ({} ms)",
                        api_timeout.as_millis()
                    ))
                }))
            })
        })
        .collect())
}

/// Routes every pending item to one broker.
pub(crate) fn all_to(node: i32, pending: &[usize]) -> Vec<(usize, Route)> {
    pending.iter().map(|&i| (i, Route::Node(node))).collect()
}

/// Whether a per-item error of a mutation (create, delete, alter) is worth retrying: only those
/// that say the request reached the wrong broker or was throttled. Others, even those Kafka
/// calls retriable (REQUEST_TIMED_OUT), may mean the change is still being applied, so a blind
/// retry could report a misleading TOPIC_ALREADY_EXISTS; they are returned to the caller.
pub(crate) fn retry_mutation(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::NotController | ErrorCode::ThrottlingQuotaExceeded
    )
}

/// Whether a per-item error of a read is worth retrying: any retriable code except
/// UNKNOWN_TOPIC_OR_PARTITION, which for a name-addressed read means the topic does not exist.
pub(crate) fn retry_read(code: ErrorCode) -> bool {
    code.is_retriable() && code != ErrorCode::UnknownTopicOrPartition
}

/// Matches a response's per-key answers to the items sent: every item whose key was answered
/// gets that answer (duplicates share it); an item the response left out is an error.
pub(crate) fn answers_by_key<K, T>(
    items: &[usize],
    key_of: impl Fn(usize) -> K,
    answers: HashMap<K, (ErrorCode, T)>,
    retry: impl Fn(ErrorCode) -> bool,
) -> Vec<(usize, Outcome<T>)>
where
    K: Eq + Hash + std::fmt::Debug,
    T: Clone,
{
    items
        .iter()
        .map(|&i| {
            let key = key_of(i);
            let outcome = match answers.get(&key) {
                None => Outcome::Done(Err(Error::malformed(
                    "admin response",
                    format!("no result for {key:?}"),
                ))),
                Some((code, _)) if retry(*code) => Outcome::Retry(Error::Kafka(*code)),
                Some((code, _)) if !code.is_ok() => Outcome::Done(Err(Error::Kafka(*code))),
                Some((_, value)) => Outcome::Done(Ok(value.clone())),
            };
            (i, outcome)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::ClientConfig;

    #[test]
    fn an_operation_timeout_lowers_the_requests_timeout_and_never_raises_it() {
        assert_eq!(operation_ms(None, 30_000), 30_000);
        assert_eq!(
            operation_ms(Some(Duration::from_millis(1_500)), 30_000),
            1_500
        );
        assert_eq!(operation_ms(Some(Duration::from_secs(120)), 30_000), 30_000);
        assert_eq!(
            operation_ms(Some(Duration::from_secs(u64::MAX)), 30_000),
            30_000
        );
    }

    /// A call whose routing is scripted per attempt and never reaches a broker.
    struct Scripted {
        attempts: AtomicUsize,
        script: fn(usize) -> Result<Route>,
    }

    impl Call for Scripted {
        type Output = ();

        async fn route(&self, _admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
            let n = self.attempts.fetch_add(1, Ordering::SeqCst);
            let route = (self.script)(n)?;
            let mut routes = vec![(pending[0], route)];
            routes.extend(
                pending[1..]
                    .iter()
                    .map(|&i| (i, Route::Done(ErrorCode::InvalidTopic.into()))),
            );
            Ok(routes)
        }

        async fn send(
            &self,
            _connection: &Connection,
            _items: &[usize],
            _timeout_ms: i32,
        ) -> Result<Vec<(usize, Outcome<()>)>> {
            unreachable!("scripted calls never send")
        }
    }

    fn admin(api_timeout_ms: &str) -> Admin {
        Admin::new(
            ClientConfig::from_map([
                ("bootstrap.servers", "127.0.0.1:1"),
                ("default.api.timeout.ms", api_timeout_ms),
                ("retry.backoff.ms", "1"),
                ("retry.backoff.max.ms", "5"),
            ])
            .unwrap(),
        )
    }

    #[tokio::test]
    async fn waits_are_retried_until_a_final_answer() {
        let call = Scripted {
            attempts: AtomicUsize::new(0),
            script: |n| {
                Ok(if n < 3 {
                    Route::Wait(ErrorCode::LeaderNotAvailable.into())
                } else {
                    Route::Done(ErrorCode::TopicAlreadyExists.into())
                })
            },
        };
        let results = run(&admin("5000"), &call, 2).await.unwrap();
        assert_eq!(call.attempts.load(Ordering::SeqCst), 4);
        assert!(matches!(
            results[0],
            Err(Error::Kafka(ErrorCode::TopicAlreadyExists))
        ));
        assert!(matches!(
            results[1],
            Err(Error::Kafka(ErrorCode::InvalidTopic))
        ));
    }

    #[tokio::test]
    async fn unanswered_items_carry_their_last_error_at_the_deadline() {
        let call = Scripted {
            attempts: AtomicUsize::new(0),
            script: |_| Ok(Route::Wait(ErrorCode::LeaderNotAvailable.into())),
        };
        let started = std::time::Instant::now();
        let results = run(&admin("200"), &call, 2).await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(call.attempts.load(Ordering::SeqCst) > 2);
        assert!(matches!(
            results[0],
            Err(Error::Kafka(ErrorCode::LeaderNotAvailable))
        ));
    }

    #[tokio::test]
    async fn a_call_that_got_nowhere_fails_as_a_whole() {
        let call = Scripted {
            attempts: AtomicUsize::new(0),
            script: |_| {
                Err(Error::Connection {
                    broker: "127.0.0.1:1".into(),
                    detail: "refused".into(),
                })
            },
        };
        let err = run(&admin("200"), &call, 1).await.unwrap_err();
        assert!(matches!(err, Error::Timeout(_)), "{err}");
        assert!(err.to_string().contains("refused"), "{err}");

        let fatal = Scripted {
            attempts: AtomicUsize::new(0),
            script: |_| Err(Error::config("x", "bad")),
        };
        let err = run(&admin("5000"), &fatal, 1).await.unwrap_err();
        assert!(matches!(err, Error::Config { .. }), "{err}");
        assert_eq!(fatal.attempts.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn answers_are_matched_by_key_and_classified() {
        let answers: HashMap<&str, (ErrorCode, u8)> = [
            ("a", (ErrorCode::NoError, 1)),
            ("b", (ErrorCode::NotController, 0)),
            ("c", (ErrorCode::TopicAlreadyExists, 0)),
        ]
        .into_iter()
        .collect();
        let keys = ["a", "b", "c", "d", "a"];
        let out = answers_by_key(&[0, 1, 2, 3, 4], |i| keys[i], answers, retry_mutation);
        assert!(matches!(out[0].1, Outcome::Done(Ok(1))));
        assert!(matches!(
            out[1].1,
            Outcome::Retry(Error::Kafka(ErrorCode::NotController))
        ));
        assert!(matches!(
            out[2].1,
            Outcome::Done(Err(Error::Kafka(ErrorCode::TopicAlreadyExists)))
        ));
        assert!(matches!(
            out[3].1,
            Outcome::Done(Err(Error::Malformed { .. }))
        ));
        assert!(matches!(out[4].1, Outcome::Done(Ok(1))));
        assert!(retry_read(ErrorCode::LeaderNotAvailable));
        assert!(!retry_read(ErrorCode::UnknownTopicOrPartition));
        assert!(!retry_mutation(ErrorCode::RequestTimedOut));
    }
}
