//! The producer every shell wraps: `produce` never blocks, delivery reports queue up per client
//! and are served on the caller's thread (`poll`/`flush`) or pushed to a callback on the runtime
//! (asyncio, Promises).
//!
//! **Fast path.** `produce` polls the core's `send` future once, on the caller's thread, with a
//! no-op waker. With metadata cached and buffer space free it completes there and then: the
//! record is in its partition's batch and nothing was allocated or woken on our side.
//!
//! **Backlog.** If `send` would wait (unknown topic metadata, `buffer.memory` full), the future is
//! dropped (`send` is cancel-safe: it appends only in its last, synchronous step), the record is
//! rebuilt by the caller's closure and queued in the client's backlog, and one runtime task sends
//! the backlog in order. While the backlog is not empty every later record joins it, so records
//! keep their order. Like librdkafka, `produce` fails fast with `_QUEUE_FULL` once
//! `queue.buffering.max.messages` records are outstanding, instead of blocking.
//!
//! **Delivery reports.** A record produced with an opaque (the shell's callback, future or
//! message reference) has its `DeliveryFuture` kept in a `FuturesUnordered`, which only polls
//! futures that were woken: serving reports costs O(ready), not O(outstanding). Records without
//! an opaque are not tracked at all; the core's pending count still covers them for `len`/`flush`.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt;
use odradek::producer::{DeliveryBatch, DeliveryFuture};
use odradek::{Producer, ProducerRecord, RecordMetadata};
use tokio::runtime::Handle;

use crate::config::BindingSettings;
use crate::runtime::{self, ForkGuard, Signal};

mod transactions;

use crate::{codes, ClientError, Stage};
pub use transactions::TxnGroupMetadata;

/// A record's outcome with the opaque it was produced with.
#[derive(Debug)]
pub struct Delivery<T> {
    /// What the shell attached to the record.
    pub opaque: T,
    /// Where it was written, or why it was not.
    pub result: Result<RecordMetadata, ClientError>,
}

/// Something for the application, in the order it happened.
#[derive(Debug)]
pub enum Event<T> {
    /// A delivery report.
    Delivery(Delivery<T>),
    /// A client-level error (`error_cb`).
    Error(ClientError),
    /// A statistics snapshot as JSON (`stats_cb`).
    Stats(String),
    /// Every record produced before [`ProducerClient::flush_then_notify`] was called is resolved
    /// and its report precedes this event (push mode's `flush`).
    Flushed(T),
}

/// Receives events on a runtime thread (push-style shells).
pub type EventSink<T> = Arc<dyn Fn(Vec<Event<T>>) + Send + Sync>;

/// How delivery reports reach the application.
pub enum Mode<T> {
    /// Queued until the shell calls [`ProducerClient::take_events`] (`poll`/`flush`).
    Poll,
    /// Handed to the sink on a runtime thread as soon as they are ready.
    Push(EventSink<T>),
}

/// Deliveries being waited for: one record's (`produce`, the backlog), or those of a
/// `produce_batch` call, tracked as one entry (one shared completion in the core, one wake-up
/// when all its records are resolved, reported in the order they were produced).
enum Tracked<T> {
    One {
        fut: DeliveryFuture,
        opaque: Option<T>,
    },
    Batch {
        batch: DeliveryBatch,
        /// The index of each record with an opaque in the core call, with the opaque.
        opaques: Vec<(usize, T)>,
    },
}

impl<T> Tracked<T> {
    /// Records this entry reports.
    fn records(&self) -> usize {
        match self {
            Tracked::One { .. } => 1,
            Tracked::Batch { opaques, .. } => opaques.len(),
        }
    }
}

/// What a [`Tracked`] entry yields.
enum Done<T> {
    One(Option<Delivery<T>>),
    Batch(Vec<Delivery<T>>),
}

