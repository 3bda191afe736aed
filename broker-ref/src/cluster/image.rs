//! The cluster's metadata as the committed metadata log builds it: brokers, topics and their
//! partitions (replicas, ISR, leader, epochs), configs and the producer id high mark. Every node
//! holds one, applied in offset order; its JSON is the metadata log's snapshot.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::quorum_driver::StateMachine;
use super::records::{self, EndpointRecord, MetadataRecord};
use crate::Result;

/// A registered broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerImage {
    /// Node id.
    pub id: i32,
    /// The registration's epoch (the offset of its record).
    pub epoch: i64,
    /// The process's incarnation id.
    pub incarnation_id: String,
    /// Advertised listeners.
    pub endpoints: Vec<EndpointRecord>,
    /// Rack.
    pub rack: Option<String>,
    /// Fenced brokers lead and follow nothing.
    pub fenced: bool,
    /// Shutting down: leads nothing new.
    pub shutting_down: bool,
}

/// One partition's replication state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionImage {
    /// Replica assignment, preferred leader first.
    pub replicas: Vec<i32>,
    /// In-sync replicas.
    pub isr: Vec<i32>,
    /// Leader, -1 for none.
    pub leader: i32,
    /// Leader epoch.
    pub leader_epoch: i32,
    /// Partition epoch.
    pub partition_epoch: i32,
    /// The leader was elected uncleanly and has not settled yet.
    pub recovering: bool,
    /// The reassignment in flight (empty: none). `replicas` holds the target replicas first,
    /// then the ones being removed.
    #[serde(default)]
    pub reassigning: crate::cluster::records::ReassigningReplicas,
}

impl PartitionImage {
    /// The replicas it had before its reassignment in flight (its replicas when none is).
    pub fn original_replicas(&self) -> Vec<i32> {
        self.replicas
            .iter()
            .copied()
            .filter(|r| !self.reassigning.adding.contains(r))
            .collect()
    }

    /// The replicas its reassignment in flight moves to (its replicas when none is).
    pub fn target_replicas(&self) -> Vec<i32> {
        self.replicas
            .iter()
            .copied()
            .filter(|r| !self.reassigning.removing.contains(r))
            .collect()
    }
}

/// A topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicImage {
    /// Name.
    pub name: String,
    /// Id.
    pub id: String,
    /// Partitions by index.
    pub partitions: BTreeMap<i32, PartitionImage>,
}

/// The whole metadata state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataImage {
    /// The offset after the last applied entry.
    pub offset: i64,
    /// Registered brokers.
    pub brokers: BTreeMap<i32, BrokerImage>,
    /// Topics by name.
    pub topics: BTreeMap<String, TopicImage>,
    /// Topic names by id.
    pub topic_names: BTreeMap<String, String>,
    /// Config values: (resource type, resource name) → key → value.
    pub configs: BTreeMap<String, BTreeMap<String, String>>,
    /// The first producer id not handed out yet.
    pub next_producer_id: i64,
    /// Client quotas by entity (its components joined as text, see [`quota_key`]).
    #[serde(default)]
    pub client_quotas: BTreeMap<String, QuotaImage>,
    /// ACLs, in creation order.
    #[serde(default)]
    pub acls: Vec<crate::security::acl::AclBinding>,
    /// SCRAM credentials: user → mechanism name → credential.
    #[serde(default)]
    pub scram: BTreeMap<String, BTreeMap<String, crate::cluster::records::ScramCredentialRecord>>,
}

/// One client quota entity and its values.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaImage {
    /// The entity's components, (type, name; `None` for the default).
    pub entity: Vec<(String, Option<String>)>,
    /// Key → value (decimal text).
    pub values: BTreeMap<String, String>,
}

/// The text key of a quota entity in [`MetadataImage::client_quotas`].
pub fn quota_key(entity: &[(String, Option<String>)]) -> String {
    entity
        .iter()
        .map(|(t, n)| format!("{t}={}", n.as_deref().unwrap_or("<default>")))
        .collect::<Vec<_>>()
        .join(",")
}

/// The key of a config resource in [`MetadataImage::configs`].
pub fn config_key(resource_type: i8, name: &str) -> String {
    format!("{resource_type}:{name}")
}

impl MetadataImage {
    /// Applies one committed entry at `offset`.
    pub fn apply_entry(&mut self, offset: i64, data: &[u8]) {
        match records::decode(data) {
            Ok(batch) => {
                for r in batch {
                    self.apply(offset, r);
                }
            }
            // Every node skips the same entry the same way, so images stay identical.
            Err(e) => tracing::error!(offset, error = %e, "metadata entry skipped: undecodable"),
        }
        self.offset = offset + 1;
    }

