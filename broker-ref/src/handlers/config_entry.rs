//! A described config value and where it comes from, shared by the topic and broker config
//! handlers.

/// Kafka's `ConfigSource` values (DescribeConfigs v1+).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i8)]
pub enum ConfigSource {
    /// Set on the topic.
    DynamicTopic = 1,
    /// A dynamic value for this broker.
    DynamicBroker = 2,
    /// A cluster-wide dynamic default.
    DynamicDefaultBroker = 3,
    /// Set in `server.properties` or `--override`.
    StaticBroker = 4,
    /// Kafka's default.
    Default = 5,
}

/// One described config value.
#[derive(Debug, Clone)]
pub struct ConfigEntry {
    /// Config name.
    pub name: &'static str,
    /// Current value.
    pub value: String,
    /// Where it comes from.
    pub source: ConfigSource,
}