impl<T: Unpin> Future for Tracked<T> {
    type Output = Done<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut *self {
            Tracked::One { fut, opaque } => {
                let result = std::task::ready!(Pin::new(fut).poll(cx));
                Poll::Ready(Done::One(opaque.take().map(|opaque| Delivery {
                    opaque,
                    result: result.map_err(|e| ClientError::from_core(&e, Stage::Delivery)),
                })))
            }
            Tracked::Batch { batch, opaques } => {
                std::task::ready!(batch.poll_all(cx));
                let done = std::mem::take(opaques)
                    .into_iter()
                    .map(|(i, opaque)| Delivery {
                        opaque,
                        result: match batch.take(i) {
                            Some(r) => r.map_err(|e| ClientError::from_core(&e, Stage::Delivery)),
                            None => Err(ClientError::from_core(
                                &odradek::Error::Closed,
                                Stage::Delivery,
                            )),
                        },
                    })
                    .collect();
                Poll::Ready(Done::Batch(done))
            }
        }
    }
}

struct Queued<T> {
    record: ProducerRecord,
    opaque: Option<T>,
}

struct State<T> {
    deliveries: FuturesUnordered<Tracked<T>>,
    /// Records `deliveries` will report (an entry may hold many).
    tracked: usize,
    events: VecDeque<Event<T>>,
    backlog: VecDeque<Queued<T>>,
    backlog_running: bool,
}

struct Inner<T> {
    core: Producer,
    handle: Handle,
    fork: ForkGuard,
    settings: BindingSettings,
    signal: Arc<Signal>,
    state: Mutex<State<T>>,
    /// Records accepted but not yet appended by the core (the backlog plus the one being sent).
    backlog_count: AtomicUsize,
    /// A push driver or a waiting poller needs the deliveries re-polled (new futures pushed).
    needs_poll: AtomicBool,
    flush_running: AtomicBool,
    closed: AtomicBool,
    push: bool,
}

impl<T> Inner<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What [`ProducerClient::produce_batch`] did.
#[derive(Debug, Default)]
pub struct BatchOutcome {
    /// Records accepted (sent or queued).
    pub queued: usize,
    /// Records refused, by index, with the reason.
    pub failed: Vec<(usize, ClientError)>,
}

/// A producer for a language shell. `T` is what the shell attaches to a record to find its
/// callback again; it must be `Send` because reports can be collected on runtime threads.
pub struct ProducerClient<T: Send + Unpin + 'static> {
    inner: Arc<Inner<T>>,
}

impl<T: Send + Unpin + 'static> std::fmt::Debug for ProducerClient<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProducerClient")
            .field("outstanding", &self.len())
            .finish()
    }
}

fn waker_of(signal: &Arc<Signal>) -> Waker {
    Waker::from(signal.clone())
}

/// Moves every ready delivery into `events`. Drops nothing, so it is safe to call where the
/// shell's lock is not held (the Python shell releases the GIL while it waits).
fn collect_ready<T: Unpin>(st: &mut State<T>, waker: &Waker) -> usize {
    let mut cx = Context::from_waker(waker);
    let mut n = 0;
    while let Poll::Ready(Some(done)) = st.deliveries.poll_next_unpin(&mut cx) {
        match done {
            Done::One(d) => {
                st.tracked -= 1;
                if let Some(d) = d {
                    st.events.push_back(Event::Delivery(d));
                    n += 1;
                }
            }
            Done::Batch(ds) => {
                st.tracked -= ds.len();
                n += ds.len();
                st.events.extend(ds.into_iter().map(Event::Delivery));
            }
        }
    }
    n
}

/// Takes up to `max` events, leaving out successful deliveries with
/// `delivery.report.only.error` (they are dropped here, under the caller's lock).
fn drain_events<T>(st: &mut State<T>, max: usize, only_errors: bool) -> Vec<Event<T>> {
    let mut out = Vec::with_capacity(st.events.len().min(max));
    while out.len() < max {
        match st.events.pop_front() {
            None => break,
            Some(Event::Delivery(d)) if only_errors && d.result.is_ok() => {}
            Some(e) => out.push(e),
        }
    }
    out
}

