//! The admin client handle: its cluster view and the routing state its calls share. The calls
//! themselves are in the sibling modules, one per API family, and the public methods in
//! `admin/mod.rs`.

use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;

use crate::cluster::Cluster;
use crate::config::ClientConfig;
use crate::Result;

/// An asynchronous Kafka admin client. Every method takes `&self`; share it behind an `Arc`.
#[derive(Debug)]
pub struct Admin {
    pub(super) cluster: Arc<Cluster>,
    /// Set after a retriable failure: the next routing step refreshes metadata.
    pub(super) stale: AtomicBool,
    /// Bumped on failures so "any broker" requests move on to another broker.
    pub(super) rotation: AtomicUsize,
}

impl Admin {
    /// An admin client; nothing is connected until the first call. `allow.auto.create.topics`
    /// is forced off: looking a topic up must never create it.
    pub fn new(mut config: ClientConfig) -> Admin {
        config.allow_auto_create_topics = false;
        Admin {
            cluster: Cluster::new(config),
            stale: AtomicBool::new(true),
            rotation: AtomicUsize::new(0),
        }
    }

    /// Builds an admin client from Kafka property names.
    pub fn from_map<K: AsRef<str>, V: AsRef<str>>(
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Admin> {
        Ok(Admin::new(ClientConfig::from_map(entries)?))
    }

    /// The cluster view (metadata, connections).
    pub fn cluster(&self) -> &Arc<Cluster> {
        &self.cluster
    }

    /// Closes every connection.
    pub fn close(&self) {
        self.cluster.close();
    }
}
