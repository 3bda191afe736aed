//! Connections from this broker to the other brokers' inter-broker listeners, for the requests
//! brokers send each other besides replica fetches (the transaction coordinator's
//! WriteTxnMarkers, a partition leader's transaction verification). One connection per broker,
//! made on first use and dropped when a request on it fails; addresses come from the image.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::protocol::Request;
use odradek::net::{ConnectParams, Connection};
use odradek::protocol::Throttled;
use odradek::security::SecurityConfig;
use odradek::ErrorCode;
use tokio::sync::Mutex;

use super::image::SharedImage;
use crate::{Error, Result};

/// This broker's connections to its peers.
#[derive(Debug)]
pub struct BrokerLinks {
    client_id: String,
    listener: String,
    security: SecurityConfig,
    image: SharedImage,
    timeout: Duration,
    connections: Mutex<HashMap<i32, Arc<Connection>>>,
}

impl BrokerLinks {
    /// Links of broker `node_id` to the `listener` endpoints the image lists, with that
    /// listener's `security`; `timeout` bounds connecting and each request.
    pub fn new(
        node_id: i32,
        listener: &str,
        security: SecurityConfig,
        image: SharedImage,
        timeout: Duration,
    ) -> Self {
        BrokerLinks {
            client_id: format!("odradek-broker-{node_id}"),
            listener: listener.to_string(),
            security,
            image,
            timeout,
            connections: Mutex::new(HashMap::new()),
        }
    }

    /// The `host:port` of `broker`'s inter-broker listener.
    fn address(&self, broker: i32) -> Option<String> {
        self.image.read(|i| {
            let b = i.brokers.get(&broker)?;
            let e = b
                .endpoints
                .iter()
                .find(|e| e.name.eq_ignore_ascii_case(&self.listener))
                .or_else(|| b.endpoints.first())?;
            Some(format!("{}:{}", e.host, e.port))
        })
    }

    async fn connection(&self, broker: i32) -> Result<Arc<Connection>> {
        if let Some(c) = self.connections.lock().await.get(&broker) {
            return Ok(c.clone());
        }
        let address = self.address(broker).ok_or_else(|| {
            Error::kafka(
                ErrorCode::BrokerNotAvailable,
                format!("broker {broker} has no {} endpoint", self.listener),
            )
        })?;
        let security = &self.security;
        let c = Connection::connect(
            &address,
            ConnectParams {
                client_id: &self.client_id,
                setup_timeout: self.timeout,
                request_timeout: self.timeout,
                max_in_flight: 16,
                max_response_size: 16 << 20,
                security,
                node_id: broker,
                on_throttle: None,
                on_request: None,
                socket: Default::default(),
            },
        )
        .await?;
        self.connections.lock().await.insert(broker, c.clone());
        Ok(c)
    }

    /// Sends `request` at `version` to `broker` and waits for its answer; a failed request
    /// drops the connection (the next one reconnects).
    pub async fn call<R>(&self, broker: i32, request: &R, version: i16) -> Result<R::Response>
    where
        R: Request<Response: Throttled>,
    {
        let c = self.connection(broker).await?;
        let answer = c.send_versioned(request, version).await;
        if answer.is_err() {
            let mut connections = self.connections.lock().await;
            if connections.get(&broker).is_some_and(|x| Arc::ptr_eq(x, &c)) {
                connections.remove(&broker);
            }
        }
        Ok(answer?)
    }
}