impl<T: Send + Unpin + 'static> ProducerClient<T> {
    /// Creates a producer on the shared runtime from Kafka property names.
    pub fn new<K: AsRef<str>, V: AsRef<str>>(
        config: impl IntoIterator<Item = (K, V)>,
        mode: Mode<T>,
    ) -> Result<Self, ClientError> {
        let (config, settings) = crate::config::split(config)?;
        let handle = runtime::runtime()?;
        let core = {
            let _enter = handle.enter();
            Producer::new(config).map_err(|e| ClientError::from_core(&e, Stage::Request))?
        };
        let (push, sink) = match mode {
            Mode::Poll => (false, None),
            Mode::Push(s) => (true, Some(s)),
        };
        let inner = Arc::new(Inner {
            core,
            handle: handle.clone(),
            fork: ForkGuard::new(),
            settings,
            signal: Signal::new(),
            state: Mutex::new(State {
                deliveries: FuturesUnordered::new(),
                tracked: 0,
                events: VecDeque::new(),
                backlog: VecDeque::new(),
                backlog_running: false,
            }),
            backlog_count: AtomicUsize::new(0),
            needs_poll: AtomicBool::new(false),
            flush_running: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            push,
        });
        if let Some(sink) = sink {
            handle.spawn(push_driver(inner.clone(), sink));
        }
        if let Some(every) = inner.settings.statistics_interval {
            handle.spawn(stats_ticker(Arc::downgrade(&inner), every));
        }
        Ok(ProducerClient { inner })
    }

    /// The core producer (statistics, cluster view).
    pub fn core(&self) -> &Producer {
        &self.inner.core
    }

    /// The runtime handle this client runs on.
    pub fn handle(&self) -> &Handle {
        &self.inner.handle
    }

    /// The binding-level settings.
    pub fn settings(&self) -> &BindingSettings {
        &self.inner.settings
    }

    /// Fails when the client cannot be used (closed, or created before `fork()`).
    pub fn check_usable(&self) -> Result<(), ClientError> {
        self.inner.fork.check()?;
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(ClientError::new(
                codes::DESTROY,
                Some("producer is closed".into()),
            ));
        }
        Ok(())
    }

    /// Records counted against `queue.buffering.max.messages`.
    fn outstanding(&self, st: &State<T>) -> usize {
        self.inner.backlog_count.load(Ordering::Acquire)
            + self.inner.core.pending().max(st.tracked)
            + st.events.len()
    }

    fn queue_full(&self, st: &State<T>) -> Option<ClientError> {
        (self.outstanding(st) >= self.inner.settings.queue_max_messages)
            .then(|| self.queue_full_error())
    }

    fn queue_full_error(&self) -> ClientError {
        ClientError::new(
            codes::QUEUE_FULL,
            Some(format!(
                "queue.buffering.max.messages ({}) records are outstanding: serve delivery reports with poll() or flush()",
                self.inner.settings.queue_max_messages
            )),
        )
    }

    /// Produces one record. `make` builds it; it may be called twice (the fast path's future is
    /// dropped when it would wait, and the record rebuilt for the backlog). Errors found before
    /// the record is queued (too large, unknown partition, queue full) are returned; later ones
    /// arrive as a delivery report, if `opaque` is set.
    pub fn produce(
        &self,
        mut make: impl FnMut() -> ProducerRecord,
        opaque: Option<T>,
    ) -> Result<(), ClientError> {
        self.check_usable()?;
        let mut st = self.inner.lock();
        if let Some(e) = self.queue_full(&st) {
            return Err(e);
        }
        self.produce_locked(&mut st, &mut make, opaque)
    }

    fn produce_locked(
        &self,
        st: &mut State<T>,
        make: &mut dyn FnMut() -> ProducerRecord,
        opaque: Option<T>,
    ) -> Result<(), ClientError> {
        if !st.backlog_running && opaque.is_none() {
            // Nobody waits for this record's report: the core's batch entry point appends it
            // without a delivery channel (and without a future to poll).
            let record = make();
            let sent = self
                .inner
                .core
                .try_send_batch(std::slice::from_ref(&record), false)
                .map_err(|e| ClientError::from_core(&e, Stage::Enqueue))?;
            if let Some((_, e)) = sent.refused.into_iter().next() {
                return Err(ClientError::from_core(&e, Stage::Enqueue));
            }
            if sent.consumed == 1 {
                return Ok(());
            }
            // It would wait: the backlog sends it (the size was checked).
            return self.enqueue_backlog(st, record, opaque);
        }
        if !st.backlog_running {
            let record = make();
            let fut = pin!(self.inner.core.send(record));
            match runtime::poll_once(&self.inner.handle, fut) {
                Poll::Ready(Ok(delivery)) => {
                    self.track(st, delivery, opaque);
                    return Ok(());
                }
                Poll::Ready(Err(e)) => return Err(ClientError::from_core(&e, Stage::Enqueue)),
                Poll::Pending => {}
            }
        }
        let record = make();
        // Behind a backlog the core sees the record later: refuse what it would refuse at once
        // (too large) now, as the fast path does.
        if st.backlog_running {
            if let Err(e) = self.inner.core.check_size(&record) {
                return Err(ClientError::from_core(&e, Stage::Enqueue));
            }
        }
        st.backlog.push_back(Queued { record, opaque });
        self.inner.backlog_count.fetch_add(1, Ordering::AcqRel);
        if !st.backlog_running {
            st.backlog_running = true;
            self.inner.handle.spawn(run_backlog(self.inner.clone()));
        }
        Ok(())
    }

    fn track(&self, st: &mut State<T>, delivery: DeliveryFuture, opaque: Option<T>) {
        if opaque.is_none() {
            return;
        }
        st.deliveries.push(Tracked::One {
            fut: delivery,
            opaque,
        });
        st.tracked += 1;
        self.poll_needed();
    }

    fn push_tracked(&self, st: &mut State<T>, entry: Tracked<T>) {
        st.tracked += entry.records();
        st.deliveries.push(entry);
        self.poll_needed();
    }

    fn poll_needed(&self) {
        // A new future must be polled once before its completion can wake anyone; only a
        // waiting poller or the push driver needs telling, and only once per round.
        if !self.inner.needs_poll.swap(true, Ordering::AcqRel) {
            self.inner.signal.notify();
        }
    }

    /// Produces `n` records built by `make(i)` under one lock. The records go to the core in
    /// chunks through its batch entry point (one clock read, topic lookup and accumulator lock
    /// per chunk, one shared delivery completion); from the first record that would wait (for
    /// metadata or buffer space) on, they join the backlog in order, as `produce` would. `make`
    /// is called once per index. A record `make` refuses, or the core rejects, is listed in
    /// `failed` (by ascending index); the others are queued. Stops early (the rest failed with
    /// `_QUEUE_FULL`) when the queue fills. Delivery reports of a chunk are served together,
    /// once all its records are resolved.
    pub fn produce_batch(
        &self,
        n: usize,
        mut make: impl FnMut(usize) -> Result<(ProducerRecord, Option<T>), ClientError>,
    ) -> Result<BatchOutcome, ClientError> {
        /// Records built and handed to the core at a time.
        const CHUNK: usize = 1024;
        self.check_usable()?;
        let mut out = BatchOutcome::default();
        let mut st = self.inner.lock();
        let _enter = self.inner.handle.enter();
        let mut records: Vec<ProducerRecord> = Vec::with_capacity(n.min(CHUNK));
        let mut slots: Vec<(usize, Option<T>)> = Vec::with_capacity(n.min(CHUNK));
        let mut i = 0;
        while i < n {
            let room = self
                .inner
                .settings
                .queue_max_messages
                .saturating_sub(self.outstanding(&st));
            if room == 0 {
                let e = self.queue_full_error();
                out.failed.extend((i..n).map(|j| (j, e.clone())));
                break;
            }
            while i < n && records.len() < CHUNK.min(room) {
                match make(i) {
                    Ok((record, opaque)) => {
                        records.push(record);
                        slots.push((i, opaque));
                    }
                    Err(e) => out.failed.push((i, e)),
                }
                i += 1;
            }
            if !records.is_empty() {
                self.send_chunk(&mut st, &mut records, &mut slots, &mut out);
            }
        }
        out.failed.sort_by_key(|(j, _)| *j);
        Ok(out)
    }

    /// Hands `records` (with their batch index and opaque in `slots`) to the core's batch entry
    /// point, then queues what it did not take in the backlog. Leaves both vectors empty.
    fn send_chunk(
        &self,
        st: &mut State<T>,
        records: &mut Vec<ProducerRecord>,
        slots: &mut Vec<(usize, Option<T>)>,
        out: &mut BatchOutcome,
    ) {
        let mut start = 0;
        if !st.backlog_running {
            let track = slots.iter().any(|(_, o)| o.is_some());
            match self.inner.core.try_send_batch(records, track) {
                Err(e) => {
                    let e = ClientError::from_core(&e, Stage::Enqueue);
                    out.failed
                        .extend(slots.drain(..).map(|(j, _)| (j, e.clone())));
                    records.clear();
                    return;
                }
                Ok(sent) => {
                    let mut refused = sent.refused.into_iter().peekable();
                    let mut opaques = Vec::new();
                    for (k, (j, opaque)) in slots.drain(..sent.consumed).enumerate() {
                        if let Some((_, e)) = refused.next_if(|(r, _)| *r == k) {
                            out.failed
                                .push((j, ClientError::from_core(&e, Stage::Enqueue)));
                            continue;
                        }
                        out.queued += 1;
                        if let Some(o) = opaque {
                            opaques.push((k, o));
                        }
                    }
                    if !opaques.is_empty() {
                        self.push_tracked(
                            st,
                            Tracked::Batch {
                                batch: sent.deliveries,
                                opaques,
                            },
                        );
                    }
                    start = sent.consumed;
                }
            }
        }
        // The first of these would have waited: they go to the backlog, in order.
        for (record, (j, opaque)) in records.drain(start..).zip(slots.drain(..)) {
            match self.enqueue_backlog(st, record, opaque) {
                Ok(()) => out.queued += 1,
                Err(e) => out.failed.push((j, e)),
            }
        }
        records.clear();
    }

    /// Queues a record behind the backlog (starting its task), refusing at once what the core
    /// would refuse at once (too large).
    fn enqueue_backlog(
        &self,
        st: &mut State<T>,
        record: ProducerRecord,
        opaque: Option<T>,
    ) -> Result<(), ClientError> {
        if let Err(e) = self.inner.core.check_size(&record) {
            return Err(ClientError::from_core(&e, Stage::Enqueue));
        }
        st.backlog.push_back(Queued { record, opaque });
        self.inner.backlog_count.fetch_add(1, Ordering::AcqRel);
        if !st.backlog_running {
            st.backlog_running = true;
            self.inner.handle.spawn(run_backlog(self.inner.clone()));
        }
        Ok(())
    }

    /// Records outstanding: queued, in flight, or delivered but not yet served by
    /// [`ProducerClient::take_events`] (librdkafka's `rd_kafka_outq_len`).
    pub fn len(&self) -> usize {
        let backlog = self.inner.backlog_count.load(Ordering::Acquire);
        let pending = self.inner.core.pending();
        let mut st = self.inner.lock();
        collect_ready(&mut st, &waker_of(&self.inner.signal));
        let events = st
            .events
            .iter()
            .filter(|e| matches!(e, Event::Delivery(_)))
            .count();
        backlog + pending.max(st.tracked) + events
    }

    /// Whether nothing is outstanding.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes up to `max` ready events without waiting (poll mode). Call with whatever lock the
    /// shell needs to drop opaques safely (the Python shell holds the GIL).
    pub fn take_events(&self, max: usize) -> Vec<Event<T>> {
        let mut st = self.inner.lock();
        self.inner.needs_poll.store(false, Ordering::Release);
        collect_ready(&mut st, &waker_of(&self.inner.signal));
        drain_events(&mut st, max, self.inner.settings.delivery_report_only_error)
    }

    /// Puts events back at the front of the queue (a callback raised; the rest wait for the
    /// next `poll`).
    pub fn requeue(&self, events: Vec<Event<T>>) {
        let mut st = self.inner.lock();
        for e in events.into_iter().rev() {
            st.events.push_front(e);
        }
    }

    /// Waits up to `timeout` until an event may be ready. Moves ready deliveries into the queue
    /// but drops nothing, so it is safe without the shell's lock (the Python shell releases the
    /// GIL around it).
    pub fn wait_events(&self, timeout: Duration) -> bool {
        let seen = self.inner.signal.prepare();
        {
            let mut st = self.inner.lock();
            self.inner.needs_poll.store(false, Ordering::Release);
            collect_ready(&mut st, &waker_of(&self.inner.signal));
            if !st.events.is_empty() {
                self.inner.signal.cancel_wait();
                return true;
            }
        }
        self.inner.signal.wait(seen, timeout);
        false
    }

    /// Starts sending everything queued without waiting for `linger.ms` (one background flush
    /// at a time; it ends when nothing is pending).
    pub fn start_flush(&self) {
        if self.inner.flush_running.swap(true, Ordering::AcqRel) {
            return;
        }
        let inner = self.inner.clone();
        self.inner.handle.spawn(async move {
            inner.core.flush().await;
            inner.flush_running.store(false, Ordering::Release);
            inner.signal.notify();
        });
    }

    /// Push mode's `flush`: sends everything queued without waiting for `linger.ms` and, once
    /// nothing is outstanding, queues [`Event::Flushed`] with `opaque` behind every report.
    pub fn flush_then_notify(&self, opaque: T) {
        let inner = self.inner.clone();
        self.inner.handle.spawn(async move {
            loop {
                inner.core.flush().await;
                if inner.backlog_count.load(Ordering::Acquire) == 0 && inner.core.pending() == 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let mut st = inner.lock();
            collect_ready(&mut st, &waker_of(&inner.signal));
            st.events.push_back(Event::Flushed(opaque));
            drop(st);
            inner.signal.notify();
        });
    }

    /// Whether every record has been delivered and every report taken: the end of `flush`.
    pub fn flushed(&self) -> bool {
        if self.inner.backlog_count.load(Ordering::Acquire) > 0 || self.inner.core.pending() > 0 {
            return false;
        }
        let mut st = self.inner.lock();
        collect_ready(&mut st, &waker_of(&self.inner.signal));
        st.deliveries.is_empty() && !st.events.iter().any(|e| matches!(e, Event::Delivery(_)))
    }

    /// Fails every record still in the backlog with `_PURGE_QUEUE` (reported like any failure).
    /// Records the core has already batched cannot be recalled in this release. Returns how many
    /// were purged.
    pub fn purge_queue(&self) -> usize {
        let mut st = self.inner.lock();
        let purged: Vec<Queued<T>> = st.backlog.drain(..).collect();
        let n = purged.len();
        for q in purged {
            if let Some(opaque) = q.opaque {
                st.events.push_back(Event::Delivery(Delivery {
                    opaque,
                    result: Err(ClientError::new(codes::PURGE_QUEUE, None)),
                }));
            }
        }
        self.inner.backlog_count.fetch_sub(n, Ordering::AcqRel);
        drop(st);
        self.inner.signal.notify();
        n
    }

    /// Queues a delivery report the shell made itself (a record it refused in a batch), so it
    /// is served like the others, from `poll`/`flush`.
    pub fn push_delivery(&self, opaque: T, result: Result<RecordMetadata, ClientError>) {
        self.inner
            .lock()
            .events
            .push_back(Event::Delivery(Delivery { opaque, result }));
        self.inner.signal.notify();
    }

    /// Queues an error event (for `error_cb`).
    pub fn push_error(&self, error: ClientError) {
        self.inner.lock().events.push_back(Event::Error(error));
        self.inner.signal.notify();
    }

    /// Flushes and stops the producer: later `produce` calls fail with `_DESTROY`. The returned
    /// future completes when every record is resolved (bounded by `delivery.timeout.ms`).
    pub fn close(&self) -> impl Future<Output = ()> + Send + 'static {
        self.inner.closed.store(true, Ordering::Release);
        let inner = self.inner.clone();
        async move {
            while inner.backlog_count.load(Ordering::Acquire) > 0 {
                inner.core.flush().await;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            inner.core.close().await;
            inner.signal.notify();
        }
    }
}

