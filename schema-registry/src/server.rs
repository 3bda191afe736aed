//! Starting and stopping the registry: open the store (create, replay, tail `_schemas`), bind
//! the listener, serve the REST API until shut down.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::error::{Error, Result};
use crate::registry::Registry;
use crate::routes::{router, App};
use crate::store::{Store, StoreConfig};

/// Default largest request body (Confluent has no documented limit; 16 MiB holds any schema).
pub const DEFAULT_MAX_BODY: usize = 16 << 20;

/// How to run a registry.
#[derive(Debug, Clone)]
pub struct RegistryConfig {
    /// `host:port` to listen on (port 0: any free port).
    pub listen: String,
    /// The Kafka store.
    pub store: StoreConfig,
    /// Basic-auth users; empty turns authentication off.
    pub users: Vec<(String, String)>,
    /// Largest request body.
    pub max_body: usize,
}

impl RegistryConfig {
    /// A registry on `listen` storing in the cluster at `bootstrap`.
    pub fn new(listen: impl Into<String>, bootstrap: impl Into<String>) -> RegistryConfig {
        RegistryConfig {
            listen: listen.into(),
            store: StoreConfig::new(bootstrap),
            users: Vec::new(),
            max_body: DEFAULT_MAX_BODY,
        }
    }
}

/// A running registry.
#[derive(Debug)]
pub struct RunningRegistry {
    /// The bound address.
    pub local_addr: SocketAddr,
    /// The registry (for in-process use).
    pub registry: Arc<Registry>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl RunningRegistry {
    /// `http://host:port`.
    pub fn url(&self) -> String {
        format!("http://{}", self.local_addr)
    }

    /// Stops serving (requests in flight finish) and closes the store's clients.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
        self.registry.store().close().await;
    }
}

/// Opens the store and starts serving.
pub async fn start(config: RegistryConfig) -> Result<RunningRegistry> {
    let listener = TcpListener::bind(&config.listen)
        .await
        .map_err(|e| Error::Store(format!("cannot listen on {}: {e}", config.listen)))?;
    let local_addr = listener
        .local_addr()
        .map_err(|e| Error::Store(format!("listener address: {e}")))?;
    let store = Store::open(config.store.clone()).await?;
    let registry = Arc::new(Registry::new(store));
    let app = Arc::new(App {
        registry: registry.clone(),
        users: config.users.clone(),
        max_body: config.max_body,
    });
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let serve = axum::serve(listener, router(app)).with_graceful_shutdown(async {
            let _ = stopped.await;
        });
        if let Err(e) = serve.await {
            tracing::error!(error = %e, "schema registry server stopped");
        }
    });
    Ok(RunningRegistry {
        local_addr,
        registry,
        stop: Some(stop),
        task,
    })
}

/// Parses `user:password`.
pub fn parse_user(s: &str) -> Option<(String, String)> {
    let (u, p) = s.split_once(':')?;
    Some((u.to_string(), p.to_string()))
}
