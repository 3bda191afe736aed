//! Listeners, connections and background maintenance.
//!
//! Each connection is one task: it splits the byte stream into frames (the size limit is checked
//! before any buffer grows), handles requests one at a time (so responses leave in request order
//! even when a client pipelines), and flushes its writes only when no further complete request is
//! already buffered, so pipelined requests share system calls.

mod connection;
mod maintenance;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::broker::Broker;
use crate::config::BrokerConfig;
use crate::{Error, Result};

/// A started broker: its address, and the handle to stop it.
#[derive(Debug)]
pub struct RunningBroker {
    /// The address the first listener is bound to.
    pub local_addr: SocketAddr,
    /// Shared state.
    pub broker: Arc<Broker>,
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
        bound.push(listener);
    }
    let local_addr = bound[0].local_addr()?;
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
    let (shutdown, shutdown_rx) = watch::channel(false);
    let mut tasks = Vec::new();
    for listener in bound {
        tasks.push(tokio::spawn(accept_loop(
            listener,
            broker.clone(),
            shutdown_rx.clone(),
        )));
    }
    tasks.push(tokio::spawn(maintenance::run(broker.clone(), shutdown_rx)));
    Ok(RunningBroker {
        local_addr,
        broker,
        shutdown,
        tasks,
    })
}

async fn accept_loop(
    listener: TcpListener,
    broker: Arc<Broker>,
    mut shutdown: watch::Receiver<bool>,
) {
    let max_connections = broker.config.int("max.connections").max(1) as usize;
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
                let broker = broker.clone();
                let shutdown = shutdown.clone();
                connections.spawn(async move {
                    connection::serve(broker, stream, peer, shutdown).await;
                    drop(permit);
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    connections.shutdown().await;
}
