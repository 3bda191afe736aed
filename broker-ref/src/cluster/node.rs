//! One node of a cluster: its settings, its quorum member and the metadata image.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::image::SharedImage;
use super::metadata_log::MetadataLogStore;
use super::peers::Peers;
use super::quorum_driver::{self, QuorumHandle};
use super::settings::ClusterSettings;
use crate::Result;

/// Bytes of metadata records between two snapshots of the image (Kafka's
/// `metadata.log.max.record.bytes.between.snapshots` default is 20 MiB).
const SNAPSHOT_EVERY: u64 = 20 << 20;

/// A running cluster node.
#[derive(Debug)]
pub struct ClusterNode {
    /// Its settings.
    pub settings: ClusterSettings,
    /// Its member of the metadata quorum (a voter, or an observer for a broker-only node).
    pub quorum: QuorumHandle,
    /// The metadata every committed record built.
    pub image: SharedImage,
    /// Connections to the controllers.
    pub peers: Arc<Peers>,
    /// Wall-clock ms when the quorum's clock started (its times are relative to it).
    pub started_ms: i64,
}

impl ClusterNode {
    /// Opens the metadata log under `data_dir` and starts the quorum member, until `shutdown`.
    pub fn start(
        settings: ClusterSettings,
        data_dir: &Path,
        shutdown: watch::Receiver<bool>,
    ) -> Result<(Arc<ClusterNode>, JoinHandle<()>)> {
        let (store, persisted) = MetadataLogStore::open(data_dir)?;
        let peers = Arc::new(Peers::new(
            &settings.cluster_id,
            settings.node_id,
            &settings.voters,
            Duration::from_millis(settings.quorum.request_timeout_ms),
        ));
        let image = SharedImage::default();
        let started_ms = crate::clock::now_ms();
        let (quorum, task) = quorum_driver::start(
            settings.quorum.clone(),
            store,
            persisted,
            image.clone(),
            peers.clone(),
            SNAPSHOT_EVERY,
            shutdown,
        )?;
        Ok((
            Arc::new(ClusterNode {
                settings,
                quorum,
                image,
                peers,
                started_ms,
            }),
            task,
        ))
    }
}
