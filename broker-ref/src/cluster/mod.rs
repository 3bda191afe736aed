//! Cluster mode: the metadata quorum (KRaft's protocol over `odradek-quorum`), the metadata
//! image it builds, and the node that runs them.
//!
//! A node started with `controller.quorum.voters` is one node of a cluster: a controller
//! (voter of the quorum) and/or a broker. The quorum's log is `__cluster_metadata`
//! (`metadata_log`), replicated with Kafka's Vote / BeginQuorumEpoch / EndQuorumEpoch / Fetch /
//! FetchSnapshot (`quorum_wire`, `peers`) by one task per node (`quorum_driver`); its
//! committed records (`records`) build the [`image::MetadataImage`] every node holds.

pub mod controller;
pub mod entry_codec;
pub mod fetcher;
pub mod image;
pub mod lifecycle;
pub mod links;
pub mod metadata_log;
mod node;
pub mod peers;
pub mod placement;
pub mod quorum_driver;
pub mod quorum_wire;
pub mod reassignment;
pub mod records;
pub mod replicas;
pub mod settings;

pub use node::{ClusterNode, NodeDeps};
pub use settings::ClusterSettings;
