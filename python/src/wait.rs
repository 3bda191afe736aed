//! Blocking with the GIL released, in slices, checking for Ctrl-C (`PyErr_CheckSignals`)
//! between slices, so a signal interrupts any blocking call within ~100 ms.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;

use odradek_bindings::runtime::{self, Deadline};
use pyo3::prelude::*;
use tokio::runtime::Handle;

/// Runs `fut` until it completes or `deadline` passes (`Ok(None)`), with the GIL released while
/// it waits. A pending signal handler's exception (KeyboardInterrupt) is raised.
pub fn wait_future<F>(
    py: Python<'_>,
    handle: &Handle,
    fut: F,
    deadline: Deadline,
) -> PyResult<Option<F::Output>>
where
    F: Future + Send,
    F::Output: Send,
{
    let mut fut = pin!(fut);
    if let Poll::Ready(v) = runtime::poll_once(handle, fut.as_mut()) {
        return Ok(Some(v));
    }
    runtime::interruptible(
        deadline,
        |slice| {
            let f = fut.as_mut();
            py.detach(move || runtime::block_on_for(handle, f, slice))
        },
        || py.check_signals(),
    )
}

/// A deadline from a Python timeout in seconds (`None` or negative: forever).
pub fn deadline(timeout: Option<f64>) -> Deadline {
    Deadline::from_secs(timeout)
}
