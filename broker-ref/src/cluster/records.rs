//! The cluster metadata records, after KRaft's (`RegisterBrokerRecord`, `TopicRecord`,
//! `PartitionRecord`, `PartitionChangeRecord`, ...). One entry of the metadata log holds one
//! batch of records, applied together (KRaft's atomic batches), encoded as JSON: only our own
//! brokers read the metadata log, and JSON keeps it readable with `cat`.

use serde::{Deserialize, Serialize};

/// One advertised listener of a broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointRecord {
    /// Listener name.
    pub name: String,
    /// Host.
    pub host: String,
    /// Port.
    pub port: u16,
    /// Security protocol id (Kafka's numbering).
    pub security_protocol: i16,
}

/// A SCRAM credential as the metadata log stores it (base64 fields, as Kafka's record holds
/// the salt, stored key and server key). `Debug` prints no key material.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScramCredentialRecord {
    /// Salt (base64).
    pub salt: String,
    /// StoredKey (base64).
    pub stored_key: String,
    /// ServerKey (base64).
    pub server_key: String,
    /// Iterations.
    pub iterations: i32,
}

impl ScramCredentialRecord {
    /// The record of a credential.
    pub fn of(c: &crate::security::scram::ScramCredential) -> ScramCredentialRecord {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        ScramCredentialRecord {
            salt: b64.encode(&c.salt),
            stored_key: b64.encode(c.stored_key.expose()),
            server_key: b64.encode(c.server_key.expose()),
            iterations: c.iterations,
        }
    }

    /// The credential it records (`None`: not base64).
    pub fn credential(&self) -> Option<crate::security::scram::ScramCredential> {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        Some(crate::security::scram::ScramCredential {
            salt: b64.decode(&self.salt).ok()?,
            stored_key: crate::security::Secret::new(b64.decode(&self.stored_key).ok()?),
            server_key: crate::security::Secret::new(b64.decode(&self.server_key).ok()?),
            iterations: self.iterations,
        })
    }
}

impl std::fmt::Debug for ScramCredentialRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramCredentialRecord")
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

/// The replicas of a partition reassignment in flight (KIP-455).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReassigningReplicas {
    /// Replicas of the target assignment not in the original one (catching up).
    pub adding: Vec<i32>,
    /// Replicas of the original assignment not in the target one (leaving once it is done).
    pub removing: Vec<i32>,
}

impl ReassigningReplicas {
    /// Whether no reassignment is in flight.
    pub fn is_empty(&self) -> bool {
        self.adding.is_empty() && self.removing.is_empty()
    }
}

