//! The producer every shell wraps: `produce` never blocks, delivery reports queue up per client
//! and are served on the caller's thread (`poll`/`flush`) or pushed to a callback on the runtime
//! (asyncio, Promises). It adapts the core's [`Producer`] and its [`ReportQueue`].
//!
//! **Produce.** `produce` hands the record to the core's non-waiting batch entry point
//! (`try_send_reported`, [`HoldPolicy::METADATA`]) on the caller's thread. With metadata cached
//! and buffer space free the record is in its partition's batch when the call returns; a record
//! whose topic has no metadata yet is held inside the core (librdkafka's unassigned-partition
//! queue, counted in `buffer.memory`) and fails at its deadline if the topic never appears.
//! When `buffer.memory` (`queue.buffering.max.kbytes`) is full, or
//! `queue.buffering.max.messages` records are outstanding, `produce` fails fast with
//! `_QUEUE_FULL`, as librdkafka does, instead of blocking.
//!
//! **Delivery reports.** A record produced with an opaque (the shell's callback, future or
//! message reference) gets a token, the index of its slot in `State::slots`; the core reports
//! its outcome under that token into the client's one [`ReportQueue`] (one lock per completed
//! batch, no future or channel per record), and serving reports moves them from the queue to
//! the events in completion order: O(ready), not O(outstanding). Records without an opaque are
//! not tracked at all; the core's pending count still covers them for `len`/`flush`.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::task::Poll;
use std::time::Duration;

use odradek::producer::{HoldPolicy, Report, ReportQueue};
use odradek::{Producer, ProducerRecord, RecordMetadata};
use tokio::runtime::Handle;

use crate::config::BindingSettings;
use crate::runtime::{self, ForkGuard, Signal};
use crate::throttle::{Throttle, ThrottleQueue};

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

struct State<T> {
    /// Opaques of records whose reports are awaited, by token: `slots[token - base]` (`None`:
    /// reported, or a token burnt by a refused record).
    slots: VecDeque<Option<T>>,
    /// The token of `slots[0]`.
    base: u64,
    /// `Some` entries in `slots`: records whose reports are awaited.
    tracked: usize,
    /// Scratch buffer for draining the report queue.
    reports: Vec<Report>,
    events: VecDeque<Event<T>>,
}

impl<T> State<T> {
    /// The token the next registered record gets.
    fn next_token(&self) -> u64 {
        self.base + self.slots.len() as u64
    }

    /// Registers the next token: `Some(opaque)` awaits its report, `None` burns it (a record
    /// refused after its completion was made reports `Closed`, which must not land on another
    /// record's opaque).
    fn register(&mut self, opaque: Option<T>) -> u64 {
        let token = self.next_token();
        self.tracked += usize::from(opaque.is_some());
        self.slots.push_back(opaque);
        self.compact();
        token
    }

    /// The opaque awaiting `token`'s report, taken (`None` if it was reported or burnt).
    fn take_slot(&mut self, token: u64) -> Option<T> {
        let index = usize::try_from(token.checked_sub(self.base)?).ok()?;
        let opaque = self.slots.get_mut(index)?.take();
        if opaque.is_some() {
            self.tracked -= 1;
        }
        self.compact();
        opaque
    }

    fn compact(&mut self) {
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.base += 1;
        }
    }
}

struct Inner<T> {
    core: Producer,
    handle: Handle,
    fork: ForkGuard,
    settings: BindingSettings,
    signal: Arc<Signal>,
    /// Where the core reports the outcomes of records produced with an opaque.
    reports: Arc<ReportQueue>,
    state: Mutex<State<T>>,
    flush_running: AtomicBool,
    closed: AtomicBool,
    push: bool,
    /// Throttle reports, once the shell asked for them ([`ProducerClient::report_throttles`]).
    throttles: OnceLock<Arc<ThrottleQueue>>,
}

