//! One broker of the test cluster as the network sees it: a listener on a fixed loopback port
//! and the connections it accepted, which a test can close (all, or one client's), and which
//! can go down (listener closed, connections cut: clients get "connection refused") and come
//! back up on the same port.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::broker::Broker;
use crate::security::ListenerSecurity;
use crate::server::accept_backoff::AcceptBackoff;
use crate::server::connection_limits::ConnectionLimits;
use crate::server::{serve_connection, ClusterView, Interceptor};
use crate::{Error, Result};

#[derive(Debug)]
struct Connection {
    client_id: Option<String>,
    task: JoinHandle<()>,
}

/// The connections one broker accepted, with the client id each last sent.
#[derive(Debug, Default)]
pub(crate) struct Connections {
    open: Mutex<HashMap<SocketAddr, Connection>>,
}

impl Connections {
    fn lock(&self) -> MutexGuard<'_, HashMap<SocketAddr, Connection>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn add(&self, peer: SocketAddr, task: JoinHandle<()>) {
        let mut open = self.lock();
        open.retain(|_, c| !c.task.is_finished());
        open.insert(
            peer,
            Connection {
                client_id: None,
                task,
            },
        );
    }

    /// Remembers the client id a connection's request carried.
    pub(crate) fn note_client_id(&self, peer: SocketAddr, client_id: &str) {
        let mut open = self.lock();
        if let Some(c) = open.get_mut(&peer) {
            if c.client_id.as_deref() != Some(client_id) {
                c.client_id = Some(client_id.to_string());
            }
        }
    }

    /// Takes out the open connections (of one client id, or all).
    fn take(&self, client_id: Option<&str>) -> Vec<JoinHandle<()>> {
        let mut open = self.lock();
        let peers: Vec<SocketAddr> = open
            .iter()
            .filter(|(_, c)| !c.task.is_finished())
            .filter(|(_, c)| client_id.is_none_or(|id| c.client_id.as_deref() == Some(id)))
            .map(|(p, _)| *p)
            .collect();
        let taken = peers
            .iter()
            .filter_map(|p| open.remove(p))
            .map(|c| c.task)
            .collect();
        open.retain(|_, c| !c.task.is_finished());
        taken
    }

    /// How many connections are open.
    pub(crate) fn count(&self) -> usize {
        self.lock()
            .values()
            .filter(|c| !c.task.is_finished())
            .count()
    }
}

/// Aborts the tasks and waits until they are gone (their sockets closed).
async fn abort_all(tasks: Vec<JoinHandle<()>>) -> usize {
    let n = tasks.len();
    for t in &tasks {
        t.abort();
    }
    for t in tasks {
        let _ = t.await;
    }
    n
}

/// What every connection task of a broker needs.
#[derive(Debug, Clone)]
pub(crate) struct Serving {
    pub(crate) broker: Arc<Broker>,
    pub(crate) interceptor: Arc<Interceptor>,
    pub(crate) view: Arc<dyn ClusterView>,
    pub(crate) connections: Arc<Connections>,
    /// This node's `max.connections` / `max.connections.per.ip`.
    pub(crate) limits: Arc<ConnectionLimits>,
    pub(crate) shutdown: watch::Receiver<bool>,
}

/// One broker's listener.
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) id: i32,
    pub(crate) addr: SocketAddr,
    serving: Serving,
    accept: Mutex<Option<JoinHandle<()>>>,
}

impl Node {
    /// A broker serving on `listener` (already bound: its address is the broker's for good).
    pub(crate) fn start(id: i32, listener: TcpListener, serving: Serving) -> Result<Node> {
        let addr = listener.local_addr()?;
        let node = Node {
            id,
            addr,
            serving,
            accept: Mutex::new(None),
        };
        node.spawn_accept(listener);
        Ok(node)
    }

    fn accept_slot(&self) -> MutexGuard<'_, Option<JoinHandle<()>>> {
        self.accept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn spawn_accept(&self, listener: TcpListener) {
        let serving = self.serving.clone();
        let task = tokio::spawn(accept_loop(listener, serving));
        *self.accept_slot() = Some(task);
    }

    /// Whether the listener is accepting.
    pub(crate) fn is_listening(&self) -> bool {
        self.accept_slot()
            .as_ref()
            .is_some_and(|t| !t.is_finished())
    }

    /// Closes the listener and every connection; returns once the port refuses connections.
    pub(crate) async fn down(&self) -> usize {
        let accept = self.accept_slot().take();
        if let Some(t) = accept {
            abort_all(vec![t]).await;
        }
        self.close_connections(None).await
    }

    /// Listens again on the same port.
    pub(crate) async fn up(&self) -> Result<()> {
        if self.is_listening() {
            return Ok(());
        }
        let listener = TcpListener::bind(self.addr).await.map_err(|e| {
            Error::config(
                "listeners",
                format!(
                    "broker {} cannot listen on {} again: {e}",
                    self.id, self.addr
                ),
            )
        })?;
        self.spawn_accept(listener);
        Ok(())
    }

    /// Closes the open connections (of one client id, or all); returns how many.
    pub(crate) async fn close_connections(&self, client_id: Option<&str>) -> usize {
        abort_all(self.serving.connections.take(client_id)).await
    }

    /// How many connections are open.
    pub(crate) fn connection_count(&self) -> usize {
        self.serving.connections.count()
    }
}

async fn accept_loop(listener: TcpListener, serving: Serving) {
    let name = match ListenerSecurity::plaintext("PLAINTEXT") {
        Ok(security) => Arc::new(security),
        Err(e) => {
            tracing::error!(error = %e, "test cluster: no listener");
            return;
        }
    };
    let mut backoff = AcceptBackoff::default();
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(a) => {
                backoff.succeeded();
                a
            }
            Err(e) => {
                tokio::time::sleep(backoff.failed(&e)).await;
                continue;
            }
        };
        let Some((stream, permit)) =
            crate::server::admit_connection(&serving.broker, &serving.limits, stream, peer)
        else {
            continue;
        };
        let s = serving.clone();
        let name = name.clone();
        // Registered before it serves anything, so a client id is never missed.
        let (go, registered) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            if registered.await.is_ok() {
                let view = Some(s.view);
                serve_connection(
                    s.broker,
                    s.interceptor,
                    view,
                    name,
                    stream,
                    peer,
                    s.shutdown,
                )
                .await;
            }
            drop(permit);
        });
        serving.connections.add(peer, task);
        let _ = go.send(());
    }
}
