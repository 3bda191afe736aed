//! Kafka's config value types, shared by the tables and the validators.

/// Kafka's `ConfigDef.Type`, with its DescribeConfigs `config_type` code (KIP-569).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    /// BOOLEAN (1).
    Boolean,
    /// STRING (2).
    String,
    /// INT (3).
    Int,
    /// SHORT (4).
    Short,
    /// LONG (5).
    Long,
    /// DOUBLE (6).
    Double,
    /// LIST (7).
    List,
    /// CLASS (8).
    Class,
    /// PASSWORD (9): reported as sensitive, with no value.
    Password,
}

impl ConfigType {
    /// The type named as Kafka prints it (`INT`, `LIST`, ...).
    pub fn parse(text: &str) -> Option<ConfigType> {
        Some(match text {
            "BOOLEAN" => ConfigType::Boolean,
            "STRING" => ConfigType::String,
            "INT" => ConfigType::Int,
            "SHORT" => ConfigType::Short,
            "LONG" => ConfigType::Long,
            "DOUBLE" => ConfigType::Double,
            "LIST" => ConfigType::List,
            "CLASS" => ConfigType::Class,
            "PASSWORD" => ConfigType::Password,
            _ => return None,
        })
    }

    /// The `config_type` DescribeConfigs v3+ reports.
    pub fn protocol_code(self) -> i8 {
        match self {
            ConfigType::Boolean => 1,
            ConfigType::String => 2,
            ConfigType::Int => 3,
            ConfigType::Short => 4,
            ConfigType::Long => 5,
            ConfigType::Double => 6,
            ConfigType::List => 7,
            ConfigType::Class => 8,
            ConfigType::Password => 9,
        }
    }
}