impl<T> Inner<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What [`ProducerClient::produce_batch`] did.
#[derive(Debug, Default)]
pub struct BatchOutcome {
    /// Records accepted (appended to a batch, or held by the core).
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

/// Moves every report that arrived into `events`, with its opaque. Drops nothing, so it is safe
/// to call where the shell's lock is not held (the Python shell releases the GIL while it
/// waits).
fn collect_ready<T>(st: &mut State<T>, reports: &ReportQueue) -> usize {
    let mut arrived = std::mem::take(&mut st.reports);
    reports.drain_into(&mut arrived);
    let mut n = 0;
    for (token, result) in arrived.drain(..) {
        // A report without a slot belongs to a refused record (already answered).
        if let Some(opaque) = st.take_slot(token) {
            st.events.push_back(Event::Delivery(Delivery {
                opaque,
                result: result.map_err(|e| ClientError::from_core(&e, Stage::Delivery)),
            }));
            n += 1;
        }
    }
    st.reports = arrived;
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
        Self::from_config(config, settings, mode)
    }

    /// Creates a producer from a configuration the shell already split (and completed in code,
    /// e.g. with an OAUTHBEARER token callback: `ClientConfig::set_token_provider`).
    pub fn from_config(
        config: odradek::ClientConfig,
        settings: BindingSettings,
        mode: Mode<T>,
    ) -> Result<Self, ClientError> {
        let handle = runtime::runtime()?;
        let core = {
            let _enter = handle.enter();
            Producer::new(config).map_err(|e| ClientError::from_core(&e, Stage::Request))?
        };
        let (push, sink) = match mode {
            Mode::Poll => (false, None),
            Mode::Push(s) => (true, Some(s)),
        };
        let signal = Signal::new();
        let wake = signal.clone();
        let reports = ReportQueue::new(move || wake.notify());
        let inner = Arc::new(Inner {
            core,
            handle: handle.clone(),
            fork: ForkGuard::new(),
            settings,
            signal,
            reports,
            state: Mutex::new(State {
                slots: VecDeque::new(),
                base: 0,
                tracked: 0,
                reports: Vec::new(),
                events: VecDeque::new(),
            }),
            flush_running: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            push,
            throttles: OnceLock::new(),
        });
        // Client-level errors (authentication, brokers down) reach `error_cb`.
        {
            let weak = Arc::downgrade(&inner);
            inner
                .core
                .cluster()
                .set_error_listener(crate::client_errors::listener(move |e| {
                    let Some(inner) = weak.upgrade() else { return };
                    inner.lock().events.push_back(Event::Error(e));
                    inner.signal.notify();
                }));
        }
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
        self.inner.core.pending().max(st.tracked) + st.events.len()
    }

    fn queue_full(&self, st: &State<T>) -> Option<ClientError> {
        (self.outstanding(st) >= self.inner.settings.queue_max_messages)
            .then(|| self.queue_full_error())
    }

    /// `_QUEUE_FULL` for a record the core stopped at: `buffer.memory` has no room for it.
    fn memory_full_error(&self) -> ClientError {
        ClientError::new(
            codes::QUEUE_FULL,
            Some(format!(
                "buffer.memory (queue.buffering.max.kbytes: {} bytes) is full: serve delivery reports with poll() or flush()",
                self.inner.core.cluster().config().producer.buffer_memory
            )),
        )
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

    /// Produces one record. `make` builds it (once). Errors found before
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
        let record = make();
        let token = opaque.is_some().then(|| st.next_token());
        let sent = self
            .inner
            .core
            .try_send_reported(std::slice::from_ref(&record), &self.inner.reports, &[token])
            .map_err(|e| ClientError::from_core(&e, Stage::Enqueue))?;
        if let Some((_, e)) = sent.refused.into_iter().next() {
            if token.is_some() {
                st.register(None);
            }
            return Err(ClientError::from_core(&e, Stage::Enqueue));
        }
        if sent.consumed == 0 {
            return Err(self.memory_full_error());
        }
        if token.is_some() {
            st.register(opaque);
        }
        Ok(())
    }

