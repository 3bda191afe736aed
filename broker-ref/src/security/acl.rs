//! Kafka's ACL model: resource types, pattern types, operations and permission types with their
//! wire codes, an ACL binding, and the filters of DescribeAcls / DeleteAcls with Kafka's matching
//! rules (`ResourcePatternFilter`, `AccessControlEntryFilter`).

macro_rules! code_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $c:expr => $text:expr),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vm])* $v = $c),* }
        impl $name {
            /// The value of a wire code (unknown codes are `Unknown`).
            pub fn from_code(code: i8) -> $name {
                match code { $($c => $name::$v,)* _ => $name::Unknown }
            }
            /// The wire code.
            pub fn code(self) -> i8 { self as i8 }
            /// Kafka's name (`TOPIC`, `PREFIXED`, `DESCRIBE_CONFIGS`, `ALLOW`, ...).
            pub fn name(self) -> &'static str {
                match self { $($name::$v => $text,)* }
            }
            /// The value named `name` (case-insensitive).
            pub fn from_name(name: &str) -> Option<$name> {
                [$($name::$v),*].into_iter().find(|v| v.name().eq_ignore_ascii_case(name))
            }
        }
    };
}

code_enum!(
    /// Kafka's `ResourceType`.
    ResourceType {
        /// Not a valid value.
        Unknown = 0 => "UNKNOWN",
        /// Any type (filters only).
        Any = 1 => "ANY",
        /// A topic.
        Topic = 2 => "TOPIC",
        /// A consumer group.
        Group = 3 => "GROUP",
        /// The cluster (`kafka-cluster`).
        Cluster = 4 => "CLUSTER",
        /// A transactional id.
        TransactionalId = 5 => "TRANSACTIONAL_ID",
        /// A delegation token.
        DelegationToken = 6 => "DELEGATION_TOKEN",
        /// A user.
        User = 7 => "USER",
    }
);

code_enum!(
    /// Kafka's `PatternType`.
    PatternType {
        /// Not a valid value.
        Unknown = 0 => "UNKNOWN",
        /// Any pattern type (filters only).
        Any = 1 => "ANY",
        /// Every pattern that matches the name (filters only).
        Match = 2 => "MATCH",
        /// The exact name (or `*`, every name).
        Literal = 3 => "LITERAL",
        /// Every name starting with the pattern.
        Prefixed = 4 => "PREFIXED",
    }
);

code_enum!(
    /// Kafka's `AclOperation`.
    AclOperation {
        /// Not a valid value.
        Unknown = 0 => "UNKNOWN",
        /// Any operation (filters only).
        Any = 1 => "ANY",
        /// Every operation.
        All = 2 => "ALL",
        /// Read.
        Read = 3 => "READ",
        /// Write.
        Write = 4 => "WRITE",
        /// Create.
        Create = 5 => "CREATE",
        /// Delete.
        Delete = 6 => "DELETE",
        /// Alter.
        Alter = 7 => "ALTER",
        /// Describe.
        Describe = 8 => "DESCRIBE",
        /// Cluster action (inter-broker).
        ClusterAction = 9 => "CLUSTER_ACTION",
        /// Describe configs.
        DescribeConfigs = 10 => "DESCRIBE_CONFIGS",
        /// Alter configs.
        AlterConfigs = 11 => "ALTER_CONFIGS",
        /// Idempotent write.
        IdempotentWrite = 12 => "IDEMPOTENT_WRITE",
        /// Create delegation tokens.
        CreateTokens = 13 => "CREATE_TOKENS",
        /// Describe delegation tokens.
        DescribeTokens = 14 => "DESCRIBE_TOKENS",
    }
);

code_enum!(
    /// Kafka's `AclPermissionType`.
    PermissionType {
        /// Not a valid value.
        Unknown = 0 => "UNKNOWN",
        /// Any permission (filters only).
        Any = 1 => "ANY",
        /// Deny.
        Deny = 2 => "DENY",
        /// Allow.
        Allow = 3 => "ALLOW",
    }
);

/// The name of the cluster resource.
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// The wildcard resource name / host.
pub const WILDCARD: &str = "*";
/// The wildcard principal.
pub const WILDCARD_PRINCIPAL: &str = "User:*";

impl ResourceType {
    /// The operations Kafka reports in `authorized_operations` for this type
    /// (`AclEntry.supportedOperations`).
    pub fn supported_operations(self) -> &'static [AclOperation] {
        use AclOperation::*;
        match self {
            ResourceType::Topic => &[
                Read,
                Write,
                Create,
                Describe,
                Delete,
                Alter,
                DescribeConfigs,
                AlterConfigs,
            ],
            ResourceType::Group => &[Read, Describe, Delete, DescribeConfigs, AlterConfigs],
            ResourceType::Cluster => &[
                Create,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
                Alter,
                Describe,
            ],
            ResourceType::TransactionalId => &[Describe, Write],
            ResourceType::DelegationToken => &[Describe],
            ResourceType::User => &[CreateTokens, DescribeTokens],
            ResourceType::Unknown | ResourceType::Any => &[],
        }
    }
}

