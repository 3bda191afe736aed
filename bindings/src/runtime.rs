//! The shared tokio runtime, fork detection, and the waiting primitives the shells build their
//! blocking calls from.
//!
//! One multi-threaded runtime serves every client of a process. It is created on first use, not
//! at import, so importing a binding starts no threads. `fork()` copies only the calling thread,
//! so a child inherits a runtime whose workers do not exist: a `pthread_atfork` child handler
//! bumps [`fork_generation`], the next [`runtime`] call in the child builds a fresh runtime (the
//! parent's is leaked, never dropped: dropping it would wait for threads that are gone), and a
//! client created before the fork refuses to be used in the child ([`ForkGuard`]).

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Once};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use futures_util::task::AtomicWaker;
use tokio::runtime::{Handle, Runtime};

use crate::ClientError;

static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);
/// The process's runtime: the fork generation it was built in, its handle, and the runtime
/// itself (kept so that [`shutdown`] can stop it; never dropped otherwise).
static RUNTIME: Mutex<Option<(u64, Handle, Runtime)>> = Mutex::new(None);
static ATFORK: Once = Once::new();

extern "C" fn after_fork_in_child() {
    FORK_GENERATION.fetch_add(1, Ordering::SeqCst);
}

/// Bumped in a child process after every `fork()`.
pub fn fork_generation() -> u64 {
    FORK_GENERATION.load(Ordering::Acquire)
}

/// Worker threads: `ODRADEK_RUNTIME_THREADS`, else the number of CPUs (at least 2).
fn worker_threads() -> usize {
    std::env::var("ODRADEK_RUNTIME_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map_or(2, |n| n.get())
                .max(2)
        })
}

/// The process's runtime handle, created on first use and recreated in a forked child.
pub fn runtime() -> Result<Handle, ClientError> {
    ATFORK.call_once(|| {
        // SAFETY: registers a handler that only performs an atomic add, which is
        // async-signal-safe and valid in a freshly forked child.
        unsafe {
            libc::pthread_atfork(None, None, Some(after_fork_in_child));
        }
    });
    crate::debug_log::install_from_env();
    let generation = fork_generation();
    let mut slot = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((g, handle, _)) = slot.as_ref() {
        if *g == generation {
            return Ok(handle.clone());
        }
    }
    if let Some((_, _, inherited)) = slot.take() {
        // A parent's runtime in a forked child: its threads do not exist here, so it must
        // never be dropped.
        std::mem::forget(inherited);
    }
    let rt: Runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(worker_threads())
        .thread_name("odradek-rt")
        .enable_all()
        .build()
        .map_err(|e| {
            ClientError::new(
                crate::codes::FAIL,
                Some(format!("cannot start the runtime: {e}")),
            )
        })?;
    let handle = rt.handle().clone();
    // The runtime lives as long as the process (a static is never dropped) unless a shell
    // calls `shutdown`; in a forked child the parent's copy is leaked (see above).
    *slot = Some((generation, handle.clone(), rt));
    Ok(handle)
}

/// Stops the process's runtime, waiting up to `timeout` for its tasks to be dropped and its
/// threads to exit; a later [`runtime`] call builds a new one.
///
/// For a shell's exit path once every client it made has been destroyed (libodradek's
/// `atexit` handler): the connection tasks that were still winding down are dropped and every
/// runtime thread is joined, so nothing the library allocated is left to a running thread when
/// the process exits. Does nothing for a runtime inherited across `fork()` (its threads do not
/// exist) or when called from inside a runtime (where it cannot block).
pub fn shutdown(timeout: Duration) {
    if Handle::try_current().is_ok() {
        return;
    }
    let taken = RUNTIME.lock().unwrap_or_else(|e| e.into_inner()).take();
    match taken {
        Some((generation, _, rt)) if generation == fork_generation() => {
            // On a thread of its own: from an `atexit` handler the calling thread's
            // thread-locals are already destroyed (glibc runs their destructors first), and
            // tokio's wait for the runtime's threads parks on one of them; without it the wait
            // returned at once, the threads were not joined, and the process exited while they
            // were still dropping the tasks.
            let stopper = std::thread::Builder::new()
                .name("odradek-rt-stop".into())
                .spawn(move || rt.shutdown_timeout(timeout));
            if let Ok(stopper) = stopper {
                let _ = stopper.join();
            }
        }
        Some((_, _, inherited)) => std::mem::forget(inherited),
        None => {}
    }
}

/// Remembers the fork generation a client was created in.
#[derive(Debug, Clone, Copy)]
pub struct ForkGuard(u64);

impl ForkGuard {
    /// The current generation.
    pub fn new() -> Self {
        ForkGuard(fork_generation())
    }