impl<T: Send + Unpin + 'static> Drop for ProducerClient<T> {
    fn drop(&mut self) {
        // Background tasks hold their own references; tell them the shell is gone.
        self.inner.closed.store(true, Ordering::Release);
        self.inner.signal.notify();
    }
}

/// Sends the backlog in order until it is empty. Records are taken in chunks under one lock;
/// each is polled once and awaited only if it must wait (metadata, buffer space), so a backlog
/// that formed during a stall drains at fast-path speed once the stall ends. The chunk starts
/// at one record and doubles while nothing waits, so during a stall the records stay in the
/// backlog (where `purge` can reach them).
async fn run_backlog<T: Send + Unpin + 'static>(inner: Arc<Inner<T>>) {
    type Sent<T> = (Option<T>, String, odradek::Result<DeliveryFuture>);
    let mut chunk: VecDeque<Queued<T>> = VecDeque::new();
    let mut sent: Vec<Sent<T>> = Vec::new();
    let mut chunk_size = 1usize;
    loop {
        {
            let mut st = inner.lock();
            let n = sent.len();
            for (opaque, topic, result) in sent.drain(..) {
                settle_sent(&inner, &mut st, opaque, &topic, result);
            }
            inner.backlog_count.fetch_sub(n, Ordering::AcqRel);
            if n > 0 {
                inner.needs_poll.store(true, Ordering::Release);
            }
            if st.backlog.is_empty() {
                st.backlog_running = false;
                drop(st);
                inner.signal.notify();
                return;
            }
            let take = st.backlog.len().min(chunk_size);
            chunk.extend(st.backlog.drain(..take));
        }
        inner.signal.notify();
        let mut waited = false;
        while let Some(q) = chunk.pop_front() {
            let topic = q.record.topic.clone();
            let mut fut = pin!(inner.core.send(q.record));
            let result = match fut.as_mut().now_or_never() {
                Some(r) => r,
                None => {
                    waited = true;
                    fut.await
                }
            };
            sent.push((q.opaque, topic, result));
        }
        chunk_size = if waited {
            1
        } else {
            (chunk_size * 2).min(1024)
        };
    }
}

