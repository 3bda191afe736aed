//! Quota enforcement around one request (Kafka's `RequestHandlerHelper` and the byte-rate
//! recording in `KafkaApis`): the time the request kept a thread busy goes to the request
//! quota, a Produce request's size to the produce quota, a Fetch response's size to the fetch
//! quota (a Fetch's `max_bytes` is first capped at what the quota window can hold). The longest
//! throttle time, including one a handler already set (the controller mutation quota), goes into
//! the response's `throttle_time_ms`, and the connection reads nothing more for that long
//! (KIP-219: the response itself is sent at once).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use kafka_protocol::messages::{RequestKind, ResponseKind};
use odradek::protocol::{set_throttle_time, throttle_time_of};

use crate::broker::Broker;
use crate::handlers::RequestContext;
use crate::quota::QuotaKind;

/// A future that adds up the time spent inside its `poll` calls: the time a request kept a
/// thread busy, not the time it waited (a long-polling Fetch costs its reads only).
pub(super) struct BusyTimed<F> {
    inner: Pin<Box<F>>,
    busy: Duration,
}

impl<F: Future> BusyTimed<F> {
    pub(super) fn new(inner: F) -> BusyTimed<F> {
        BusyTimed {
            inner: Box::pin(inner),
            busy: Duration::ZERO,
        }
    }
}

impl<F: Future> Future for BusyTimed<F> {
    type Output = (F::Output, Duration);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let started = Instant::now();
        let polled = self.inner.as_mut().poll(cx);
        let busy = self.busy + started.elapsed();
        self.busy = busy;
        polled.map(|out| (out, busy))
    }
}

/// Which quotas a request is measured against, decided before it is handled.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Metering {
    request: bool,
    produce: bool,
    fetch: bool,
}

impl Metering {
    /// Nothing to measure: no quota of a kind this request counts against is configured.
    pub(super) fn is_off(&self) -> bool {
        !(self.request || self.produce || self.fetch)
    }
}

fn user<'a>(ctx: &'a RequestContext<'_>) -> &'a str {
    &ctx.principal().name
}

/// Decides what `body` is metered for and caps a Fetch at the fetch quota's window.
pub(super) fn prepare(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    body: &mut RequestKind,
) -> Metering {
    let quotas = &broker.quotas;
    let mut m = Metering {
        request: quotas.enabled(QuotaKind::Request),
        ..Metering::default()
    };
    match body {
        RequestKind::Produce(_) => m.produce = quotas.enabled(QuotaKind::Produce),
        RequestKind::Fetch(f) if f.replica_id.0 < 0 && f.replica_state.replica_id.0 < 0 => {
            m.fetch = quotas.enabled(QuotaKind::Fetch);
            if m.fetch {
                if let Some(max) =
                    quotas.max_value_in_window(QuotaKind::Fetch, user(ctx), ctx.client_id())
                {
                    let cap = max.clamp(1.0, f64::from(i32::MAX)) as i32;
                    f.max_bytes = f.max_bytes.min(cap);
                }
            }
        }
        _ => {}
    }
    m
}

/// Records the request and returns the throttle time to send and mute for (ms), after
/// setting it in `response`. `request_bytes` is the request frame's size, `response_bytes`
/// the encoded response's (Fetch only).
pub(super) fn settle(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    metering: Metering,
    busy: Duration,
    request_bytes: usize,
    response_bytes: impl FnOnce(&ResponseKind) -> usize,
    response: Option<&mut ResponseKind>,
) -> i64 {
    let quotas = &broker.quotas;
    let now = crate::clock::now_ms();
    let (u, c) = (user(ctx), ctx.client_id());
    let mut worst: (i64, Option<QuotaKind>) = (0, None);
    let mut consider = |ms: i64, kind: QuotaKind| {
        if ms > worst.0 {
            worst = (ms, Some(kind));
        }
    };
    if metering.request {
        let percent_seconds = busy.as_secs_f64() * 100.0;
        consider(
            quotas.record(QuotaKind::Request, u, c, percent_seconds, now),
            QuotaKind::Request,
        );
    }
    if metering.produce {
        consider(
            quotas.record(QuotaKind::Produce, u, c, request_bytes as f64, now),
            QuotaKind::Produce,
        );
    }
    if metering.fetch {
        if let Some(r) = response.as_deref() {
            let bytes = response_bytes(r) as f64;
            consider(
                quotas.record(QuotaKind::Fetch, u, c, bytes, now),
                QuotaKind::Fetch,
            );
        }
    }
    let handler_set = response
        .as_deref()
        .map_or(0, |r| i64::from(throttle_time_of(r)));
    if handler_set > worst.0 {
        worst = (handler_set, None);
    }
    let (ms, kind) = worst;
    if ms <= 0 {
        return 0;
    }
    if let Some(kind) = kind {
        quotas.note_throttle(kind, u, c, ms, now);
    }
    if let Some(r) = response {
        set_throttle_time(r, i32::try_from(ms).unwrap_or(i32::MAX));
    }
    ms
}
