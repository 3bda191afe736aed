//! Running core work on the bindings' shared runtime from a foreign `suspend` call.
//!
//! uniffi polls an exported future on the foreign caller's thread, outside any tokio runtime,
//! while the core's futures need one (timers, I/O). So an exported `async fn` spawns its work
//! on the shared runtime and awaits the task's handle, which can be polled from anywhere. If
//! the foreign coroutine is cancelled, the handle is dropped and the task finishes on its own:
//! nothing the core was doing (a commit, a fetch) is cut in half.

use std::future::Future;

use odradek_bindings::{codes, runtime, ClientError};

use crate::NativeError;

/// Runs `fut` on the shared runtime and returns its output.
pub(crate) async fn on_runtime<F>(fut: F) -> Result<F::Output, NativeError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handle = runtime::runtime()?;
    handle.spawn(fut).await.map_err(|e| {
        NativeError::from(ClientError::new(
            codes::FAIL,
            Some(format!("the client task failed: {e}")),
        ))
    })
}
