//! ACL values: resource types, pattern types, operations, permissions, bindings and filters,
//! with Kafka's wire numbers and names (`org.apache.kafka.common.acl` / `resource`).
//!
//! A wire value this client does not know is kept as `Unknown(n)` so an answer from a newer
//! broker is reported, not dropped.

use std::fmt;
use std::str::FromStr;

use crate::{Error, Result};

/// Declares a Kafka ACL enum: variants with wire values and names, plus `Unknown(i8)`.
macro_rules! acl_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $value:literal, $text:literal;)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
            /// A wire value this client does not know (Kafka's UNKNOWN is 0).
            Unknown(i8),
        }

        impl $name {
            /// Every known value, in wire order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The wire value.
            pub fn wire(self) -> i8 {
                match self {
                    $($name::$variant => $value,)*
                    $name::Unknown(v) => v,
                }
            }

            /// The value for a wire number (unknown numbers are kept).
            pub fn from_wire(value: i8) -> Self {
                match value {
                    $($value => $name::$variant,)*
                    other => $name::Unknown(other),
                }
            }

            /// Kafka's name for the value (`UNKNOWN` for unknown ones).
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                    $name::Unknown(_) => "UNKNOWN",
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl FromStr for $name {
            type Err = Error;

            /// Parses Kafka's name, case-insensitively, `-` and `_` alike (`prefixed`,
            /// `TRANSACTIONAL_ID`, `cluster-action`).
            fn from_str(s: &str) -> Result<Self> {
                let wanted = s.trim().to_ascii_uppercase().replace('-', "_");
                $name::ALL
                    .iter()
                    .copied()
                    .find(|v| v.name() == wanted)
                    .ok_or_else(|| {
                        Error::config(
                            stringify!($name),
                            format!("`{s}` is not one of {}", names($name::ALL)),
                        )
                    })
            }
        }
    };
}

fn names<T: Copy + fmt::Display>(all: &[T]) -> String {
    all.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

acl_enum! {
    /// The kind of resource an ACL protects.
    ResourceType {
        /// Matches any resource type (filters only).
        Any = 1, "ANY";
        /// A topic.
        Topic = 2, "TOPIC";
        /// A consumer group.
        Group = 3, "GROUP";
        /// The cluster (its name is always `kafka-cluster`).
        Cluster = 4, "CLUSTER";
        /// A transactional id.
        TransactionalId = 5, "TRANSACTIONAL_ID";
        /// A delegation token.
        DelegationToken = 6, "DELEGATION_TOKEN";
        /// A user (for delegation tokens on behalf of others).
        User = 7, "USER";
    }
}

acl_enum! {
    /// How an ACL's resource name is matched.
    PatternType {
        /// Matches any pattern type (filters only).
        Any = 1, "ANY";
        /// Matches every ACL that would apply to the named resource: literal, wildcard and
        /// prefixed ones (filters only).
        Match = 2, "MATCH";
        /// The name exactly (`*` is the wildcard).
        Literal = 3, "LITERAL";
        /// Every resource whose name starts with the name.
        Prefixed = 4, "PREFIXED";
    }
}

acl_enum! {
    /// The operation an ACL allows or denies.
    AclOperation {
        /// Matches any operation (filters only).
        Any = 1, "ANY";
        /// Every operation.
        All = 2, "ALL";
        /// Read.
        Read = 3, "READ";
        /// Write.
        Write = 4, "WRITE";
        /// Create.
        Create = 5, "CREATE";
        /// Delete.
        Delete = 6, "DELETE";
        /// Alter.
        Alter = 7, "ALTER";
        /// Describe.
        Describe = 8, "DESCRIBE";
        /// Inter-broker actions.
        ClusterAction = 9, "CLUSTER_ACTION";
        /// DescribeConfigs.
        DescribeConfigs = 10, "DESCRIBE_CONFIGS";
        /// AlterConfigs.
        AlterConfigs = 11, "ALTER_CONFIGS";
        /// Idempotent produce.
        IdempotentWrite = 12, "IDEMPOTENT_WRITE";
        /// Create delegation tokens.
        CreateTokens = 13, "CREATE_TOKENS";
        /// Describe delegation tokens.
        DescribeTokens = 14, "DESCRIBE_TOKENS";
        /// Two-phase commit transactions (KIP-939).
        TwoPhaseCommit = 15, "TWO_PHASE_COMMIT";
    }
}

acl_enum! {
    /// Whether an ACL allows or denies.
    AclPermission {
        /// Matches either (filters only).
        Any = 1, "ANY";
        /// Denies (wins over any ALLOW).
        Deny = 2, "DENY";
        /// Allows.
        Allow = 3, "ALLOW";
    }
}

/// One ACL: `principal` from `host` is allowed or denied `operation` on the resources
/// `resource_type` / `name` / `pattern_type` names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AclBinding {
    /// The resource type.
    pub resource_type: ResourceType,
    /// The resource name (`*` for every resource with [`PatternType::Literal`]).
    pub name: String,
    /// How `name` is matched: literal or prefixed.
    pub pattern_type: PatternType,
    /// The principal, e.g. `User:alice` (`User:*` for everyone).
    pub principal: String,
    /// The client host (`*` for any).
    pub host: String,
    /// The operation.
    pub operation: AclOperation,
    /// Allow or deny.
    pub permission: AclPermission,
}