/// One ACL: a resource pattern and an access control entry.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct AclBinding {
    /// Resource type.
    #[serde(with = "by_name::resource")]
    pub resource_type: ResourceType,
    /// Resource name (or pattern).
    pub name: String,
    /// LITERAL or PREFIXED.
    #[serde(with = "by_name::pattern")]
    pub pattern_type: PatternType,
    /// `Type:name`, or `User:*`.
    pub principal: String,
    /// Client IP address, or `*`.
    pub host: String,
    /// The operation.
    #[serde(with = "by_name::operation")]
    pub operation: AclOperation,
    /// ALLOW or DENY.
    #[serde(with = "by_name::permission")]
    pub permission: PermissionType,
}

mod by_name {
    macro_rules! named {
        ($m:ident, $t:ty) => {
            pub mod $m {
                use super::super::*;
                pub fn serialize<S: serde::Serializer>(v: &$t, s: S) -> Result<S::Ok, S::Error> {
                    s.serialize_str(v.name())
                }
                pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
                    let s: String = serde::Deserialize::deserialize(d)?;
                    <$t>::from_name(&s)
                        .ok_or_else(|| serde::de::Error::custom(format!("unknown value {s}")))
                }
            }
        };
    }
    named!(resource, ResourceType);
    named!(pattern, PatternType);
    named!(operation, AclOperation);
    named!(permission, PermissionType);
}

/// A DescribeAcls / DeleteAcls filter; `None` names and hosts match anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclFilter {
    /// Resource type or ANY.
    pub resource_type: ResourceType,
    /// Resource name, or any.
    pub name: Option<String>,
    /// ANY, MATCH, LITERAL or PREFIXED.
    pub pattern_type: PatternType,
    /// Principal, or any.
    pub principal: Option<String>,
    /// Host, or any.
    pub host: Option<String>,
    /// Operation or ANY.
    pub operation: AclOperation,
    /// Permission or ANY.
    pub permission: PermissionType,
}

impl AclFilter {
    /// Whether the filter has an UNKNOWN element (Kafka refuses such a filter).
    pub fn is_unknown(&self) -> bool {
        self.resource_type == ResourceType::Unknown
            || self.pattern_type == PatternType::Unknown
            || self.operation == AclOperation::Unknown
            || self.permission == PermissionType::Unknown
    }

    /// Kafka's matching: resource pattern first, then the entry.
    pub fn matches(&self, b: &AclBinding) -> bool {
        self.matches_pattern(b) && self.matches_entry(b)
    }

    fn matches_pattern(&self, b: &AclBinding) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != b.resource_type {
            return false;
        }
        if !matches!(self.pattern_type, PatternType::Any | PatternType::Match)
            && self.pattern_type != b.pattern_type
        {
            return false;
        }
        let Some(name) = &self.name else { return true };
        if self.pattern_type == PatternType::Any || self.pattern_type == b.pattern_type {
            return *name == b.name;
        }
        match b.pattern_type {
            PatternType::Literal => *name == b.name || b.name == WILDCARD,
            PatternType::Prefixed => name.starts_with(&b.name),
            _ => false,
        }
    }

    fn matches_entry(&self, b: &AclBinding) -> bool {
        self.principal.as_ref().is_none_or(|p| *p == b.principal)
            && self.host.as_ref().is_none_or(|h| *h == b.host)
            && (self.operation == AclOperation::Any || self.operation == b.operation)
            && (self.permission == PermissionType::Any || self.permission == b.permission)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(name: &str, pattern: PatternType) -> AclBinding {
        AclBinding {
            resource_type: ResourceType::Topic,
            name: name.into(),
            pattern_type: pattern,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: AclOperation::Read,
            permission: PermissionType::Allow,
        }
    }

    fn filter(name: Option<&str>, pattern: PatternType) -> AclFilter {
        AclFilter {
            resource_type: ResourceType::Topic,
            name: name.map(str::to_string),
            pattern_type: pattern,
            principal: None,
            host: None,
            operation: AclOperation::Any,
            permission: PermissionType::Any,
        }
    }

    #[test]
    fn filters_match_like_kafka() {
        let lit = binding("orders", PatternType::Literal);
        let pre = binding("ord", PatternType::Prefixed);
        let star = binding("*", PatternType::Literal);
        let m = filter(Some("orders"), PatternType::Match);
        assert!(m.matches(&lit) && m.matches(&pre) && m.matches(&star));
        let l = filter(Some("orders"), PatternType::Literal);
        assert!(l.matches(&lit) && !l.matches(&pre) && !l.matches(&star));
        let any = filter(Some("ord"), PatternType::Any);
        assert!(!any.matches(&lit) && any.matches(&pre));
        assert!(filter(None, PatternType::Any).matches(&star));
        let mut by_principal = filter(None, PatternType::Any);
        by_principal.principal = Some("User:bob".into());
        assert!(!by_principal.matches(&lit));
        assert_eq!(AclOperation::from_code(10), AclOperation::DescribeConfigs);
        assert_eq!(AclOperation::from_code(99), AclOperation::Unknown);
        let json = serde_json::to_string(&lit).unwrap();
        assert!(
            json.contains("\"TOPIC\"") && json.contains("\"ALLOW\""),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<AclBinding>(&json).unwrap(), lit);
    }

    #[test]
    fn operation_bitmasks_match_kafka() {
        let mask = |t: ResourceType| {
            t.supported_operations()
                .iter()
                .fold(0i32, |m, o| m | 1 << o.code())
        };
        assert_eq!(mask(ResourceType::Cluster), 0x1FA0);
        assert_eq!(mask(ResourceType::Topic), 0xDF8);
        assert_eq!(mask(ResourceType::Group), 0xD48);
    }
}