/// A change to the cluster's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum MetadataRecord {
    /// A broker registered (or registered again after a restart). Its broker epoch is the
    /// offset of the entry holding this record. It starts fenced.
    RegisterBroker {
        /// Node id.
        broker_id: i32,
        /// A new id per process start.
        incarnation_id: String,
        /// Advertised listeners.
        endpoints: Vec<EndpointRecord>,
        /// `broker.rack`.
        rack: Option<String>,
    },
    /// A broker stopped heartbeating (or asked to be fenced): it leads nothing and is out of
    /// every ISR.
    FenceBroker {
        /// Node id.
        broker_id: i32,
        /// The registration this applies to.
        broker_epoch: i64,
    },
    /// A registered broker caught up with the metadata and may lead and follow.
    UnfenceBroker {
        /// Node id.
        broker_id: i32,
        /// The registration this applies to.
        broker_epoch: i64,
    },
    /// A broker asked to shut down: leadership moves away from it first.
    BrokerShuttingDown {
        /// Node id.
        broker_id: i32,
        /// The registration this applies to.
        broker_epoch: i64,
    },
    /// A topic was created.
    Topic {
        /// Name.
        name: String,
        /// Id (UUID text).
        topic_id: String,
    },
    /// A partition was created.
    Partition {
        /// The topic's id.
        topic_id: String,
        /// Partition index.
        partition: i32,
        /// Replica assignment, preferred leader first.
        replicas: Vec<i32>,
        /// In-sync replicas.
        isr: Vec<i32>,
        /// Leader (-1: none).
        leader: i32,
        /// Leader epoch.
        leader_epoch: i32,
        /// Partition epoch: bumped by every change.
        partition_epoch: i32,
    },
    /// A partition's leader, ISR or replicas changed; fields left out keep their value. The
    /// partition epoch goes up by one; the leader epoch goes up when the leader changes.
    PartitionChange {
        /// The topic's id.
        topic_id: String,
        /// Partition index.
        partition: i32,
        /// New leader (-1: none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        leader: Option<i32>,
        /// New ISR.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        isr: Option<Vec<i32>>,
        /// New replica assignment.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replicas: Option<Vec<i32>>,
        /// The leader was elected from outside the ISR and may have lost data (KIP-704's
        /// RECOVERING): its first fetches from followers settle it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        recovering: Option<bool>,
        /// A reassignment started (the replicas being added and removed), or ended (both
        /// empty): KRaft's `addingReplicas` / `removingReplicas`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reassignment: Option<ReassigningReplicas>,
    },
    /// A topic was deleted.
    RemoveTopic {
        /// The topic's id.
        topic_id: String,
    },
    /// A config value of a resource was set (`value: None`: removed).
    Config {
        /// Kafka's resource type (2 topic, 4 broker).
        resource_type: i8,
        /// Resource name ("" for the cluster-wide broker default).
        resource_name: String,
        /// Key.
        name: String,
        /// Value.
        value: Option<String>,
    },
    /// A client quota value was set (`value: None`: removed), KRaft's ClientQuotaRecord.
    ClientQuota {
        /// The entity, as (type, name; `None` for the default) in Kafka's order.
        entity: Vec<(String, Option<String>)>,
        /// The quota key (`producer_byte_rate`, ...).
        key: String,
        /// The value (its decimal text), or `None` to remove the key.
        value: Option<String>,
    },
    /// An ACL was created (KRaft's AccessControlEntryRecord).
    Acl {
        /// The ACL.
        binding: crate::security::acl::AclBinding,
    },
    /// An ACL was deleted (RemoveAccessControlEntryRecord).
    RemoveAcl {
        /// The ACL.
        binding: crate::security::acl::AclBinding,
    },
    /// A user's SCRAM credential for one mechanism was set (UserScramCredentialRecord).
    ScramCredential {
        /// User name.
        user: String,
        /// `SCRAM-SHA-256` or `SCRAM-SHA-512`.
        mechanism: String,
        /// The credential (its keys are never printed).
        credential: ScramCredentialRecord,
    },
    /// A user's SCRAM credential for one mechanism was deleted.
    RemoveScramCredential {
        /// User name.
        user: String,
        /// `SCRAM-SHA-256` or `SCRAM-SHA-512`.
        mechanism: String,
    },
    /// A block of producer ids was handed to a broker: every id below `next_producer_id` is
    /// taken.
    ProducerIds {
        /// The broker given the block.
        broker_id: i32,
        /// The first id not given out yet.
        next_producer_id: i64,
    },
}

/// Encodes a batch of records as one metadata log entry.
pub fn encode(records: &[MetadataRecord]) -> bytes::Bytes {
    // Serializing plain data with derived impls cannot fail.
    bytes::Bytes::from(serde_json::to_vec(records).unwrap_or_default())
}

/// Decodes one metadata log entry.
pub fn decode(bytes: &[u8]) -> Result<Vec<MetadataRecord>, String> {
    serde_json::from_slice(bytes).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let batch = vec![
            MetadataRecord::Topic {
                name: "t".into(),
                topic_id: "id".into(),
            },
            MetadataRecord::PartitionChange {
                topic_id: "id".into(),
                partition: 0,
                leader: Some(2),
                isr: None,
                replicas: None,
                recovering: None,
                reassignment: Some(ReassigningReplicas {
                    adding: vec![4],
                    removing: vec![1],
                }),
            },
        ];
        assert_eq!(decode(&encode(&batch)).unwrap(), batch);
        // Entries written before reassignments existed still decode.
        let old = br#"[{"type":"PartitionChange","topic_id":"id","partition":0,"leader":2}]"#;
        assert!(matches!(
            &decode(old).unwrap()[0],
            MetadataRecord::PartitionChange {
                reassignment: None,
                ..
            }
        ));
        assert!(decode(b"{").is_err());
    }
}
