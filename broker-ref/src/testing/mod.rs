//! A Kafka test cluster inside the test's own process: [`Cluster`].
//!
//! `Cluster::builder().brokers(3).topic("orders", 6).start()` binds one ephemeral loopback port
//! per broker and returns within milliseconds; [`Cluster::bootstrap`] is the
//! `bootstrap.servers` any Kafka client uses unchanged (the Java client, librdkafka,
//! kafka-python, kafkajs, Odradek's own). Dropping the cluster stops it and removes its data.
//!
//! Fault injection, modelled on librdkafka's mock cluster and franz-go kfake's `ControlKey`:
//!
//! | want | call |
//! |---|---|
//! | errors for an API, one per request | [`Cluster::push_request_errors`] |
//! | ... on one broker, each after a delay | [`Cluster::push_broker_request_errors`] |
//! | ... for one partition only (the request's others answered) | [`Cluster::push_partition_request_errors`] |
//! | delay, drop, or close instead of answering; per client id, broker, topic, partition, N times or always | [`Cluster::add_rule`] with a [`Rule`] |
//! | cut connections (a broker's, a client's) | [`Cluster::close_connections`] |
//! | a broker down and up (port refuses, then accepts again) | [`Cluster::set_broker_down`], [`Cluster::set_broker_up`] |
//! | slow broker | [`Cluster::set_broker_rtt`] |
//! | move a partition's leader (epoch bumped); a read replica | [`Cluster::set_partition_leader`], [`Cluster::set_partition_follower`] |
//! | pin a group or transaction coordinator | [`Cluster::set_coordinator`] |
//! | clamp an API's versions | [`Cluster::set_api_version`] |
//! | what the client sent | [`Cluster::record_requests`], [`Cluster::requests`] |
//!
//! How it works: every broker is a listener of one [`crate::broker::Broker`] (one log store,
//! one group and transaction coordinator) with a [`crate::server::ClusterView`] of its own
//! ([`view`]) that refuses the partitions and coordinator keys it does not own and rewrites
//! Metadata, FindCoordinator, DescribeCluster and ApiVersions to show the cluster's
//! [`topology`]. The brokers run on a thread and a single-threaded tokio runtime of their own,
//! so the test's runtime (or lack of one) does not matter. There is no replication, no ISR and
//! no controller election: a leader that goes down leaves its partitions leaderless until it
//! comes back, and stored batches keep leader epoch 0 whatever the partition's epoch is.

mod cluster;
mod handoff;
pub mod names;
mod node;
pub mod spec;
pub mod topology;
mod view;

pub use crate::server::{Action, LoggedRequest, Rule, RuleId};
pub use cluster::{Cluster, ClusterBuilder, Storage};
pub use topology::{CoordinatorKind, PartitionRole};