    /// Fails in a child process forked after the client was created: its background tasks ran
    /// on threads the child does not have.
    pub fn check(&self) -> Result<(), ClientError> {
        if self.0 == fork_generation() {
            Ok(())
        } else {
            Err(ClientError::state(
                "this client was created before fork(); create a new one in the child process",
            ))
        }
    }
}

impl Default for ForkGuard {
    fn default() -> Self {
        ForkGuard::new()
    }
}

/// Polls `fut` once on the calling thread (inside the runtime's context, with a no-op waker).
/// The fast path of calls that usually complete without waiting.
pub fn poll_once<F: Future>(handle: &Handle, fut: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    let _enter = handle.enter();
    let mut cx = Context::from_waker(Waker::noop());
    fut.poll(&mut cx)
}

/// Runs `fut` to completion on the calling thread (drivers run on the runtime's workers).
/// Must not be called from a runtime thread.
pub fn block_on<F: Future>(handle: &Handle, fut: F) -> F::Output {
    handle.block_on(fut)
}

/// Runs `fut` on the calling thread for at most `slice`; `None` if it is still pending. The
/// future is kept, so the caller can resume it after checking for signals.
pub fn block_on_for<F: Future>(
    handle: &Handle,
    fut: std::pin::Pin<&mut F>,
    slice: Duration,
) -> Option<F::Output> {
    handle.block_on(async move { tokio::time::timeout(slice, fut).await.ok() })
}

/// The longest a blocking call waits before it looks at signals / cancellation again.
pub const SLICE: Duration = Duration::from_millis(100);

/// A deadline from a timeout in seconds as the shells receive it: `None` or negative means
/// forever.
#[derive(Debug, Clone, Copy)]
pub struct Deadline(Option<Instant>);

impl Deadline {
    /// From an optional duration (`None`: forever).
    pub fn after(timeout: Option<Duration>) -> Self {
        Deadline(timeout.map(|t| Instant::now() + t))
    }

    /// From seconds: `None`, negative or infinite mean forever.
    pub fn from_secs(timeout: Option<f64>) -> Self {
        match timeout {
            Some(t) if t.is_finite() && t >= 0.0 => {
                Deadline::after(Some(Duration::from_secs_f64(t.min(1e9))))
            }
            _ => Deadline(None),
        }
    }

    /// Time left, capped at `cap` (zero once passed).
    pub fn slice(&self, cap: Duration) -> Duration {
        match self.0 {
            None => cap,
            Some(at) => at.saturating_duration_since(Instant::now()).min(cap),
        }
    }

    /// Whether the deadline has passed.
    pub fn passed(&self) -> bool {
        self.0.is_some_and(|at| Instant::now() >= at)
    }

    /// Time left, if bounded.
    pub fn remaining(&self) -> Option<Duration> {
        self.0
            .map(|at| at.saturating_duration_since(Instant::now()))
    }
}

/// Runs a blocking operation in slices of at most [`SLICE`], calling `check` between slices (the
/// Python shell checks for Ctrl-C there, with the GIL held; the C shell checks a cancellation
/// flag). `step` gets the length of the next slice and returns `Some` when done. Returns
/// `Ok(None)` when `deadline` passes first; `step` always runs at least once.
pub fn interruptible<T, E>(
    deadline: Deadline,
    mut step: impl FnMut(Duration) -> Option<T>,
    mut check: impl FnMut() -> Result<(), E>,
) -> Result<Option<T>, E> {
    loop {
        if let Some(v) = step(deadline.slice(SLICE)) {
            return Ok(Some(v));
        }
        check()?;
        if deadline.passed() {
            return Ok(None);
        }
    }
}

/// A cancellation flag another thread can raise to end a blocking call early (the C shell's
/// Ctrl-C story; Python uses signals instead).
#[derive(Debug, Default, Clone)]
pub struct CancelToken(Arc<std::sync::atomic::AtomicBool>);

impl CancelToken {
    /// A new, lowered flag.
    pub fn new() -> Self {
        CancelToken::default()
    }

    /// Raises the flag.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Lowers it again.
    pub fn reset(&self) {
        self.0.store(false, Ordering::Release);
    }

    /// `Err(_INTR)` once raised, for use as an [`interruptible`] check.
    pub fn check(&self) -> Result<(), ClientError> {
        if self.0.load(Ordering::Acquire) {
            Err(ClientError::new(crate::codes::INTR, None))
        } else {
            Ok(())
        }
    }
}

/// Wakes whoever waits for a client's events: threads blocked in a shell's `poll` (condition
/// variable) and, for push-style shells, a runtime task (`AtomicWaker`). It is also a [`Waker`]
/// so futures can wake it directly.
#[derive(Debug, Default)]
pub struct Signal {
    seq: Mutex<u64>,
    cv: Condvar,
    waiters: AtomicUsize,
    task: AtomicWaker,
}

