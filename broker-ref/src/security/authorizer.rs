//! The authorizer, with Kafka's `StandardAuthorizer` semantics (KIP-801): `super.users`, LITERAL
//! (including `*`) and PREFIXED patterns, DENY wins, host matching, `User:*`, the implied
//! operations (DESCRIBE from READ / WRITE / DELETE / ALTER, DESCRIBE_CONFIGS from ALTER_CONFIGS,
//! ALL), `allow.everyone.if.no.acl.found` for a resource no ACL names, and
//! `authorizeByResourceType`. ACLs are durable: `security-acls.json` in the data directory,
//! replaced atomically (the cluster work moves them into the metadata log as
//! `AccessControlEntryRecord`s).

use std::collections::HashSet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use super::acl::*;
use super::principal::Principal;
use crate::config::BrokerConfig;
use crate::{Error, Result};

/// The file name in the data directory.
pub const FILE: &str = "security-acls.json";

/// The accepted `authorizer.class.name`.
pub const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// What a check is about.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// Who.
    pub principal: &'a Principal,
    /// From where.
    pub host: IpAddr,
}

/// StandardAuthorizer.
#[derive(Debug)]
pub struct Authorizer {
    super_users: HashSet<String>,
    allow_if_no_acl: bool,
    acls: RwLock<Vec<AclBinding>>,
    path: Option<PathBuf>,
}

fn host_matches(acl_host: &str, host: IpAddr) -> bool {
    if acl_host == WILDCARD {
        return true;
    }
    match acl_host.parse::<IpAddr>() {
        Ok(ip) => ip == host,
        Err(_) => acl_host == host.to_string(),
    }
}