    /// Applies one record of the entry at `offset`.
    pub fn apply(&mut self, offset: i64, record: MetadataRecord) {
        match record {
            MetadataRecord::RegisterBroker {
                broker_id,
                incarnation_id,
                endpoints,
                rack,
            } => {
                self.brokers.insert(
                    broker_id,
                    BrokerImage {
                        id: broker_id,
                        epoch: offset,
                        incarnation_id,
                        endpoints,
                        rack,
                        fenced: true,
                        shutting_down: false,
                    },
                );
            }
            MetadataRecord::FenceBroker {
                broker_id,
                broker_epoch,
            } => {
                if let Some(b) = self.broker_at(broker_id, broker_epoch) {
                    b.fenced = true;
                }
            }
            MetadataRecord::UnfenceBroker {
                broker_id,
                broker_epoch,
            } => {
                if let Some(b) = self.broker_at(broker_id, broker_epoch) {
                    b.fenced = false;
                    b.shutting_down = false;
                }
            }
            MetadataRecord::BrokerShuttingDown {
                broker_id,
                broker_epoch,
            } => {
                if let Some(b) = self.broker_at(broker_id, broker_epoch) {
                    b.shutting_down = true;
                }
            }
            MetadataRecord::Topic { name, topic_id } => {
                self.topic_names.insert(topic_id.clone(), name.clone());
                self.topics.insert(
                    name.clone(),
                    TopicImage {
                        name,
                        id: topic_id,
                        partitions: BTreeMap::new(),
                    },
                );
            }
            MetadataRecord::Partition {
                topic_id,
                partition,
                replicas,
                isr,
                leader,
                leader_epoch,
                partition_epoch,
            } => {
                if let Some(t) = self.topic_by_id(&topic_id) {
                    t.partitions.insert(
                        partition,
                        PartitionImage {
                            replicas,
                            isr,
                            leader,
                            leader_epoch,
                            partition_epoch,
                            recovering: false,
                            reassigning: Default::default(),
                        },
                    );
                }
            }
            MetadataRecord::PartitionChange {
                topic_id,
                partition,
                leader,
                isr,
                replicas,
                recovering,
                reassignment,
            } => {
                let Some(p) = self
                    .topic_by_id(&topic_id)
                    .and_then(|t| t.partitions.get_mut(&partition))
                else {
                    return;
                };
                if let Some(l) = leader {
                    if l != p.leader {
                        p.leader = l;
                        p.leader_epoch += 1;
                    }
                }
                if let Some(isr) = isr {
                    p.isr = isr;
                }
                if let Some(r) = replicas {
                    p.replicas = r;
                }
                if let Some(r) = recovering {
                    p.recovering = r;
                }
                if let Some(r) = reassignment {
                    p.reassigning = r;
                }
                p.partition_epoch += 1;
            }
            MetadataRecord::RemoveTopic { topic_id } => {
                if let Some(name) = self.topic_names.remove(&topic_id) {
                    self.topics.remove(&name);
                }
            }
            MetadataRecord::Config {
                resource_type,
                resource_name,
                name,
                value,
            } => {
                let key = config_key(resource_type, &resource_name);
                let entry = self.configs.entry(key.clone()).or_default();
                match value {
                    Some(v) => {
                        entry.insert(name, v);
                    }
                    None => {
                        entry.remove(&name);
                        if entry.is_empty() {
                            self.configs.remove(&key);
                        }
                    }
                }
            }
            MetadataRecord::ClientQuota { entity, key, value } => {
                let k = quota_key(&entity);
                let q = self
                    .client_quotas
                    .entry(k.clone())
                    .or_insert_with(|| QuotaImage {
                        entity,
                        values: BTreeMap::new(),
                    });
                match value {
                    Some(v) => {
                        q.values.insert(key, v);
                    }
                    None => {
                        q.values.remove(&key);
                    }
                }
                if q.values.is_empty() {
                    self.client_quotas.remove(&k);
                }
            }
            MetadataRecord::Acl { binding } => {
                if !self.acls.contains(&binding) {
                    self.acls.push(binding);
                }
            }
            MetadataRecord::RemoveAcl { binding } => self.acls.retain(|b| *b != binding),
            MetadataRecord::ScramCredential {
                user,
                mechanism,
                credential,
            } => {
                self.scram
                    .entry(user)
                    .or_default()
                    .insert(mechanism, credential);
            }
            MetadataRecord::RemoveScramCredential { user, mechanism } => {
                if let Some(creds) = self.scram.get_mut(&user) {
                    creds.remove(&mechanism);
                    if creds.is_empty() {
                        self.scram.remove(&user);
                    }
                }
            }
            MetadataRecord::ProducerIds {
                next_producer_id, ..
            } => {
                self.next_producer_id = self.next_producer_id.max(next_producer_id);
            }
        }
    }

    fn broker_at(&mut self, id: i32, epoch: i64) -> Option<&mut BrokerImage> {
        self.brokers.get_mut(&id).filter(|b| b.epoch == epoch)
    }

