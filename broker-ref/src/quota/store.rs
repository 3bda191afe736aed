//! The configured client quotas, durable: `client-quotas.json` in the data directory, replaced
//! atomically on every change (the cluster issue moves them into the metadata log as
//! `ClientQuotaRecord`s). AlterClientQuotas and DescribeClientQuotas semantics are Kafka's
//! (`ClientQuotaControlManager`, `ClientQuotasImage.describe`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};

use super::entity::{entity_from_wire, keys_for, validate_value, Entity, CLIENT_ID, IP, USER};
use crate::{Error, Result};

/// The file in the data directory.
pub const FILE: &str = "client-quotas.json";

/// Quota values per entity.
pub type QuotaMap = BTreeMap<Entity, BTreeMap<String, f64>>;

/// The entities a describe found, with their values.
pub type Described = Vec<(Entity, BTreeMap<String, f64>)>;

/// One alteration of AlterClientQuotas: an entity (wire components) and its operations
/// (`None` removes the key).
#[derive(Debug, Clone)]
pub struct Alteration {
    /// (entity type, name; `None` for the default).
    pub components: Vec<(String, Option<String>)>,
    /// (key, value to set or `None` to remove).
    pub ops: Vec<(String, Option<f64>)>,
}

/// A Kafka error for one alteration or a whole describe: INVALID_REQUEST unless said otherwise.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaError {
    /// The error code.
    pub code: odradek::ErrorCode,
    /// Kafka's message.
    pub message: String,
}

impl QuotaError {
    fn invalid(message: impl Into<String>) -> QuotaError {
        QuotaError {
            code: odradek::ErrorCode::InvalidRequest,
            message: message.into(),
        }
    }
}

/// How one DescribeClientQuotas filter component matches (the wire's `match_type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Match {
    /// `0`: this exact name.
    Exact(String),
    /// `1`: the default entity of the type.
    Default,
    /// `2`: any entity that has the type.
    Specified,
}

#[derive(Serialize, Deserialize)]
struct Stored {
    entity: Entity,
    values: BTreeMap<String, f64>,
}

/// The configured quotas.
#[derive(Debug)]
pub struct QuotaStore {
    path: Option<PathBuf>,
    quotas: RwLock<Arc<QuotaMap>>,
}

