//! The admin client: the core's [`Admin`] with its per-item results carried as values (an
//! item's error is an [`ErrorInfo`], so one bad topic does not hide the others' outcomes); a
//! call throws only when it got nowhere. Client quotas are in [`quotas`].

mod groups;
mod quotas;
mod topics;

use std::collections::HashMap;
use std::sync::Arc;

use odradek::Admin;

use crate::config::{self, Role};
use crate::error::info_of;
use crate::spawn::on_runtime;
use crate::{ClientErrorListener, ErrorInfo, NativeError, TopicPartition};

pub use groups::*;
pub use quotas::*;
pub use topics::*;

/// An admin client (wrapped by the Kotlin `Admin`).
#[derive(Debug, uniffi::Object)]
pub struct NativeAdmin {
    admin: Arc<Admin>,
}

/// One partition's outcome.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct PartitionResult {
    /// The partition.
    pub partition: TopicPartition,
    /// Its error; `null` on success.
    pub error: Option<ErrorInfo>,
}

/// Which offset of a partition `list_offsets` looks up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum OffsetSpec {
    /// The log start offset.
    Earliest,
    /// The high watermark (with `read_committed`: the last stable offset).
    Latest,
    /// The record with the largest timestamp.
    MaxTimestamp,
    /// The first record whose timestamp is at or after `ms`.
    Timestamp {
        /// Timestamp in ms.
        ms: i64,
    },
}

impl OffsetSpec {
    fn to_core(self) -> odradek::admin::OffsetSpec {
        use odradek::admin::OffsetSpec as S;
        match self {
            OffsetSpec::Earliest => S::Earliest,
            OffsetSpec::Latest => S::Latest,
            OffsetSpec::MaxTimestamp => S::MaxTimestamp,
            OffsetSpec::Timestamp { ms } => S::Timestamp(ms),
        }
    }
}

/// An offset lookup.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct OffsetQuery {
    /// The partition.
    pub partition: TopicPartition,
    /// What to look up.
    pub spec: OffsetSpec,
}

/// What `list_offsets` found for one query.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ListedOffset {
    /// The partition.
    pub partition: TopicPartition,
    /// The offset; `null` when no record matches.
    pub offset: Option<i64>,
    /// The record's timestamp for timestamp lookups.
    pub timestamp: Option<i64>,
    /// The partition's error; `null` on success.
    pub error: Option<ErrorInfo>,
}

/// One broker.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Node {
    /// Node id.
    pub id: i32,
    /// Advertised host.
    pub host: String,
    /// Advertised port.
    pub port: i32,
    /// Rack, if configured.
    pub rack: Option<String>,
}

/// The cluster as `describe_cluster` reports it.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ClusterInfo {
    /// Cluster id.
    pub cluster_id: String,
    /// The controller's node id, when known.
    pub controller: Option<i32>,
    /// Brokers by ascending id.
    pub nodes: Vec<Node>,
}

pub(crate) fn partition_results(
    list: Vec<(odradek::TopicPartition, odradek::Result<()>)>,
) -> Vec<PartitionResult> {
    list.into_iter()
        .map(|(tp, r)| PartitionResult {
            partition: TopicPartition::from_core(&tp),
            error: r.err().map(|e| info_of(&e)),
        })
        .collect()
}

#[uniffi::export]
impl NativeAdmin {
    /// Creates an admin client from Kafka property names; nothing is connected yet.
    #[uniffi::constructor]
    pub fn new(
        config: HashMap<String, String>,
        error_listener: Option<Arc<dyn ClientErrorListener>>,
    ) -> Result<Arc<Self>, NativeError> {
        let (core, _) = config::for_role(Role::Admin, config)?;
        let handle = odradek_bindings::runtime::runtime()?;
        let admin = {
            let _enter = handle.enter();
            Admin::new(core)
        };
        if let Some(l) = error_listener {
            admin
                .cluster()
                .set_error_listener(odradek_bindings::client_errors::listener(move |e| {
                    l.on_error(ErrorInfo::from(&e))
                }));
        }
        Ok(Arc::new(NativeAdmin {
            admin: Arc::new(admin),
        }))
    }

    /// Offsets of partitions (`read_committed`: `Latest` is the last stable offset).
    pub async fn list_offsets(
        &self,
        queries: Vec<OffsetQuery>,
        read_committed: bool,
    ) -> Result<Vec<ListedOffset>, NativeError> {
        let admin = self.admin.clone();
        let list: Vec<_> = queries
            .iter()
            .map(|q| (q.partition.to_core(), q.spec.to_core()))
            .collect();
        let found =
            on_runtime(async move { admin.list_offsets_isolated(&list, read_committed).await })
                .await?
                .map_err(|e| NativeError::core(&e))?;
        Ok(found
            .into_iter()
            .map(|(tp, r)| {
                let partition = TopicPartition::from_core(&tp);
                match r {
                    Ok(o) => ListedOffset {
                        partition,
                        offset: o.map(|o| o.offset),
                        timestamp: o.and_then(|o| o.timestamp),
                        error: None,
                    },
                    Err(e) => ListedOffset {
                        partition,
                        offset: None,
                        timestamp: None,
                        error: Some(info_of(&e)),
                    },
                }
            })
            .collect())
    }

    /// The cluster id, controller and brokers.
    pub async fn describe_cluster(&self) -> Result<ClusterInfo, NativeError> {
        let admin = self.admin.clone();
        let c = on_runtime(async move { admin.describe_cluster().await })
            .await?
            .map_err(|e| NativeError::core(&e))?;
        Ok(ClusterInfo {
            cluster_id: c.cluster_id,
            controller: c.controller,
            nodes: c
                .brokers
                .into_iter()
                .map(|b| Node {
                    id: b.id,
                    host: b.host,
                    port: b.port,
                    rack: b.rack,
                })
                .collect(),
        })
    }

    /// Closes every connection.
    pub fn shutdown(&self) {
        self.admin.close();
    }
}
