//! Shutting the shared runtime down at process exit, once every client is gone.
//!
//! Each producer, consumer and admin handle holds a [`Live`] token. The first one registers an
//! `atexit` handler; at exit, if no token is left (the application destroyed every client), the
//! handler stops the runtime (`odradek_bindings::runtime::shutdown`): the tasks still winding
//! down after a destroy (connections closing) are dropped and the runtime's threads joined, so
//! the process does not exit with library threads running and owning memory (valgrind called
//! that memory "possibly lost"). With a client still alive at exit nothing is stopped: the
//! application may still be using it from another thread, and the runtime stays as it was.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;
use std::time::Duration;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static AT_EXIT: Once = Once::new();

/// How long the exit handler waits for the runtime's tasks and threads.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(2);

extern "C" fn shutdown_at_exit() {
    // A panic must not unwind into libc's exit path.
    let _ = std::panic::catch_unwind(|| {
        if LIVE.load(Ordering::Acquire) == 0 {
            odradek_bindings::runtime::shutdown(SHUTDOWN_TIMEOUT);
        }
    });
}

/// Counts one live client handle for as long as it exists.
#[derive(Debug)]
pub(crate) struct Live(());

impl Live {
    /// A token for a client just created; registers the exit handler on first use.
    pub(crate) fn new() -> Live {
        AT_EXIT.call_once(|| {
            // SAFETY: registers a function with no preconditions; libc calls it at exit().
            unsafe {
                libc::atexit(shutdown_at_exit);
            }
        });
        LIVE.fetch_add(1, Ordering::AcqRel);
        Live(())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::AcqRel);
    }
}
