//! A described config value and where it comes from, shared by the topic, broker and group
//! config handlers.

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsSynonym,
};

use super::reply::sb;

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
    /// Set on the group (GROUP resource, Kafka 4.x).
    Group = 8,
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

/// One entry of a DescribeConfigs answer, with everything Kafka reports.
#[derive(Debug, Clone)]
pub struct Described {
    /// Config name.
    pub name: String,
    /// Current value (`None`: null, or hidden because sensitive).
    pub value: Option<String>,
    /// Where the value comes from.
    pub source: ConfigSource,
    /// Whether it cannot be changed with (Incremental)AlterConfigs.
    pub read_only: bool,
    /// Whether it is a secret (no value is reported).
    pub sensitive: bool,
    /// Kafka's `config_type` code (0: unknown).
    pub config_type: i8,
    /// What the broker does with it (reported when the request includes documentation).
    pub documentation: Option<String>,
    /// Every level that sets it, highest precedence first.
    pub synonyms: Vec<DescribeConfigsSynonym>,
}

impl Described {
    /// A synonym entry.
    pub fn synonym(
        name: &str,
        value: Option<&str>,
        source: ConfigSource,
    ) -> DescribeConfigsSynonym {
        DescribeConfigsSynonym::default()
            .with_name(sb(name))
            .with_value(value.map(sb))
            .with_source(source as i8)
    }

    /// The protocol entry; synonyms and documentation only when asked for.
    pub fn into_result(self, synonyms: bool, documentation: bool) -> DescribeConfigsResourceResult {
        DescribeConfigsResourceResult::default()
            .with_name(sb(&self.name))
            .with_value(self.value.as_deref().map(sb))
            .with_read_only(self.read_only)
            .with_config_source(self.source as i8)
            .with_is_sensitive(self.sensitive)
            .with_config_type(self.config_type)
            .with_documentation(if documentation {
                self.documentation.as_deref().map(sb)
            } else {
                None
            })
            .with_synonyms(if synonyms { self.synonyms } else { Vec::new() })
    }
}