/// Registers a backlog record's outcome: its delivery future, or its enqueue error as a report.
fn settle_sent<T: Send + Unpin + 'static>(
    inner: &Inner<T>,
    st: &mut State<T>,
    opaque: Option<T>,
    topic: &str,
    result: odradek::Result<DeliveryFuture>,
) {
    match result {
        Ok(delivery) => {
            if let Some(opaque) = opaque {
                st.deliveries.push(Tracked::One {
                    fut: delivery,
                    opaque: Some(opaque),
                });
                st.tracked += 1;
            }
        }
        Err(e) => {
            let mut err = ClientError::from_core(&e, Stage::Enqueue);
            if err.code() == codes::MSG_TIMED_OUT && !topic_exists(&inner.core, topic) {
                err = ClientError::unknown_topic(topic, &err);
            }
            if let Some(opaque) = opaque {
                st.events.push_back(Event::Delivery(Delivery {
                    opaque,
                    result: Err(err),
                }));
            } else if err.is_fatal() {
                st.events.push_back(Event::Error(err));
            }
        }
    }
}

fn topic_exists(core: &Producer, topic: &str) -> bool {
    core.cluster()
        .metadata()
        .topics
        .get(topic)
        .is_some_and(|t| t.error.is_ok() && !t.partitions.is_empty())
}