    /// Produces `n` records built by `make(i)` under one lock. The records go to the core in
    /// chunks through its batch entry point (one clock read, topic lookup and accumulator lock
    /// per chunk); records whose topic has no metadata yet are held by the core, as `produce`
    /// would. `make` is called once per index. A record `make` refuses, or the core rejects, is
    /// listed in `failed` (by ascending index); the others are queued. Stops early (the rest
    /// failed with `_QUEUE_FULL`) when the queue or `buffer.memory` fills.
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
            if !records.is_empty() && !self.send_chunk(&mut st, &mut records, &mut slots, &mut out)
            {
                // buffer.memory is full: the rest are refused like the records the core
                // stopped at.
                let e = self.memory_full_error();
                out.failed.extend((i..n).map(|j| (j, e.clone())));
                break;
            }
        }
        out.failed.sort_by_key(|(j, _)| *j);
        Ok(out)
    }

    /// Hands `records` (with their batch index and opaque in `slots`) to the core's batch entry
    /// point; records it stopped at (no room in `buffer.memory`) are failed with `_QUEUE_FULL`.
    /// Leaves both vectors empty. Returns false when the core stopped.
    fn send_chunk(
        &self,
        st: &mut State<T>,
        records: &mut Vec<ProducerRecord>,
        slots: &mut Vec<(usize, Option<T>)>,
        out: &mut BatchOutcome,
    ) -> bool {
        // Tokens in order for the records with an opaque; registered (or burnt) below for the
        // records the core consumed; the others' tokens are handed out again later.
        let mut next = st.next_token();
        let tokens: Vec<Option<u64>> = slots
            .iter()
            .map(|(_, o)| {
                o.is_some().then(|| {
                    next += 1;
                    next - 1
                })
            })
            .collect();
        let sent = match self.inner.core.try_send_reported_with(
            records,
            &self.inner.reports,
            &tokens,
            HoldPolicy::METADATA,
        ) {
            Err(e) => {
                let e = ClientError::from_core(&e, Stage::Enqueue);
                out.failed
                    .extend(slots.drain(..).map(|(j, _)| (j, e.clone())));
                records.clear();
                return true;
            }
            Ok(sent) => sent,
        };
        let mut refused = sent.refused.into_iter().peekable();
        for (k, (j, opaque)) in slots.drain(..sent.consumed).enumerate() {
            let has_token = opaque.is_some();
            if let Some((_, e)) = refused.next_if(|(r, _)| *r == k) {
                out.failed
                    .push((j, ClientError::from_core(&e, Stage::Enqueue)));
                if has_token {
                    st.register(None);
                }
                continue;
            }
            out.queued += 1;
            if has_token {
                st.register(opaque);
            }
        }
        let stopped = !slots.is_empty();
        if stopped {
            let e = self.memory_full_error();
            out.failed
                .extend(slots.drain(..).map(|(j, _)| (j, e.clone())));
        }
        records.clear();
        !stopped
    }

    /// Records outstanding: queued, in flight, or delivered but not yet served by
    /// [`ProducerClient::take_events`] (librdkafka's `rd_kafka_outq_len`).
    pub fn len(&self) -> usize {
        let pending = self.inner.core.pending();
        let mut st = self.inner.lock();
        collect_ready(&mut st, &self.inner.reports);
        let events = st
            .events
            .iter()
            .filter(|e| matches!(e, Event::Delivery(_)))
            .count();
        pending.max(st.tracked) + events
    }

    /// Whether nothing is outstanding.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes up to `max` ready events without waiting (poll mode). Call with whatever lock the
    /// shell needs to drop opaques safely (the Python shell holds the GIL).
    pub fn take_events(&self, max: usize) -> Vec<Event<T>> {
        let mut st = self.inner.lock();
        collect_ready(&mut st, &self.inner.reports);
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
            collect_ready(&mut st, &self.inner.reports);
            if !st.events.is_empty() || self.has_throttles() {
                self.inner.signal.cancel_wait();
                return true;
            }
        }
        self.inner.signal.wait(seen, timeout);
        false
    }

    /// Starts keeping the brokers' throttle reports for [`ProducerClient::take_throttles`]
    /// (the shell has a `throttle_cb`); a waiting `poll` ([`ProducerClient::wait_events`]) wakes
    /// for them. Installs the cluster's throttle listener; later calls do nothing.
    pub fn report_throttles(&self) {
        self.inner.throttles.get_or_init(|| {
            ThrottleQueue::attach(self.inner.core.cluster(), self.inner.signal.clone())
        });
    }

    /// Takes the throttle reports waiting (none unless [`ProducerClient::report_throttles`]
    /// was called), oldest first.
    pub fn take_throttles(&self) -> Vec<Throttle> {
        self.inner
            .throttles
            .get()
            .map_or_else(Vec::new, |q| q.take())
    }

    /// Puts throttle reports back for the next `poll` (a callback raised).
    pub fn requeue_throttles(&self, reports: Vec<Throttle>) {
        if let Some(q) = self.inner.throttles.get() {
            q.requeue(reports);
        }
    }

    fn has_throttles(&self) -> bool {
        self.inner.throttles.get().is_some_and(|q| !q.is_empty())
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
                if inner.core.pending() == 0 {
                    // The core settles its pending count just before it reports: wait for the
                    // reports too, so every one precedes `Flushed`.
                    let mut st = inner.lock();
                    collect_ready(&mut st, &inner.reports);
                    if st.tracked == 0 {
                        break;
                    }
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let mut st = inner.lock();
            collect_ready(&mut st, &inner.reports);
            st.events.push_back(Event::Flushed(opaque));
            drop(st);
            inner.signal.notify();
        });
    }

    /// Whether every record has been delivered and every report taken: the end of `flush`.
    pub fn flushed(&self) -> bool {
        if self.inner.core.pending() > 0 {
            return false;
        }
        let mut st = self.inner.lock();
        collect_ready(&mut st, &self.inner.reports);
        st.tracked == 0 && !st.events.iter().any(|e| matches!(e, Event::Delivery(_)))
    }

    /// Fails every record not yet handed to the network (held by the core, or in a batch not
    /// yet sent) with `_PURGE_QUEUE`, reported like any failure (librdkafka's
    /// `purge(PURGE_F_QUEUE)`). Batches in flight are left to complete. Returns how many
    /// records were purged.
    pub fn purge_queue(&self) -> usize {
        let n = self.inner.core.purge_queued();
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

/// Push mode: hands ready events to the sink as they come, in batches. Ends once the shell has
/// dropped or closed the client and nothing is outstanding.
async fn push_driver<T: Send + Unpin + 'static>(inner: Arc<Inner<T>>, sink: EventSink<T>) {
    debug_assert!(inner.push);
    loop {
        let batch = std::future::poll_fn(|cx| {
            inner.signal.register(cx.waker());
            let mut st = inner.lock();
            collect_ready(&mut st, &inner.reports);
            let ready = drain_events(
                &mut st,
                usize::MAX,
                inner.settings.delivery_report_only_error,
            );
            if !ready.is_empty() {
                return Poll::Ready(ready);
            }
            let idle = st.tracked == 0 && inner.core.pending() == 0;
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
    let emitter = crate::stats::Emitter::new("producer");
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
        let shell = crate::stats::ProducerShell {
            replyq: inner.lock().events.len(),
            msg_max: inner.settings.queue_max_messages,
        };
        let json = crate::stats::producer_json(&emitter, &inner.core, shell);
        inner.lock().events.push_back(Event::Stats(json));
        inner.signal.notify();
    }
}
