//! Running core futures for JavaScript: every Promise-returning call spawns its work on the
//! shared `odradek-bindings` runtime (where the clients' background tasks live) and hands napi
//! only the join handle to await, so no core I/O is driven by napi's own executor.

use std::future::Future;

use napi::bindgen_prelude::{PromiseRaw, ToNapiValue};
use napi::Env;
use tokio::runtime::Handle;

use crate::error;

/// The shared runtime's handle.
pub fn handle() -> napi::Result<Handle> {
    odradek_bindings::runtime::runtime().map_err(|e| error::from_client(&e))
}

/// Runs `fut` on the shared runtime and returns a Promise of its output.
pub fn promise<'env, T, F>(env: &'env Env, fut: F) -> napi::Result<PromiseRaw<'env, T>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = napi::Result<T>> + Send + 'static,
{
    let join = handle()?.spawn(fut);
    env.spawn_future(async move {
        match join.await {
            Ok(out) => out,
            Err(e) => Err(error::encode(
                odradek_bindings::codes::FAIL,
                false,
                &format!("internal task failed: {e}"),
            )),
        }
    })
}

/// Runs a synchronous constructor inside the runtime's context (the core spawns its background
/// tasks there).
pub fn enter<T>(f: impl FnOnce() -> T) -> napi::Result<T> {
    let h = handle()?;
    let _guard = h.enter();
    Ok(f())
}