    fn topic_by_id(&mut self, id: &str) -> Option<&mut TopicImage> {
        let name = self.topic_names.get(id)?;
        self.topics.get_mut(name)
    }

    /// Brokers that may lead and follow: registered, not fenced, not shutting down.
    pub fn usable_brokers(&self) -> impl Iterator<Item = &BrokerImage> {
        self.brokers
            .values()
            .filter(|b| !b.fenced && !b.shutting_down)
    }
}

/// The image shared between the quorum (which applies entries) and the node's readers.
#[derive(Debug, Clone)]
pub struct SharedImage {
    image: Arc<RwLock<MetadataImage>>,
    changed: watch::Sender<i64>,
}

impl Default for SharedImage {
    fn default() -> Self {
        SharedImage {
            image: Arc::default(),
            changed: watch::channel(0).0,
        }
    }
}

impl SharedImage {
    /// A copy of the current image.
    pub fn current(&self) -> MetadataImage {
        self.image.read().map(|i| i.clone()).unwrap_or_default()
    }

    /// Reads the current image.
    pub fn read<T>(&self, f: impl FnOnce(&MetadataImage) -> T) -> T {
        match self.image.read() {
            Ok(i) => f(&i),
            Err(poisoned) => f(&poisoned.into_inner()),
        }
    }

    /// A receiver told the image's offset after every applied entry.
    pub fn watch(&self) -> watch::Receiver<i64> {
        self.changed.subscribe()
    }

    fn write(&self, f: impl FnOnce(&mut MetadataImage)) {
        let offset = match self.image.write() {
            Ok(mut i) => {
                f(&mut i);
                i.offset
            }
            Err(poisoned) => {
                let mut i = poisoned.into_inner();
                f(&mut i);
                i.offset
            }
        };
        self.changed.send_replace(offset);
    }
}

impl StateMachine for SharedImage {
    fn apply(&mut self, offset: i64, _epoch: i32, data: &Bytes) {
        self.write(|i| i.apply_entry(offset, data));
    }

    fn load(&mut self, snapshot: &odradek_quorum::Snapshot) -> Result<()> {
        let mut image: MetadataImage = serde_json::from_slice(&snapshot.data)
            .map_err(|e| crate::Error::config("log.dirs", format!("metadata snapshot: {e}")))?;
        image.offset = snapshot.id.offset;
        self.write(|i| *i = image);
        Ok(())
    }

    fn snapshot(&self) -> Bytes {
        Bytes::from(self.read(|i| serde_json::to_vec(i).unwrap_or_default()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_changes_bump_epochs_as_kraft_does() {
        let mut image = MetadataImage::default();
        let entry = records::encode(&[
            MetadataRecord::Topic {
                name: "t".into(),
                topic_id: "x".into(),
            },
            MetadataRecord::Partition {
                topic_id: "x".into(),
                partition: 0,
                replicas: vec![1, 2, 3],
                isr: vec![1, 2, 3],
                leader: 1,
                leader_epoch: 0,
                partition_epoch: 0,
            },
        ]);
        image.apply_entry(5, &entry);
        let change = |leader, isr| MetadataRecord::PartitionChange {
            topic_id: "x".into(),
            partition: 0,
            leader,
            isr,
            replicas: None,
            recovering: None,
            reassignment: None,
        };
        image.apply(6, change(None, Some(vec![1, 2])));
        let p = &image.topics["t"].partitions[&0];
        assert_eq!((p.leader, p.leader_epoch, p.partition_epoch), (1, 0, 1));
        image.apply(7, change(Some(2), Some(vec![2])));
        let p = &image.topics["t"].partitions[&0];
        assert_eq!((p.leader, p.leader_epoch, p.partition_epoch), (2, 1, 2));
        assert_eq!(p.isr, vec![2]);
    }

    #[test]
    fn broker_records_apply_only_to_their_registration() {
        let mut image = MetadataImage::default();
        image.apply(
            3,
            MetadataRecord::RegisterBroker {
                broker_id: 1,
                incarnation_id: "a".into(),
                endpoints: vec![],
                rack: None,
            },
        );
        assert!(image.brokers[&1].fenced);
        image.apply(
            4,
            MetadataRecord::UnfenceBroker {
                broker_id: 1,
                broker_epoch: 2,
            },
        );
        assert!(image.brokers[&1].fenced, "a stale registration's record");
        image.apply(
            4,
            MetadataRecord::UnfenceBroker {
                broker_id: 1,
                broker_epoch: 3,
            },
        );
        assert!(!image.brokers[&1].fenced);
        let machine = SharedImage::default();
        machine.write(|i| *i = image.clone());
        let snap = odradek_quorum::Snapshot {
            id: odradek_quorum::OffsetAndEpoch::new(5, 1),
            data: StateMachine::snapshot(&machine),
        };
        let mut other = SharedImage::default();
        other.load(&snap).unwrap();
        assert_eq!(other.read(|i| i.brokers.clone()), image.brokers);
    }
}