impl Authorizer {
    /// The configured authorizer: `None` without `authorizer.class.name`; Kafka 3's
    /// `AclAuthorizer` and any other class are refused, as Kafka 4 refuses ZooKeeper-era ones.
    pub fn from_config(config: &BrokerConfig, dir: Option<&Path>) -> Result<Option<Authorizer>> {
        const KEY: &str = "authorizer.class.name";
        let class = config.get(KEY).trim();
        match class {
            "" => return Ok(None),
            STANDARD_AUTHORIZER => {}
            "kafka.security.authorizer.AclAuthorizer" => {
                return Err(Error::config(
                    KEY,
                    "kafka.security.authorizer.AclAuthorizer is not supported in KRaft mode (Kafka 4 removed it with ZooKeeper); use org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                ))
            }
            other => {
                return Err(Error::config(
                    KEY,
                    format!("{other} is not supported; the only authorizer is {STANDARD_AUTHORIZER}"),
                ))
            }
        }
        let super_users = config
            .get("super.users")
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                Principal::parse(s)
                    .map(|p| p.to_string())
                    .ok_or_else(|| Error::config("super.users", format!("`{s}` is not Type:name")))
            })
            .collect::<Result<HashSet<_>>>()?;
        let mut a = Authorizer {
            super_users,
            allow_if_no_acl: config.bool("allow.everyone.if.no.acl.found"),
            acls: RwLock::new(Vec::new()),
            path: dir.map(|d| d.join(FILE)),
        };
        if let Some(path) = &a.path {
            match std::fs::read(path) {
                Ok(bytes) => {
                    let acls: Vec<AclBinding> = serde_json::from_slice(&bytes).map_err(|e| {
                        Error::config(path.display().to_string(), format!("corrupt ACL file: {e}"))
                    })?;
                    a.acls = RwLock::new(acls);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Some(a))
    }

    /// An authorizer with the given settings and no file (tests).
    pub fn in_memory(super_users: &[&str], allow_if_no_acl: bool) -> Authorizer {
        Authorizer {
            super_users: super_users.iter().map(|s| s.to_string()).collect(),
            allow_if_no_acl,
            acls: RwLock::new(Vec::new()),
            path: None,
        }
    }

    fn persist(&self, acls: &[AclBinding]) -> Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let bytes =
            serde_json::to_vec_pretty(acls).map_err(|e| Error::Io(std::io::Error::other(e)))?;
        crate::partition::write_meta(path, &bytes)
    }

    /// Whether `who` is a super user.
    pub fn is_super_user(&self, who: &Principal) -> bool {
        self.super_users.contains(&who.to_string())
    }

    /// Whether `who` may do `op` on the resource `(rtype, name)`.
    pub fn authorize(
        &self,
        who: Subject<'_>,
        op: AclOperation,
        rtype: ResourceType,
        name: &str,
    ) -> bool {
        if self.is_super_user(who.principal) {
            return true;
        }
        let principal = who.principal.to_string();
        let acls = self.acls.read().unwrap_or_else(|e| e.into_inner());
        let mut has_resource_acls = false;
        let mut allowed = false;
        for acl in acls.iter().filter(|a| a.resource_type == rtype) {
            let name_matches = match acl.pattern_type {
                PatternType::Literal => acl.name == name || acl.name == WILDCARD,
                PatternType::Prefixed => name.starts_with(&acl.name),
                _ => false,
            };
            if !name_matches {
                continue;
            }
            has_resource_acls = true;
            if acl.principal != principal && acl.principal != WILDCARD_PRINCIPAL {
                continue;
            }
            if !host_matches(&acl.host, who.host) {
                continue;
            }
            let op_matches = acl.operation == AclOperation::All
                || acl.operation == op
                || (acl.permission == PermissionType::Allow && implies(acl.operation, op));
            if !op_matches {
                continue;
            }
            match acl.permission {
                PermissionType::Deny => return false,
                PermissionType::Allow => allowed = true,
                _ => {}
            }
        }
        if allowed {
            true
        } else if !has_resource_acls {
            self.allow_if_no_acl
        } else {
            false
        }
    }

    /// Kafka's `authorizeByResourceType`: may `who` do `op` on *some* resource of `rtype` (an
    /// ALLOW pattern not covered by a DENY)?
    pub fn authorize_by_resource_type(
        &self,
        who: Subject<'_>,
        op: AclOperation,
        rtype: ResourceType,
    ) -> bool {
        if self.authorize(who, op, rtype, "hardcode") {
            return true;
        }
        let principal = who.principal.to_string();
        let acls = self.acls.read().unwrap_or_else(|e| e.into_inner());
        let mut deny_literal = HashSet::new();
        let mut deny_prefixed = HashSet::new();
        let mut allow = Vec::new();
        for b in acls.iter().filter(|b| b.resource_type == rtype) {
            if !host_matches(&b.host, who.host) {
                continue;
            }
            if b.principal != principal && b.principal != WILDCARD_PRINCIPAL {
                continue;
            }
            if b.operation != op && b.operation != AclOperation::All {
                continue;
            }
            match (b.permission, b.pattern_type) {
                (PermissionType::Deny, PatternType::Literal) if b.name == WILDCARD => return false,
                (PermissionType::Deny, PatternType::Literal) => {
                    deny_literal.insert(b.name.clone());
                }
                (PermissionType::Deny, PatternType::Prefixed) => {
                    deny_prefixed.insert(b.name.clone());
                }
                (PermissionType::Allow, PatternType::Literal) if b.name == WILDCARD => return true,
                (PermissionType::Allow, p @ (PatternType::Literal | PatternType::Prefixed)) => {
                    allow.push((p, b.name.clone()))
                }
                _ => {}
            }
        }
        allow.iter().any(|(p, name)| {
            if *p == PatternType::Literal && deny_literal.contains(name) {
                return false;
            }
            !(1..=name.len())
                .filter(|i| name.is_char_boundary(*i))
                .any(|i| deny_prefixed.contains(&name[..i]))
        })
    }

    /// Kafka's `authorized_operations` bitmask for a resource: bit `code` set for each of the
    /// type's supported operations `who` may do.
    pub fn authorized_operations(&self, who: Subject<'_>, rtype: ResourceType, name: &str) -> i32 {
        rtype
            .supported_operations()
            .iter()
            .filter(|op| self.authorize(who, **op, rtype, name))
            .fold(0, |mask, op| mask | 1 << op.code())
    }

    /// Every ACL, in creation order.
    pub fn bindings(&self) -> Vec<AclBinding> {
        self.acls.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces every ACL with `acls` without writing the local file (cluster mode: the
    /// metadata log holds them).
    pub fn replace_all(&self, acls: Vec<AclBinding>) {
        *self.acls.write().unwrap_or_else(|e| e.into_inner()) = acls;
    }

    /// Adds ACLs (already validated), persisting once; existing ones are not duplicated.
    pub fn create(&self, bindings: &[AclBinding]) -> Result<()> {
        let mut acls = self.acls.write().unwrap_or_else(|e| e.into_inner());
        let mut next = acls.clone();
        for b in bindings {
            if !next.contains(b) {
                next.push(b.clone());
            }
        }
        self.persist(&next)?;
        *acls = next;
        Ok(())
    }

    /// The ACLs a filter matches.
    pub fn describe(&self, filter: &AclFilter) -> Vec<AclBinding> {
        let acls = self.acls.read().unwrap_or_else(|e| e.into_inner());
        acls.iter().filter(|b| filter.matches(b)).cloned().collect()
    }

    /// Removes what each filter matches, persisting once; returns each filter's removals.
    pub fn delete(&self, filters: &[AclFilter]) -> Result<Vec<Vec<AclBinding>>> {
        let mut acls = self.acls.write().unwrap_or_else(|e| e.into_inner());
        let removed: Vec<Vec<AclBinding>> = filters
            .iter()
            .map(|f| acls.iter().filter(|b| f.matches(b)).cloned().collect())
            .collect();
        let next: Vec<AclBinding> = acls
            .iter()
            .filter(|b| !filters.iter().any(|f| f.matches(b)))
            .cloned()
            .collect();
        self.persist(&next)?;
        *acls = next;
        Ok(removed)
    }
}

/// Whether an ALLOW of `granted` implies `wanted`.
fn implies(granted: AclOperation, wanted: AclOperation) -> bool {
    use AclOperation::*;
    match wanted {
        Describe => matches!(granted, Describe | Read | Write | Delete | Alter),
        DescribeConfigs => matches!(granted, DescribeConfigs | AlterConfigs),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(
        rtype: ResourceType,
        name: &str,
        pattern: PatternType,
        who: &str,
        op: AclOperation,
        perm: PermissionType,
    ) -> AclBinding {
        AclBinding {
            resource_type: rtype,
            name: name.into(),
            pattern_type: pattern,
            principal: who.into(),
            host: "*".into(),
            operation: op,
            permission: perm,
        }
    }

    #[test]
    fn standard_authorizer_semantics() {
        use AclOperation::*;
        use PatternType::*;
        use PermissionType::*;
        use ResourceType::*;
        let a = Authorizer::in_memory(&["User:admin"], false);
        let alice = Principal::user("alice");
        let admin = Principal::user("admin");
        let host: IpAddr = "127.0.0.1".parse().unwrap();
        let who = Subject {
            principal: &alice,
            host,
        };
        assert!(
            !a.authorize(who, Read, Topic, "t"),
            "no ACL, allow.everyone false"
        );
        assert!(a.authorize(
            Subject {
                principal: &admin,
                host
            },
            Alter,
            Cluster,
            CLUSTER_NAME
        ));
        a.create(&[
            acl(Topic, "orders-", Prefixed, "User:alice", Read, Allow),
            acl(Topic, "orders-secret", Literal, "User:alice", Read, Deny),
            acl(Topic, "*", Literal, "User:*", Write, Allow),
            acl(Group, "g", Literal, "User:alice", All, Allow),
        ])
        .unwrap();
        assert!(a.authorize(who, Read, Topic, "orders-1"));
        assert!(
            a.authorize(who, Describe, Topic, "orders-1"),
            "READ implies DESCRIBE"
        );
        assert!(!a.authorize(who, Read, Topic, "orders-secret"), "DENY wins");
        assert!(
            a.authorize(who, Describe, Topic, "orders-secret"),
            "a DENY READ does not deny DESCRIBE"
        );
        assert!(
            a.authorize(who, Write, Topic, "anything"),
            "wildcard name and principal"
        );
        assert!(!a.authorize(who, Read, Topic, "anything"));
        assert!(a.authorize(who, Delete, Group, "g"), "ALL");
        assert!(!a.authorize(who, Read, Group, "other"));
        assert_eq!(a.authorized_operations(who, Group, "g"), 0xD48);
        assert!(a.authorize_by_resource_type(who, Read, Topic));
        assert!(!a.authorize_by_resource_type(who, Create, Topic));
        let other: IpAddr = "10.0.0.1".parse().unwrap();
        a.create(&[AclBinding {
            host: "127.0.0.1".into(),
            ..acl(Topic, "h", Literal, "User:alice", Read, Allow)
        }])
        .unwrap();
        assert!(a.authorize(who, Read, Topic, "h"));
        assert!(!a.authorize(
            Subject {
                principal: &alice,
                host: other
            },
            Read,
            Topic,
            "h"
        ));
        let none = Authorizer::in_memory(&[], true);
        assert!(
            none.authorize(who, Read, Topic, "t"),
            "allow.everyone.if.no.acl.found"
        );
        none.create(&[acl(Topic, "t", Literal, "User:bob", Read, Allow)])
            .unwrap();
        assert!(
            !none.authorize(who, Read, Topic, "t"),
            "the resource has ACLs now"
        );
        assert!(none.authorize(who, Read, Topic, "u"));
    }

    #[test]
    fn acls_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let config =
            BrokerConfig::from_entries([("authorizer.class.name", STANDARD_AUTHORIZER)]).unwrap();
        let a = Authorizer::from_config(&config, Some(dir.path()))
            .unwrap()
            .unwrap();
        let b = acl(
            ResourceType::Topic,
            "t",
            PatternType::Literal,
            "User:alice",
            AclOperation::Read,
            PermissionType::Allow,
        );
        a.create(std::slice::from_ref(&b)).unwrap();
        let again = Authorizer::from_config(&config, Some(dir.path()))
            .unwrap()
            .unwrap();
        let all = AclFilter {
            resource_type: ResourceType::Any,
            name: None,
            pattern_type: PatternType::Any,
            principal: None,
            host: None,
            operation: AclOperation::Any,
            permission: PermissionType::Any,
        };
        assert_eq!(again.describe(&all), vec![b]);
        assert_eq!(
            again.delete(std::slice::from_ref(&all)).unwrap()[0].len(),
            1
        );
        assert!(Authorizer::from_config(&config, Some(dir.path()))
            .unwrap()
            .unwrap()
            .describe(&all)
            .is_empty());
        let zk = BrokerConfig::from_entries([(
            "authorizer.class.name",
            "kafka.security.authorizer.AclAuthorizer",
        )])
        .unwrap();
        assert!(Authorizer::from_config(&zk, None)
            .unwrap_err()
            .to_string()
            .contains("KRaft"));
    }
}
