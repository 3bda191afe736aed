//! Broker configuration: Apache Kafka's `server.properties` names, types, defaults, validators
//! and override syntax, driven by one table of every Kafka 4.4 broker key.
//!
//! - [`table`]: Kafka's own definitions (`kafka_broker_keys.tsv`, `kafka_group_keys.tsv`,
//!   generated from Kafka's jars by `broker-ref/tools/dump_kafka_configs.sh`).
//! - [`types`]: Kafka's value types (`ConfigDef.Type`).
//! - [`validators`]: Kafka's type parsing and validators, with Kafka's messages.
//! - [`keys`]: what odradek-broker does with each key (honoured / accepted, not applicable /
//!   refused unless Kafka's default), and its own defaults where they differ.
//! - [`broker_config`]: the validated configuration ([`BrokerConfig`]) that `server.properties`,
//!   `--override`, DescribeConfigs and the dynamic configs (`crate::dynamic_config`) share.
//! - [`properties`]: the `server.properties` syntax.
//!
//! `docs/broker-configuration.md` lists every key with its status.

pub mod broker_config;
pub mod keys;
pub mod properties;
pub mod replica_selector;
pub mod table;
pub mod types;
pub mod validators;

pub use broker_config::{is_sensitive, kafka_check, refusal, BrokerConfig, Listener, Source};
pub use keys::{key_def, KeyDef, Status};
pub use properties::parse_properties;
