//! Topic admin: create, delete, add partitions, list, describe.

use super::NativeAdmin;
use crate::error::info_of;
use crate::spawn::on_runtime;
use crate::{ErrorInfo, NativeError};

/// A topic to create.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct NewTopic {
    /// Name.
    pub name: String,
    /// Partition count; `null`: the broker's `num.partitions`.
    pub partitions: Option<i32>,
    /// Replication factor; `null`: the broker's `default.replication.factor`.
    pub replication_factor: Option<i16>,
    /// Topic-level configs (`retention.ms`, `cleanup.policy`, ...).
    pub configs: std::collections::HashMap<String, String>,
}

/// One topic's outcome.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct TopicResult {
    /// The topic.
    pub name: String,
    /// Its error (e.g. TOPIC_ALREADY_EXISTS); `null` on success.
    pub error: Option<ErrorInfo>,
}

/// A topic as `list_topics` reports it.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct TopicListing {
    /// Name.
    pub name: String,
    /// Whether it is internal (`__consumer_offsets`, ...).
    pub internal: bool,
    /// Partition count.
    pub partitions: u32,
}

/// One partition of a described topic.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct PartitionInfo {
    /// Partition index.
    pub partition: i32,
    /// Leader node id; `null` without a leader.
    pub leader: Option<i32>,
    /// Replica node ids.
    pub replicas: Vec<i32>,
    /// In-sync replica node ids.
    pub isr: Vec<i32>,
}

/// A described topic, or why it could not be.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct TopicDescription {
    /// Name.
    pub name: String,
    /// Whether it is internal.
    pub internal: bool,
    /// Partitions in index order (empty on error).
    pub partitions: Vec<PartitionInfo>,
    /// The topic's error (UNKNOWN_TOPIC_OR_PARTITION, ...); `null` on success.
    pub error: Option<ErrorInfo>,
}

fn results(list: Vec<(String, odradek::Result<impl Sized>)>) -> Vec<TopicResult> {
    list.into_iter()
        .map(|(name, r)| TopicResult {
            name,
            error: r.err().map(|e| info_of(&e)),
        })
        .collect()
}

#[uniffi::export]
impl NativeAdmin {
    /// Creates topics (with `validate_only`, only checks them).
    pub async fn create_topics(
        &self,
        topics: Vec<NewTopic>,
        validate_only: bool,
    ) -> Result<Vec<TopicResult>, NativeError> {
        let admin = self.admin.clone();
        let list: Vec<odradek::admin::NewTopic> = topics
            .into_iter()
            .map(|t| odradek::admin::NewTopic {
                name: t.name,
                partitions: t.partitions,
                replication_factor: t.replication_factor,
                configs: t.configs.into_iter().collect(),
            })
            .collect();
        let done = on_runtime(async move { admin.create_topics(&list, validate_only).await })
            .await?
            .map_err(|e| NativeError::core(&e))?;
        Ok(results(done))
    }

    /// Deletes topics.
    pub async fn delete_topics(&self, names: Vec<String>) -> Result<Vec<TopicResult>, NativeError> {
        let admin = self.admin.clone();
        let done = on_runtime(async move {
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            admin.delete_topics(&refs).await
        })
        .await?
        .map_err(|e| NativeError::core(&e))?;
        Ok(results(done))
    }

    /// Raises topics' partition counts to the given totals.
    pub async fn create_partitions(
        &self,
        totals: std::collections::HashMap<String, i32>,
    ) -> Result<Vec<TopicResult>, NativeError> {
        let admin = self.admin.clone();
        let done = on_runtime(async move {
            let refs: Vec<(&str, i32)> = totals.iter().map(|(t, n)| (t.as_str(), *n)).collect();
            admin.create_partitions(&refs, false).await
        })
        .await?
        .map_err(|e| NativeError::core(&e))?;
        Ok(results(done))
    }

    /// Every topic, internal ones included, by name.
    pub async fn list_topics(&self) -> Result<Vec<TopicListing>, NativeError> {
        let admin = self.admin.clone();
        let listed = on_runtime(async move { admin.list_topics().await })
            .await?
            .map_err(|e| NativeError::core(&e))?;
        Ok(listed
            .into_iter()
            .map(|t| TopicListing {
                name: t.name,
                internal: t.internal,
                partitions: u32::try_from(t.partitions).unwrap_or(u32::MAX),
            })
            .collect())
    }

    /// Partitions, leaders and replicas of each topic.
    pub async fn describe_topics(
        &self,
        names: Vec<String>,
    ) -> Result<Vec<TopicDescription>, NativeError> {
        let admin = self.admin.clone();
        let described = on_runtime(async move {
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            admin.describe_topics(&refs).await
        })
        .await?
        .map_err(|e| NativeError::core(&e))?;
        Ok(described
            .into_iter()
            .map(|(name, r)| match r {
                Ok(d) => TopicDescription {
                    name,
                    internal: d.internal,
                    partitions: d
                        .partitions
                        .into_iter()
                        .map(|p| PartitionInfo {
                            partition: p.partition,
                            leader: p.leader,
                            replicas: p.replicas,
                            isr: p.isr,
                        })
                        .collect(),
                    error: None,
                },
                Err(e) => TopicDescription {
                    name,
                    internal: false,
                    partitions: Vec::new(),
                    error: Some(info_of(&e)),
                },
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::info_of_code;

    #[test]
    fn item_errors_keep_their_kafka_code() {
        let r = results(vec![
            ("a".to_string(), Ok(())),
            (
                "b".to_string(),
                Err(odradek::Error::Kafka(
                    odradek::ErrorCode::TopicAlreadyExists,
                )),
            ),
        ]);
        assert!(r[0].error.is_none());
        let e = r[1]
            .error
            .as_ref()
            .map(|e| (e.code, e.name.as_str(), e.retriable));
        assert_eq!(e, Some((36, "TOPIC_ALREADY_EXISTS", false)));
        assert_eq!(info_of_code(odradek::ErrorCode::NotCoordinator).code, 16);
    }
}