impl AclBinding {
    /// Why this binding cannot be created, if it cannot: every field must be concrete (no
    /// ANY, MATCH or unknown value) and the principal must be `Type:name`.
    pub fn check_creatable(&self) -> Result<()> {
        let concrete = !matches!(
            self.resource_type,
            ResourceType::Any | ResourceType::Unknown(_)
        ) && matches!(
            self.pattern_type,
            PatternType::Literal | PatternType::Prefixed
        ) && !matches!(self.operation, AclOperation::Any | AclOperation::Unknown(_))
            && matches!(self.permission, AclPermission::Allow | AclPermission::Deny);
        if !concrete {
            return Err(invalid(format!(
                "an ACL to create needs concrete values, not {}/{}/{}/{}",
                self.resource_type, self.pattern_type, self.operation, self.permission
            )));
        }
        if self.name.is_empty() {
            return Err(invalid("an ACL's resource name must not be empty"));
        }
        check_principal(&self.principal)?;
        if self.host.is_empty() {
            return Err(invalid(
                "an ACL's host must not be empty (`*` for any host)",
            ));
        }
        Ok(())
    }
}

/// Selects ACLs: each field matches its value; `None` names and ANY values match everything,
/// and [`PatternType::Match`] selects every ACL that applies to the named resource.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AclBindingFilter {
    /// The resource type (ANY for every type).
    pub resource_type: ResourceType,
    /// The resource name (`None` for any).
    pub name: Option<String>,
    /// The pattern type (ANY for every type, MATCH for what applies to `name`).
    pub pattern_type: PatternType,
    /// The principal (`None` for any).
    pub principal: Option<String>,
    /// The host (`None` for any).
    pub host: Option<String>,
    /// The operation (ANY for every operation).
    pub operation: AclOperation,
    /// The permission (ANY for both).
    pub permission: AclPermission,
}

impl AclBindingFilter {
    /// The filter that matches every ACL.
    pub fn any() -> Self {
        AclBindingFilter {
            resource_type: ResourceType::Any,
            name: None,
            pattern_type: PatternType::Any,
            principal: None,
            host: None,
            operation: AclOperation::Any,
            permission: AclPermission::Any,
        }
    }

    /// Why the filter cannot be sent, if it cannot: unknown values match nothing Kafka
    /// stores, so Kafka's clients refuse them.
    pub fn check(&self) -> Result<()> {
        let unknown = matches!(self.resource_type, ResourceType::Unknown(_))
            || matches!(self.pattern_type, PatternType::Unknown(_))
            || matches!(self.operation, AclOperation::Unknown(_))
            || matches!(self.permission, AclPermission::Unknown(_));
        if unknown {
            return Err(invalid("an ACL filter must not contain UNKNOWN values"));
        }
        if let Some(p) = &self.principal {
            check_principal(p)?;
        }
        Ok(())
    }
}

impl From<&AclBinding> for AclBindingFilter {
    /// The filter that selects exactly this binding.
    fn from(b: &AclBinding) -> Self {
        AclBindingFilter {
            resource_type: b.resource_type,
            name: Some(b.name.clone()),
            pattern_type: b.pattern_type,
            principal: Some(b.principal.clone()),
            host: Some(b.host.clone()),
            operation: b.operation,
            permission: b.permission,
        }
    }
}

/// A principal must read `Type:name` (Kafka's `SecurityUtils.parseKafkaPrincipal`).
fn check_principal(principal: &str) -> Result<()> {
    match principal.split_once(':') {
        Some((kind, name)) if !kind.is_empty() && !name.is_empty() => Ok(()),
        _ => Err(invalid(format!(
            "principal `{principal}` must be Type:name, e.g. User:alice"
        ))),
    }
}

fn invalid(message: impl Into<String>) -> Error {
    Error::KafkaMessage {
        code: crate::ErrorCode::InvalidRequest,
        message: message.into(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn binding() -> AclBinding {
        AclBinding {
            resource_type: ResourceType::Topic,
            name: "orders".into(),
            pattern_type: PatternType::Literal,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: AclOperation::Read,
            permission: AclPermission::Allow,
        }
    }

    #[test]
    fn wire_values_and_names_round_trip() {
        for v in AclOperation::ALL {
            assert_eq!(AclOperation::from_wire(v.wire()), *v);
            assert_eq!(v.name().parse::<AclOperation>().unwrap(), *v);
        }
        assert_eq!(ResourceType::TransactionalId.wire(), 5);
        assert_eq!(PatternType::Prefixed.wire(), 4);
        assert_eq!(AclPermission::Allow.wire(), 3);
        assert_eq!(AclOperation::IdempotentWrite.wire(), 12);
        assert_eq!(AclOperation::from_wire(99), AclOperation::Unknown(99));
        assert_eq!(
            "cluster-action".parse::<AclOperation>().unwrap(),
            AclOperation::ClusterAction
        );
        let err = "reed".parse::<AclOperation>().unwrap_err().to_string();
        assert!(err.contains("READ"), "{err}");
    }

    #[test]
    fn only_concrete_bindings_are_creatable() {
        binding().check_creatable().unwrap();
        let mut b = binding();
        b.pattern_type = PatternType::Match;
        assert!(b.check_creatable().is_err());
        let mut b = binding();
        b.operation = AclOperation::Any;
        assert!(b.check_creatable().is_err());
        let mut b = binding();
        b.principal = "alice".into();
        let err = b.check_creatable().unwrap_err();
        assert_eq!(err.kafka_code(), crate::ErrorCode::InvalidRequest);
        assert!(err.to_string().contains("Type:name"), "{err}");
    }

    #[test]
    fn filters_with_unknown_values_are_refused() {
        AclBindingFilter::any().check().unwrap();
        AclBindingFilter::from(&binding()).check().unwrap();
        let mut f = AclBindingFilter::any();
        f.operation = AclOperation::Unknown(42);
        assert!(f.check().is_err());
        let mut f = AclBindingFilter::any();
        f.principal = Some("bob".into());
        assert!(f.check().is_err());
    }
}