impl Signal {
    /// A new signal.
    pub fn new() -> Arc<Signal> {
        Arc::new(Signal::default())
    }

    /// Wakes waiting threads and the registered task.
    pub fn notify(&self) {
        if self.waiters.load(Ordering::SeqCst) > 0 {
            let mut seq = self.seq.lock().unwrap_or_else(|e| e.into_inner());
            *seq = seq.wrapping_add(1);
            self.cv.notify_all();
        }
        self.task.wake();
    }

    /// Registers the task to wake (push-style shells).
    pub fn register(&self, waker: &Waker) {
        self.task.register(waker);
    }

    /// Announces a waiter and returns the sequence number to wait on. Call before checking for
    /// work so that a notification in between is not lost; pair with [`Signal::wait`].
    pub fn prepare(&self) -> u64 {
        self.waiters.fetch_add(1, Ordering::SeqCst);
        *self.seq.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until notified after `prepare` returned `seen`, or `timeout`; ends the waiter's
    /// registration either way.
    pub fn wait(&self, seen: u64, timeout: Duration) {
        let guard = self.seq.lock().unwrap_or_else(|e| e.into_inner());
        if *guard == seen && !timeout.is_zero() {
            let _ = self
                .cv
                .wait_timeout_while(guard, timeout, |s| *s == seen)
                .map(drop);
        }
        self.waiters.fetch_sub(1, Ordering::SeqCst);
    }

    /// Ends a registration made by `prepare` without waiting.
    pub fn cancel_wait(&self) {
        self.waiters.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.notify();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.notify();
    }
}

/// Runs `fut` to completion on the runtime and hands its output to `done` there: the building
/// block of push-style (asyncio, Promise) calls. Nothing blocks the caller.
pub fn spawn_then<F, D>(handle: &Handle, fut: F, done: D)
where
    F: Future + Send + 'static,
    F::Output: Send,
    D: FnOnce(F::Output) + Send + 'static,
{
    handle.spawn(async move {
        let out = fut.await;
        done(out);
    });
}

/// Blocks until `fut` completes or `deadline` passes, checking `check` every [`SLICE`]: the
/// usual shape of a shell's blocking call around one core future. `wrap` runs each slice (the
/// Python shell releases the GIL there).
pub fn wait_future<F, E>(
    handle: &Handle,
    fut: F,
    deadline: Deadline,
    mut wrap: impl FnMut(&mut (dyn FnMut() -> Option<F::Output> + Send)) -> Option<F::Output>,
    check: impl FnMut() -> Result<(), E>,
) -> Result<Option<F::Output>, E>
where
    F: Future + Send,
{
    let mut fut = pin!(fut);
    if let Poll::Ready(v) = poll_once(handle, fut.as_mut()) {
        return Ok(Some(v));
    }
    interruptible(
        deadline,
        |slice| {
            let mut run = || block_on_for(handle, fut.as_mut(), slice);
            wrap(&mut run)
        },
        check,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_is_shared() {
        let a = runtime().unwrap();
        let b = runtime().unwrap();
        assert_eq!(a.id(), b.id());
        assert!(ForkGuard::new().check().is_ok());
    }

    #[test]
    fn interruptible_stops_on_check_and_deadline() {
        let mut n = 0;
        let r: Result<Option<()>, &str> = interruptible(
            Deadline::from_secs(None),
            |_| None,
            || {
                n += 1;
                if n == 3 {
                    Err("stop")
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!(r, Err("stop"));
        let r: Result<Option<()>, ()> =
            interruptible(Deadline::from_secs(Some(0.0)), |_| None, || Ok(()));
        assert_eq!(r, Ok(None));
        let token = CancelToken::new();
        token.cancel();
        assert_eq!(token.check().unwrap_err().name(), "_INTR");
    }

    #[test]
    fn signal_wakes_a_waiting_thread() {
        let s = Signal::new();
        let seen = s.prepare();
        let s2 = s.clone();
        let t = std::thread::spawn(move || s2.notify());
        let start = Instant::now();
        s.wait(seen, Duration::from_secs(10));
        t.join().unwrap();
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn wait_future_resumes_across_slices() {
        let h = runtime().unwrap();
        let out: Result<Option<u32>, ()> = wait_future(
            &h,
            async {
                tokio::time::sleep(Duration::from_millis(250)).await;
                7
            },
            Deadline::from_secs(Some(5.0)),
            |run| run(),
            || Ok(()),
        );
        assert_eq!(out, Ok(Some(7)));
    }
}
