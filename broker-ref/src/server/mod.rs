//! Listeners, connections, request dispatch, the interception point and background
//! maintenance.
//!
//! Each connection is one task: it builds its [`ConnectionContext`](crate::handlers::ConnectionContext)
//! once, splits the byte stream into frames (the size limit is checked before any buffer grows),
//! and hands each frame to [`dispatch`], which decodes it, adds the header's fields to make the
//! request's [`RequestContext`](crate::handlers::RequestContext), asks the [`Interceptor`] (one
//! atomic load when no test registered anything) and calls the handler. Requests are handled one
//! at a time, so responses leave in request order even when a client pipelines, and writes are
//! flushed only when no further complete request is already buffered, so pipelined requests
//! share system calls.

mod chunked;
mod connection;
mod dispatch;
pub mod intercept;
pub mod items;
mod maintenance;
pub mod view;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::broker::Broker;
use crate::config::BrokerConfig;
use crate::{Error, Result};
use connection::Shared;

pub use dispatch::{dispatch, dispatch_with, Reply};
pub use intercept::{Action, Interceptor, LoggedRequest, Rule, RuleId, Verdict};
pub use view::ClusterView;

/// A started broker: its address, and the handle to stop it.
#[derive(Debug)]
pub struct RunningBroker {
    /// The address the first listener is bound to.
    pub local_addr: SocketAddr,
    /// Shared state.
    pub broker: Arc<Broker>,
    /// The interception point every connection consults: tests inject errors, delays, dropped
    /// requests and closed connections per API key, and read the request log.
    pub interceptor: Arc<Interceptor>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl RunningBroker {
    /// Stops accepting, closes connections, flushes every log and writes checkpoints.
    pub async fn shutdown(self) -> Result<()> {
        let _ = self.shutdown.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
        self.broker.shutdown()
    }
}

/// Binds the listeners, recovers the data directory and starts serving.
pub async fn start(config: BrokerConfig) -> Result<RunningBroker> {
    let listeners = config.listeners()?;
    let mut bound = Vec::with_capacity(listeners.len());
    for l in &listeners {
        let host = if l.host.is_empty() {
            "0.0.0.0"
        } else {
            l.host.as_str()
        };
        let listener = TcpListener::bind((host, l.port)).await.map_err(|e| {
            Error::config("listeners", format!("cannot bind {host}:{}: {e}", l.port))
        })?;
        bound.push((Arc::<str>::from(l.name.as_str()), listener));
    }
    let local_addr = bound
        .first()
        .ok_or_else(|| Error::config("listeners", "no listener configured"))?
        .1
        .local_addr()?;
    let advertised = config.advertised_listeners()?;
    let adv = &advertised[0];
    let advertised_host = if adv.host.is_empty() || adv.host == "0.0.0.0" {
        local_addr.ip().to_string()
    } else {
        adv.host.clone()
    };
    // A port-0 listener advertises the port it actually got.
    let advertised_port = if adv.port == 0 {
        local_addr.port()
    } else {
        adv.port
    };
    let broker = Broker::open(config, advertised_host, advertised_port)?;
    let interceptor = Arc::new(Interceptor::new());
    let shared = Shared {
        broker: broker.clone(),
        interceptor: interceptor.clone(),
        view: None,
    };
    let (shutdown, shutdown_rx) = watch::channel(false);
    let mut tasks = Vec::new();
    for (name, listener) in bound {
        tasks.push(tokio::spawn(accept_loop(
            name,
            listener,
            shared.clone(),
            shutdown_rx.clone(),
        )));
    }
    tasks.push(tokio::spawn(maintenance::run(broker.clone(), shutdown_rx)));
    Ok(RunningBroker {
        local_addr,
        broker,
        interceptor,
        shutdown,
        tasks,
    })
}

/// Serves one accepted connection until it closes or `shutdown` turns true: the building block
/// of listeners other than [`start`]'s (the in-process test cluster's, each with its
/// [`ClusterView`]).
pub async fn serve_connection(
    broker: Arc<Broker>,
    interceptor: Arc<Interceptor>,
    view: Option<Arc<dyn ClusterView>>,
    listener: Arc<str>,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    shutdown: watch::Receiver<bool>,
) {
    let shared = Shared {
        broker,
        interceptor,
        view,
    };
    connection::serve(shared, listener, stream, peer, shutdown).await;
}

/// Starts the broker's background maintenance (retention, timed flushes, the log cleaner,
/// transaction timeouts) until `shutdown` turns true; [`start`] does this itself.
pub fn spawn_maintenance(broker: Arc<Broker>, shutdown: watch::Receiver<bool>) -> JoinHandle<()> {
    tokio::spawn(maintenance::run(broker, shutdown))
}

async fn accept_loop(
    name: Arc<str>,
    listener: TcpListener,
    shared: Shared,
    mut shutdown: watch::Receiver<bool>,
) {
    let max_connections = shared.broker.config.int("max.connections").max(1) as usize;
    let permits = Arc::new(tokio::sync::Semaphore::new(max_connections));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        continue;
                    }
                };
                let Ok(permit) = permits.clone().try_acquire_owned() else {
                    tracing::warn!(%peer, "max.connections reached, closing new connection");
                    continue;
                };
                let (shared, name) = (shared.clone(), name.clone());
                let shutdown = shutdown.clone();
                connections.spawn(async move {
                    connection::serve(shared, name, stream, peer, shutdown).await;
                    drop(permit);
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    connections.shutdown().await;
}