/// Push mode: hands ready events to the sink as they come, in batches. Ends once the shell has
/// dropped or closed the client and nothing is outstanding.
async fn push_driver<T: Send + Unpin + 'static>(inner: Arc<Inner<T>>, sink: EventSink<T>) {
    debug_assert!(inner.push);
    let waker = waker_of(&inner.signal);
    loop {
        let batch = std::future::poll_fn(|cx| {
            inner.signal.register(cx.waker());
            inner.needs_poll.store(false, Ordering::Release);
            let mut st = inner.lock();
            collect_ready(&mut st, &waker);
            let ready = drain_events(
                &mut st,
                usize::MAX,
                inner.settings.delivery_report_only_error,
            );
            if !ready.is_empty() {
                return Poll::Ready(ready);
            }
            let idle = st.deliveries.is_empty()
                && st.backlog.is_empty()
                && inner.core.pending() == 0
                && inner.backlog_count.load(Ordering::Acquire) == 0;
            if idle && inner.closed.load(Ordering::Acquire) {
                return Poll::Ready(Vec::new());
            }
            Poll::Pending
        })
        .await;
        if batch.is_empty() {
            return;
        }
        sink(batch);
    }
}

/// Queues a statistics event every `every` while the client lives.
async fn stats_ticker<T: Send + Unpin + 'static>(inner: Weak<Inner<T>>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if inner.closed.load(Ordering::Acquire) {
            return;
        }
        let json =
            crate::stats::producer_json(&inner.core, inner.backlog_count.load(Ordering::Acquire));
        inner.lock().events.push_back(Event::Stats(json));
        inner.signal.notify();
    }
}
