//! A broker's life with the controller: it registers (BrokerRegistration) once the quorum knows
//! a leader, then heartbeats (BrokerHeartbeat) every `broker.heartbeat.interval.ms` (faster
//! while fenced, so it is unfenced as soon as it caught up), registers again when its epoch
//! went stale, and on a controlled shutdown heartbeats `want_shut_down` until the controller
//! has moved its leadership away.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::{
    broker_registration_request, BrokerHeartbeatRequest, BrokerId, BrokerRegistrationRequest,
};
use kafka_protocol::protocol::StrBytes;
use odradek::ErrorCode;
use tokio::sync::watch;

use super::image::SharedImage;
use super::peers::Peers;
use super::quorum_driver::QuorumHandle;
use super::records::EndpointRecord;

/// What the broker knows of its registration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LifecycleState {
    /// Its broker epoch, once registered.
    pub epoch: Option<i64>,
    /// Fenced: leads and follows nothing.
    pub fenced: bool,
    /// Caught up with the metadata up to its registration.
    pub caught_up: bool,
    /// The controller moved everything away after a shutdown request.
    pub should_shut_down: bool,
}

/// Everything the lifecycle task needs.
#[derive(Debug, Clone)]
pub struct Lifecycle {
    /// This broker.
    pub node_id: i32,
    /// The cluster id.
    pub cluster_id: String,
    /// Advertised client listeners.
    pub endpoints: Vec<EndpointRecord>,
    /// `broker.rack`.
    pub rack: Option<String>,
    /// `broker.heartbeat.interval.ms`.
    pub heartbeat_interval: Duration,
    /// The quorum (for the active controller's id).
    pub quorum: QuorumHandle,
    /// The metadata image (for the offset it reached).
    pub image: SharedImage,
    /// Connections to controllers.
    pub peers: Arc<Peers>,
}

impl Lifecycle {
    /// Runs until `shutdown`; a `want_shutdown` of true first shuts down in a controlled way
    /// (bounded by 30 s). Its state is published on `state`.
    pub async fn run(
        self,
        state: watch::Sender<LifecycleState>,
        mut want_shutdown: watch::Receiver<bool>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let incarnation = uuid::Uuid::new_v4();
        let mut epoch: Option<i64> = None;
        let mut shutdown_started: Option<tokio::time::Instant> = None;
        // Failed steps in a row during a controlled shutdown: without a reachable controller
        // (the others stopped too, the quorum is gone) there is nobody to wait for.
        let mut failing_while_stopping = 0u32;
        loop {
            let stopping = *want_shutdown.borrow();
            if stopping && shutdown_started.is_none() {
                shutdown_started = Some(tokio::time::Instant::now());
            }
            let fenced = state.borrow().fenced;
            let pause = match self.step(&mut epoch, incarnation, stopping, &state).await {
                Ok(()) if fenced || stopping => {
                    failing_while_stopping = 0;
                    Duration::from_millis(100)
                }
                Ok(()) => self.heartbeat_interval,
                Err(e) => {
                    tracing::debug!(error = %e, "broker registration or heartbeat failed");
                    if stopping {
                        failing_while_stopping += 1;
                    }
                    Duration::from_millis(100)
                }
            };
            if state.borrow().should_shut_down
                || failing_while_stopping >= 30
                || shutdown_started.is_some_and(|t| t.elapsed() > Duration::from_secs(30))
            {
                if stopping {
                    tracing::info!(node = self.node_id, "controlled shutdown complete");
                }
                state.send_modify(|s| s.should_shut_down = true);
            }
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = want_shutdown.changed() => {}
                _ = tokio::time::sleep(pause) => {}
            }
        }
    }

    async fn step(
        &self,
        epoch: &mut Option<i64>,
        incarnation: uuid::Uuid,
        stopping: bool,
        state: &watch::Sender<LifecycleState>,
    ) -> crate::Result<()> {
        let Some(controller) = self.quorum.status().leader else {
            return Err(crate::Error::kafka(
                ErrorCode::NotController,
                "no active controller known yet",
            ));
        };
        let Some(current) = *epoch else {
            let request = BrokerRegistrationRequest::default()
                .with_broker_id(BrokerId(self.node_id))
                .with_cluster_id(StrBytes::from_string(self.cluster_id.clone()))
                .with_incarnation_id(incarnation)
                .with_listeners(
                    self.endpoints
                        .iter()
                        .map(|e| {
                            broker_registration_request::Listener::default()
                                .with_name(StrBytes::from_string(e.name.clone()))
                                .with_host(StrBytes::from_string(e.host.clone()))
                                .with_port(e.port)
                                .with_security_protocol(e.security_protocol)
                        })
                        .collect(),
                )
                .with_rack(self.rack.clone().map(StrBytes::from_string));
            let r = self.peers.call(controller, &request).await?;
            ErrorCode::from_code(r.error_code).into_result()?;
            *epoch = Some(r.broker_epoch);
            tracing::info!(
                node = self.node_id,
                epoch = r.broker_epoch,
                "broker registered"
            );
            state.send_modify(|s| {
                s.epoch = Some(r.broker_epoch);
                s.fenced = true;
            });
            return Ok(());
        };
        let offset = self.image.read(|i| i.offset);
        let request = BrokerHeartbeatRequest::default()
            .with_broker_id(BrokerId(self.node_id))
            .with_broker_epoch(current)
            .with_current_metadata_offset(offset)
            .with_want_fence(false)
            .with_want_shut_down(stopping);
        let r = self.peers.call(controller, &request).await?;
        match ErrorCode::from_code(r.error_code) {
            ErrorCode::NoError => {}
            ErrorCode::StaleBrokerEpoch => {
                *epoch = None;
                state.send_modify(|s| s.epoch = None);
                return Err(ErrorCode::StaleBrokerEpoch.into());
            }
            other => return Err(other.into()),
        }
        state.send_if_modified(|s| {
            let next = LifecycleState {
                epoch: Some(current),
                fenced: r.is_fenced,
                caught_up: r.is_caught_up,
                should_shut_down: s.should_shut_down || r.should_shut_down,
            };
            let changed = *s != next;
            *s = next;
            changed
        });
        Ok(())
    }
}
