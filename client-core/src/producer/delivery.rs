//! Delivery completions: a `oneshot` per record for `send`, one shared completion for all
//! the records of a `try_send_batch`/`send_batch` call (one allocation, a slot per record), and
//! a [`ReportQueue`] that collects the outcomes of every record a binding appended with a token
//! (no allocation per record, one lock per completed batch).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use tokio::sync::oneshot;

use super::record::RecordMetadata;
use crate::{Error, Result};

/// One record's slot in a shared completion.
#[derive(Debug)]
enum Slot {
    /// Not resolved; the waker of the record's own future, once polled.
    Pending(Option<Waker>),
    /// Resolved, not yet taken.
    Ready(Result<RecordMetadata>),
    /// Taken, or never appended (refused records have no delivery).
    Empty,
}

#[derive(Debug)]
struct GroupState {
    slots: Vec<Slot>,
    /// Slots still `Pending`.
    remaining: usize,
    /// Woken when `remaining` reaches 0 (a [`DeliveryBatch`] polled as a whole).
    all: Option<Waker>,
}

/// The completion shared by the records of one batch call.
#[derive(Debug)]
pub(crate) struct Group {
    state: Mutex<GroupState>,
}

impl Group {
    /// A completion with `len` slots, of which those at `pending` (ascending) will resolve.
    pub fn new(len: usize, pending: impl Iterator<Item = usize>) -> Arc<Group> {
        let mut slots = Vec::with_capacity(len);
        slots.resize_with(len, || Slot::Empty);
        let mut remaining = 0;
        for i in pending {
            if let Some(slot) = slots.get_mut(i) {
                *slot = Slot::Pending(None);
                remaining += 1;
            }
        }
        Arc::new(Group {
            state: Mutex::new(GroupState {
                slots,
                remaining,
                all: None,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, GroupState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The producer's handle on slot `index` (one of the `pending` ones given to `new`).
    pub fn handle(self: &Arc<Self>, index: usize) -> Completion {
        Completion::Group(GroupHandle {
            group: Some(self.clone()),
            index,
        })
    }

    /// Resolves slot `index` if it is pending (a second resolution is ignored).
    fn resolve(&self, index: usize, result: Result<RecordMetadata>) {
        let mut st = self.lock();
        let Some(slot) = st.slots.get_mut(index) else {
            return;
        };
        let Slot::Pending(waker) = std::mem::replace(slot, Slot::Ready(result)) else {
            // Already resolved: put nothing back over it. (Unreachable: handles resolve once.)
            return;
        };
        st.remaining -= 1;
        let all = if st.remaining == 0 {
            st.all.take()
        } else {
            None
        };
        drop(st);
        if let Some(w) = waker {
            w.wake();
        }
        if let Some(w) = all {
            w.wake();
        }
    }

    fn poll_slot(&self, index: usize, cx: &mut Context<'_>) -> Poll<Result<RecordMetadata>> {
        let mut st = self.lock();
        let Some(slot) = st.slots.get_mut(index) else {
            return Poll::Ready(Err(Error::Closed));
        };
        match slot {
            Slot::Pending(w) => {
                match w {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => *w = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            Slot::Ready(_) => match std::mem::replace(slot, Slot::Empty) {
                Slot::Ready(r) => Poll::Ready(r),
                _ => Poll::Ready(Err(Error::Closed)),
            },
            Slot::Empty => Poll::Ready(Err(Error::Closed)),
        }
    }
}

/// The producer's side of a group slot. Dropped unresolved (its batch discarded), the record
/// resolves with `Closed`, as a dropped `oneshot` sender does.
#[derive(Debug)]
pub(crate) struct GroupHandle {
    group: Option<Arc<Group>>,
    index: usize,
}

impl Drop for GroupHandle {
    fn drop(&mut self) {
        if let Some(g) = self.group.take() {
            g.resolve(self.index, Err(Error::Closed));
        }
    }
}

/// A record's outcome in a [`ReportQueue`]: the token it was appended with, and its metadata
/// or the error that ended its delivery.
pub type Report = (u64, Result<RecordMetadata>);

/// Collects the outcomes of records appended with [`crate::Producer::try_send_reported`] or
/// [`crate::Producer::send_reported`], in the order they complete (a partition's records in
/// offset order), each under the token it was appended with. One queue serves every record of
/// a client: what a language binding needs for delivery reports, without a future per record.
/// Every appended record reports exactly once (a batch discarded unsent reports `Closed`).
pub struct ReportQueue {
    reports: Mutex<Vec<Report>>,
    /// Called when reports arrive in an empty queue (outside the queue's lock).
    notify: Box<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for ReportQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReportQueue")
            .field("queued", &self.lock().len())
            .finish()
    }
}

impl ReportQueue {
    /// An empty queue; `notify` runs (on a producer thread) whenever reports arrive while the
    /// queue is empty, so a waiter that drains everything never misses one.
    pub fn new(notify: impl Fn() + Send + Sync + 'static) -> Arc<ReportQueue> {
        Arc::new(ReportQueue {
            reports: Mutex::new(Vec::new()),
            notify: Box::new(notify),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Report>> {
        self.reports.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves every queued report to the end of `out`, in arrival order.
    pub fn drain_into(&self, out: &mut Vec<Report>) {
        let mut q = self.lock();
        if out.is_empty() {
            std::mem::swap(&mut *q, out);
        } else {
            out.append(&mut q);
        }
    }

    /// Whether no report is waiting.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn push_all(&self, items: impl IntoIterator<Item = Report>) {
        let mut q = self.lock();
        let was_empty = q.is_empty();
        q.extend(items);
        let arrived = was_empty && !q.is_empty();
        drop(q);
        if arrived {
            (self.notify)();
        }
    }
}

/// The producer's side of a record's report. Dropped unresolved (its batch discarded), it
/// reports `Closed`.
#[derive(Debug)]
pub(crate) struct ReportHandle {
    queue: Option<Arc<ReportQueue>>,
    token: u64,
}

impl ReportHandle {
    pub fn new(queue: Arc<ReportQueue>, token: u64) -> Self {
        ReportHandle {
            queue: Some(queue),
            token,
        }
    }

    /// The queue and token, leaving nothing for `Drop` to report.
    fn take(&mut self) -> Option<(Arc<ReportQueue>, u64)> {
        self.queue.take().map(|q| (q, self.token))
    }
}

impl Drop for ReportHandle {
    fn drop(&mut self) {
        if let Some((q, token)) = self.take() {
            q.push_all([(token, Err(Error::Closed))]);
        }
    }
}

/// How a record in the accumulator reports its outcome.
#[derive(Debug)]
pub(crate) enum Completion {
    /// Nobody waits for it (only the pending count tracks it).
    None,
    /// `send`: its own channel.
    One(oneshot::Sender<Result<RecordMetadata>>),
    /// A batch call's shared completion.
    Group(GroupHandle),
    /// A binding's report queue.
    Report(ReportHandle),
}

/// Resolves the completions of one batch's records, pushing the reports bound for the same
/// queue under one lock (records of a batch almost always share one).
#[derive(Default)]
pub(crate) struct Resolver {
    staged: Option<(Arc<ReportQueue>, Vec<Report>)>,
}

impl Resolver {
    /// Resolves `completion` with `result` (now, or at [`Resolver::finish`] for reports).
    pub fn resolve(&mut self, completion: Completion, result: Result<RecordMetadata>) {
        let Completion::Report(mut h) = completion else {
            completion.send(result);
            return;
        };
        let Some((queue, token)) = h.take() else {
            return;
        };
        match &mut self.staged {
            Some((q, items)) if Arc::ptr_eq(q, &queue) => items.push((token, result)),
            _ => {
                self.finish();
                self.staged = Some((queue, vec![(token, result)]));
            }
        }
    }

    /// Pushes the staged reports.
    pub fn finish(&mut self) {
        if let Some((q, items)) = self.staged.take() {
            q.push_all(items);
        }
    }
}

impl Drop for Resolver {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Completion {
    /// Delivers the record's outcome.
    pub fn send(self, result: Result<RecordMetadata>) {
        match self {
            Completion::None => {}
            Completion::One(tx) => {
                let _ = tx.send(result);
            }
            Completion::Group(mut h) => {
                if let Some(g) = h.group.take() {
                    g.resolve(h.index, result);
                }
            }
            Completion::Report(mut h) => {
                if let Some((q, token)) = h.take() {
                    q.push_all([(token, result)]);
                }
            }
        }
    }
}

#[derive(Debug)]
enum Rx {
    One(oneshot::Receiver<Result<RecordMetadata>>),
    Group(Arc<Group>, usize),
}

/// Resolves once with the record's metadata or the error that ended its delivery.
#[derive(Debug)]
pub struct DeliveryFuture {
    rx: Rx,
}

impl DeliveryFuture {
    pub(crate) fn one(rx: oneshot::Receiver<Result<RecordMetadata>>) -> Self {
        DeliveryFuture { rx: Rx::One(rx) }
    }
}

impl Future for DeliveryFuture {
    type Output = Result<RecordMetadata>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.rx {
            Rx::One(rx) => Pin::new(rx)
                .poll(cx)
                .map(|r| r.unwrap_or(Err(Error::Closed))),
            Rx::Group(g, i) => g.poll_slot(*i, cx),
        }
    }
}

/// The deliveries of the records one batch call appended, indexed like the records it was
/// given: one shared completion instead of a channel per record. Use either
/// [`DeliveryBatch::delivery`] (a future per record) or [`DeliveryBatch::poll_all`] with
/// [`DeliveryBatch::take`], not both for the same record: a result is handed out once.
#[derive(Debug, Default)]
pub struct DeliveryBatch {
    group: Option<Arc<Group>>,
}

impl DeliveryBatch {
    pub(crate) fn new(group: Option<Arc<Group>>) -> Self {
        DeliveryBatch { group }
    }

    /// Whether the call tracked deliveries (it was asked to, and appended at least one record).
    pub fn is_tracked(&self) -> bool {
        self.group.is_some()
    }

    /// The future of record `index`, if it was appended and tracked. Call once per record.
    pub fn delivery(&self, index: usize) -> Option<DeliveryFuture> {
        let g = self.group.as_ref()?;
        let st = g.lock();
        matches!(st.slots.get(index), Some(Slot::Pending(_) | Slot::Ready(_))).then(|| {
            DeliveryFuture {
                rx: Rx::Group(g.clone(), index),
            }
        })
    }

    /// Ready once every appended record has resolved (at once when none was tracked).
    pub fn poll_all(&self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(g) = &self.group else {
            return Poll::Ready(());
        };
        let mut st = g.lock();
        if st.remaining == 0 {
            return Poll::Ready(());
        }
        match &st.all {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => st.all = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// Takes record `index`'s outcome once it has resolved; `None` while it is pending, after
    /// it was taken, or for a record the call did not append.
    pub fn take(&self, index: usize) -> Option<Result<RecordMetadata>> {
        let g = self.group.as_ref()?;
        let mut st = g.lock();
        let slot = st.slots.get_mut(index)?;
        if !matches!(slot, Slot::Ready(_)) {
            return None;
        }
        match std::mem::replace(slot, Slot::Empty) {
            Slot::Ready(r) => Some(r),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn md(offset: i64) -> RecordMetadata {
        RecordMetadata {
            topic: Arc::from("t"),
            partition: 0,
            offset,
            timestamp: 7,
        }
    }

    fn poll<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
        Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn each_record_resolves_once_with_its_own_result() {
        // Slot 1 was refused: it never resolves and has no future.
        let g = Group::new(3, [0, 2].into_iter());
        let batch = DeliveryBatch::new(Some(g.clone()));
        assert!(batch.delivery(1).is_none());
        let mut f0 = batch.delivery(0).unwrap();
        let mut f2 = batch.delivery(2).unwrap();
        let (h0, h2) = (g.handle(0), g.handle(2));
        assert!(poll(&mut f0).is_pending());
        assert!(batch
            .poll_all(&mut Context::from_waker(Waker::noop()))
            .is_pending());
        h2.send(Ok(md(42)));
        assert!(poll(&mut f0).is_pending());
        assert_eq!(poll(&mut f2).map(|r| r.unwrap().offset), Poll::Ready(42));
        assert!(batch
            .poll_all(&mut Context::from_waker(Waker::noop()))
            .is_pending());
        h0.send(Err(Error::Closed));
        assert!(batch
            .poll_all(&mut Context::from_waker(Waker::noop()))
            .is_ready());
        assert!(matches!(poll(&mut f0), Poll::Ready(Err(Error::Closed))));
        // Taken results are handed out once.
        assert!(batch.take(0).is_none() && batch.take(2).is_none());
    }

    #[test]
    fn take_and_drop_of_an_unresolved_handle() {
        let g = Group::new(2, [0, 1].into_iter());
        let batch = DeliveryBatch::new(Some(g.clone()));
        let h0 = g.handle(0);
        let h1 = g.handle(1);
        assert!(batch.take(0).is_none(), "pending");
        h0.send(Ok(md(5)));
        // A batch discarded without completing its records still resolves them.
        drop(h1);
        assert!(batch
            .poll_all(&mut Context::from_waker(Waker::noop()))
            .is_ready());
        assert_eq!(batch.take(0).unwrap().unwrap().offset, 5);
        assert!(matches!(batch.take(1), Some(Err(Error::Closed))));
        assert!(batch.take(0).is_none());
    }

    #[test]
    fn report_queue_collects_each_record_once_and_notifies_when_it_fills() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let notified = Arc::new(AtomicUsize::new(0));
        let n = notified.clone();
        let q = ReportQueue::new(move || {
            n.fetch_add(1, Ordering::SeqCst);
        });
        let other = ReportQueue::new(|| {});
        let mut resolver = Resolver::default();
        resolver.resolve(
            Completion::Report(ReportHandle::new(q.clone(), 7)),
            Ok(md(0)),
        );
        resolver.resolve(
            Completion::Report(ReportHandle::new(q.clone(), 8)),
            Ok(md(1)),
        );
        assert!(
            q.is_empty(),
            "a batch's reports are staged until the batch is done"
        );
        resolver.resolve(
            Completion::Report(ReportHandle::new(other.clone(), 1)),
            Ok(md(2)),
        );
        resolver.resolve(Completion::None, Ok(md(3)));
        resolver.finish();
        assert_eq!(
            notified.load(Ordering::SeqCst),
            1,
            "one wake-up for the batch"
        );
        // A handle dropped unresolved (its batch discarded) reports Closed; the queue was not
        // empty, so no second wake-up.
        drop(ReportHandle::new(q.clone(), 9));
        assert_eq!(notified.load(Ordering::SeqCst), 1);
        let mut out = Vec::new();
        q.drain_into(&mut out);
        let got: Vec<(u64, Option<i64>)> = out
            .iter()
            .map(|(t, r)| (*t, r.as_ref().ok().map(|m| m.offset)))
            .collect();
        assert_eq!(got, vec![(7, Some(0)), (8, Some(1)), (9, None)]);
        assert!(matches!(out[2].1, Err(Error::Closed)));
        assert!(q.is_empty());
        // Draining emptied it: the next report wakes again.
        Completion::Report(ReportHandle::new(q.clone(), 10)).send(Ok(md(4)));
        assert_eq!(notified.load(Ordering::SeqCst), 2);
        let mut rest = Vec::new();
        other.drain_into(&mut rest);
        assert_eq!(rest.len(), 1);
    }

    #[test]
    fn resolution_wakes_the_record_and_the_batch() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        struct Count(AtomicUsize);
        impl std::task::Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let (one, all) = (
            Arc::new(Count(AtomicUsize::new(0))),
            Arc::new(Count(AtomicUsize::new(0))),
        );
        let g = Group::new(2, [0, 1].into_iter());
        let batch = DeliveryBatch::new(Some(g.clone()));
        let mut f1 = batch.delivery(1).unwrap();
        let w1 = Waker::from(one.clone());
        assert!(Pin::new(&mut f1)
            .poll(&mut Context::from_waker(&w1))
            .is_pending());
        let wa = Waker::from(all.clone());
        assert!(batch.poll_all(&mut Context::from_waker(&wa)).is_pending());
        g.handle(0).send(Ok(md(0)));
        assert_eq!(one.0.load(Ordering::SeqCst), 0, "record 0 has no waiter");
        assert_eq!(all.0.load(Ordering::SeqCst), 0, "one still pending");
        g.handle(1).send(Ok(md(1)));
        assert_eq!(one.0.load(Ordering::SeqCst), 1);
        assert_eq!(all.0.load(Ordering::SeqCst), 1);
    }
}