impl QuotaStore {
    /// Loads `client-quotas.json` from `dir` (none there: no quotas); `None` keeps them in
    /// memory only.
    pub fn open(dir: Option<&Path>) -> Result<QuotaStore> {
        let path = dir.map(|d| d.join(FILE));
        let mut quotas = QuotaMap::new();
        if let Some(p) = &path {
            match std::fs::read(p) {
                Ok(bytes) => {
                    let stored: Vec<Stored> = serde_json::from_slice(&bytes).map_err(|e| {
                        Error::Io(std::io::Error::other(format!("{}: {e}", p.display())))
                    })?;
                    for s in stored {
                        quotas.insert(s.entity, s.values);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(QuotaStore {
            path,
            quotas: RwLock::new(Arc::new(quotas)),
        })
    }

    /// The current quotas (a snapshot: alterations replace it).
    pub fn snapshot(&self) -> Arc<QuotaMap> {
        self.quotas
            .read()
            .map_or_else(|p| p.into_inner().clone(), |q| q.clone())
    }

    /// Applies AlterClientQuotas: every alteration is checked; the valid ones are applied
    /// together (unless `validate_only`) and persisted. One result per alteration, in order.
    pub fn alter(
        &self,
        alterations: &[Alteration],
        validate_only: bool,
    ) -> Result<Vec<std::result::Result<(), QuotaError>>> {
        let mut guard = self
            .quotas
            .write()
            .map_err(|_| Error::Io(std::io::Error::other("quota store lock poisoned")))?;
        let mut next: QuotaMap = (**guard).clone();
        let mut seen: Vec<Entity> = Vec::new();
        let mut results = Vec::with_capacity(alterations.len());
        for alteration in alterations {
            let outcome = check(alteration, &mut seen).map(|(entity, ops)| {
                let values = next.entry(entity.clone()).or_default();
                for (key, value) in ops {
                    match value {
                        Some(v) => values.insert(key, v),
                        None => values.remove(&key),
                    };
                }
                if values.is_empty() {
                    next.remove(&entity);
                }
            });
            results.push(outcome);
        }
        if !validate_only && next != **guard {
            self.persist(&next)?;
            *guard = Arc::new(next);
        }
        Ok(results)
    }

    fn persist(&self, quotas: &QuotaMap) -> Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let stored: Vec<Stored> = quotas
            .iter()
            .map(|(entity, values)| Stored {
                entity: entity.clone(),
                values: values.clone(),
            })
            .collect();
        let bytes =
            serde_json::to_vec_pretty(&stored).map_err(|e| Error::Io(std::io::Error::other(e)))?;
        crate::partition::write_meta(path, &bytes)
    }

    /// Replaces every quota with `quotas` (cluster mode: the metadata image's) and persists
    /// them when they changed.
    pub fn replace(&self, quotas: QuotaMap) -> Result<()> {
        let mut guard = self
            .quotas
            .write()
            .map_err(|_| Error::Io(std::io::Error::other("quota store lock poisoned")))?;
        if quotas != **guard {
            self.persist(&quotas)?;
            *guard = Arc::new(quotas);
        }
        Ok(())
    }

    /// Answers DescribeClientQuotas: the entities matching every component (and, if `strict`,
    /// having no other component), with their values.
    pub fn describe(
        &self,
        filter: &[(String, Match)],
        strict: bool,
    ) -> std::result::Result<Described, QuotaError> {
        let mut types: Vec<&str> = Vec::new();
        for (entity_type, _) in filter {
            if entity_type.is_empty() {
                return Err(QuotaError::invalid("Invalid empty entity type."));
            }
            if types.contains(&entity_type.as_str()) {
                return Err(QuotaError::invalid(format!(
                    "Entity type {entity_type} cannot appear more than once in the filter."
                )));
            }
            if ![USER, CLIENT_ID, IP].contains(&entity_type.as_str()) {
                return Err(QuotaError {
                    code: odradek::ErrorCode::UnsupportedVersion,
                    message: format!("Unsupported entity type {entity_type}"),
                });
            }
            types.push(entity_type);
        }
        if types.contains(&IP) && (types.contains(&USER) || types.contains(&CLIENT_ID)) {
            return Err(QuotaError::invalid(
                "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.",
            ));
        }
        let quotas = self.snapshot();
        Ok(quotas
            .iter()
            .filter(|(entity, _)| matches(entity, filter, strict))
            .map(|(e, v)| (e.clone(), v.clone()))
            .collect())
    }
}

fn matches(entity: &Entity, filter: &[(String, Match)], strict: bool) -> bool {
    if strict && entity.len() != filter.len() {
        return false;
    }
    filter.iter().all(|(entity_type, m)| {
        let Some(name) = entity.component(entity_type) else {
            return false;
        };
        match m {
            Match::Exact(n) => name.wire() == Some(n.as_str()),
            Match::Default => name.wire().is_none(),
            Match::Specified => true,
        }
    })
}

type CheckedOps = Vec<(String, Option<f64>)>;

/// Validates one alteration (Kafka's order of checks and messages).
fn check(
    alteration: &Alteration,
    seen: &mut Vec<Entity>,
) -> std::result::Result<(Entity, CheckedOps), QuotaError> {
    let entity = entity_from_wire(
        alteration
            .components
            .iter()
            .map(|(t, n)| (t.as_str(), n.as_deref())),
    )
    .map_err(QuotaError::invalid)?;
    let mut keys_seen: Vec<&str> = Vec::new();
    for (key, _) in &alteration.ops {
        if keys_seen.contains(&key.as_str()) {
            return Err(QuotaError::invalid(format!(
                "Duplicate quota key {key} not updating quota for this entity {}",
                entity.describe()
            )));
        }
        keys_seen.push(key);
    }
    if seen.contains(&entity) {
        return Err(QuotaError::invalid(format!(
            "Ignoring duplicate entity {}",
            entity.describe()
        )));
    }
    seen.push(entity.clone());
    let keys = keys_for(&entity).map_err(QuotaError::invalid)?;
    let mut ops = Vec::with_capacity(alteration.ops.len());
    for (key, value) in &alteration.ops {
        match value {
            None => ops.push((key.clone(), None)),
            Some(v) => {
                let name = validate_value(keys, key, *v).map_err(QuotaError::invalid)?;
                ops.push((name.to_string(), Some(*v)));
            }
        }
    }
    Ok((entity, ops))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::entity::Name;

    fn alteration(components: &[(&str, Option<&str>)], ops: &[(&str, Option<f64>)]) -> Alteration {
        Alteration {
            components: components
                .iter()
                .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
                .collect(),
            ops: ops.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn valid_alterations_apply_and_survive_a_reopen_while_bad_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = QuotaStore::open(Some(dir.path())).unwrap();
        let results = store
            .alter(
                &[
                    alteration(
                        &[(USER, Some("alice"))],
                        &[("producer_byte_rate", Some(1024.0))],
                    ),
                    alteration(&[(CLIENT_ID, None)], &[("consumer_byte_rate", Some(-1.0))]),
                    alteration(
                        &[("topic", Some("t"))],
                        &[("producer_byte_rate", Some(1.0))],
                    ),
                ],
                false,
            )
            .unwrap();
        assert!(results[0].is_ok());
        assert_eq!(
            results[1].as_ref().unwrap_err().code,
            odradek::ErrorCode::InvalidRequest
        );
        assert!(results[2]
            .as_ref()
            .unwrap_err()
            .message
            .contains("Unhandled"));
        let reopened = QuotaStore::open(Some(dir.path())).unwrap();
        let all = reopened.describe(&[], false).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].0.user, Some(Name::Named("alice".into())));
        assert_eq!(all[0].1["producer_byte_rate"], 1024.0);
        // Removing the last key removes the entity.
        reopened
            .alter(
                &[alteration(
                    &[(USER, Some("alice"))],
                    &[("producer_byte_rate", None)],
                )],
                false,
            )
            .unwrap();
        assert!(reopened.describe(&[], false).unwrap().is_empty());
    }

    #[test]
    fn validate_only_changes_nothing() {
        let store = QuotaStore::open(None).unwrap();
        let r = store
            .alter(
                &[alteration(
                    &[(USER, None)],
                    &[("request_percentage", Some(50.0))],
                )],
                true,
            )
            .unwrap();
        assert!(r[0].is_ok());
        assert!(store.describe(&[], false).unwrap().is_empty());
    }

    #[test]
    fn describe_filters_as_kafka_does() {
        let store = QuotaStore::open(None).unwrap();
        store
            .alter(
                &[
                    alteration(&[(USER, Some("a"))], &[("producer_byte_rate", Some(1.0))]),
                    alteration(
                        &[(USER, Some("a")), (CLIENT_ID, Some("c"))],
                        &[("producer_byte_rate", Some(2.0))],
                    ),
                    alteration(&[(USER, None)], &[("producer_byte_rate", Some(3.0))]),
                    alteration(
                        &[(CLIENT_ID, Some("c"))],
                        &[("producer_byte_rate", Some(4.0))],
                    ),
                ],
                false,
            )
            .unwrap();
        let f = |c: Vec<(&str, Match)>, strict| {
            store
                .describe(
                    &c.into_iter()
                        .map(|(t, m)| (t.to_string(), m))
                        .collect::<Vec<_>>(),
                    strict,
                )
                .unwrap()
                .len()
        };
        assert_eq!(f(vec![(USER, Match::Exact("a".into()))], false), 2);
        assert_eq!(f(vec![(USER, Match::Exact("a".into()))], true), 1);
        assert_eq!(f(vec![(USER, Match::Default)], false), 1);
        assert_eq!(f(vec![(USER, Match::Specified)], false), 3);
        assert_eq!(f(vec![(CLIENT_ID, Match::Specified)], true), 1);
        assert_eq!(f(vec![], false), 4);
        let err = store
            .describe(&[("group".into(), Match::Specified)], false)
            .unwrap_err();
        assert_eq!(err.code, odradek::ErrorCode::UnsupportedVersion);
        let err = store
            .describe(
                &[
                    (IP.into(), Match::Specified),
                    (USER.into(), Match::Specified),
                ],
                false,
            )
            .unwrap_err();
        assert_eq!(err.code, odradek::ErrorCode::InvalidRequest);
    }
}
