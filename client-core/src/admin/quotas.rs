//! DescribeClientQuotas and AlterClientQuotas (KIP-546), sent to any broker as Kafka's clients
//! do (in KRaft a broker answers describes from its metadata and forwards alterations).
//!
//! An alteration is a mutation: only "wrong broker" and throttling answers are retried.

use std::collections::{BTreeMap, VecDeque};

use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::{AlterClientQuotasRequest, DescribeClientQuotasRequest};
use kafka_protocol::protocol::StrBytes;

use super::client::Admin;
use super::driver::{self, all_to, retry_mutation, retry_read, Call, Outcome, Route};
use crate::net::Connection;
use crate::{Error, Result};

/// A quota entity: entity type (`user`, `client-id`, `ip`) to name, `None` for the type's
/// default (Java's `ClientQuotaEntity`).
pub type QuotaEntity = BTreeMap<String, Option<String>>;

/// How one component of a [`QuotaFilter`] matches (Java's `ClientQuotaFilterComponent`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuotaMatch {
    /// Exactly this name.
    Exact(String),
    /// The type's default entity.
    Default,
    /// Any entity that has the type (named or default).
    Any,
}

/// Which quota entities DescribeClientQuotas returns (Java's `ClientQuotaFilter`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuotaFilter {
    /// (entity type, match): every component must match.
    pub components: Vec<(String, QuotaMatch)>,
    /// Only entities with no component beyond those named.
    pub strict: bool,
}

impl QuotaFilter {
    /// Every entity (`ClientQuotaFilter.all()`).
    pub fn all() -> QuotaFilter {
        QuotaFilter::default()
    }
}

/// One entity's changes: key to new value, `None` to remove the key (Java's
/// `ClientQuotaAlteration`).
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaAlteration {
    /// The entity.
    pub entity: QuotaEntity,
    /// (key, value or `None` to remove), e.g. `("producer_byte_rate", Some(1048576.0))`.
    pub ops: Vec<(String, Option<f64>)>,
}

/// A quota entity from an answer's (type, name) components.
fn entity_of<'a>(
    components: impl Iterator<Item = (&'a StrBytes, Option<&'a StrBytes>)>,
) -> QuotaEntity {
    components
        .map(|(t, n)| (t.to_string(), n.map(|n| n.to_string())))
        .collect()
}

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

struct DescribeQuotas<'a> {
    filter: &'a QuotaFilter,
}

impl Call for DescribeQuotas<'_> {
    type Output = Vec<(QuotaEntity, BTreeMap<String, f64>)>;

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        Ok(all_to(admin.any_node().await?, pending))
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<Self::Output>)>> {
        let components = self
            .filter
            .components
            .iter()
            .map(|(entity_type, m)| {
                let (match_type, name) = match m {
                    QuotaMatch::Exact(n) => (0, Some(sb(n))),
                    QuotaMatch::Default => (1, None),
                    QuotaMatch::Any => (2, None),
                };
                ComponentData::default()
                    .with_entity_type(sb(entity_type))
                    .with_match_type(match_type)
                    .with_match(name)
            })
            .collect();
        let request = DescribeClientQuotasRequest::default()
            .with_components(components)
            .with_strict(self.filter.strict);
        let response = connection.send(&request).await?;
        let outcome = match Error::from_response(
            response.error_code,
            response.error_message.as_ref().map(|m| m.as_str()),
        ) {
            Err(e) if retry_read(e.kafka_code()) => Outcome::Retry(e),
            Err(e) => Outcome::Done(Err(e)),
            Ok(()) => {
                let entries = response
                    .entries
                    .unwrap_or_default()
                    .into_iter()
                    .map(|e| {
                        let entity = entity_of(
                            e.entity
                                .iter()
                                .map(|c| (&c.entity_type, c.entity_name.as_ref())),
                        );
                        let values = e
                            .values
                            .iter()
                            .map(|v| (v.key.to_string(), v.value))
                            .collect();
                        (entity, values)
                    })
                    .collect();
                Outcome::Done(Ok(entries))
            }
        };
        Ok(items
            .iter()
            .map(|&i| (i, outcome_clone(&outcome)))
            .collect())
    }
}

/// The one outcome of a single-item call, for each item (there is only ever one).
fn outcome_clone<T: Clone>(o: &Outcome<T>) -> Outcome<T> {
    match o {
        Outcome::Done(Ok(v)) => Outcome::Done(Ok(v.clone())),
        Outcome::Done(Err(e)) => Outcome::Done(Err(e.duplicate())),
        Outcome::Retry(e) => Outcome::Retry(e.duplicate()),
    }
}

struct AlterQuotas<'a> {
    alterations: &'a [QuotaAlteration],
    validate_only: bool,
}

impl Call for AlterQuotas<'_> {
    type Output = ();

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        Ok(all_to(admin.any_node().await?, pending))
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<()>)>> {
        let entries = items
            .iter()
            .map(|&i| {
                let a = &self.alterations[i];
                EntryData::default()
                    .with_entity(
                        a.entity
                            .iter()
                            .map(|(t, n)| {
                                EntityData::default()
                                    .with_entity_type(sb(t))
                                    .with_entity_name(n.as_deref().map(sb))
                            })
                            .collect(),
                    )
                    .with_ops(
                        a.ops
                            .iter()
                            .map(|(k, v)| {
                                OpData::default()
                                    .with_key(sb(k))
                                    .with_value(v.unwrap_or(0.0))
                                    .with_remove(v.is_none())
                            })
                            .collect(),
                    )
            })
            .collect();
        let request = AlterClientQuotasRequest::default()
            .with_entries(entries)
            .with_validate_only(self.validate_only);
        let response = connection.send(&request).await?;
        // Matched by entity, as Java's client does: Kafka's controller answers in no particular
        // order (it keys the results by entity), and once for an entity given twice.
        let mut answers: BTreeMap<QuotaEntity, VecDeque<_>> = BTreeMap::new();
        for a in response.entries {
            let entity = entity_of(
                a.entity
                    .iter()
                    .map(|c| (&c.entity_type, c.entity_name.as_ref())),
            );
            answers.entry(entity).or_default().push_back(a);
        }
        Ok(items
            .iter()
            .map(|&i| {
                let answer = answers.get_mut(&self.alterations[i].entity).and_then(|q| {
                    if q.len() > 1 {
                        q.pop_front()
                    } else {
                        q.front().cloned()
                    }
                });
                let outcome = match answer {
                    None => Outcome::Done(Err(Error::malformed(
                        "AlterClientQuotas response",
                        "no result for an entity",
                    ))),
                    Some(a) => match Error::from_response(
                        a.error_code,
                        a.error_message.as_ref().map(|m| m.as_str()),
                    ) {
                        Ok(()) => Outcome::Done(Ok(())),
                        Err(e) if retry_mutation(e.kafka_code()) => Outcome::Retry(e),
                        Err(e) => Outcome::Done(Err(e)),
                    },
                };
                (i, outcome)
            })
            .collect())
    }
}

impl Admin {
    /// The configured client quotas of the entities `filter` selects, with their values.
    /// Errors: INVALID_REQUEST for a malformed filter, UNSUPPORTED_VERSION for an unknown
    /// entity type, CLUSTER_AUTHORIZATION_FAILED without DESCRIBE_CONFIGS on the cluster.
    pub async fn describe_client_quotas(
        &self,
        filter: &QuotaFilter,
    ) -> Result<Vec<(QuotaEntity, BTreeMap<String, f64>)>> {
        let results = driver::run(self, &DescribeQuotas { filter }, 1).await?;
        results
            .into_iter()
            .next()
            .unwrap_or_else(|| Err(Error::malformed("admin call", "no result")))
    }

    /// Sets or removes client quotas. Per alteration: `Ok`, or the broker's refusal
    /// (INVALID_REQUEST with Kafka's message for an unknown key or entity type, a value that is
    /// not positive or not whole where the key needs it; CLUSTER_AUTHORIZATION_FAILED). With
    /// `validate_only` nothing changes.
    pub async fn alter_client_quotas(
        &self,
        alterations: &[QuotaAlteration],
        validate_only: bool,
    ) -> Result<Vec<(QuotaEntity, Result<()>)>> {
        let call = AlterQuotas {
            alterations,
            validate_only,
        };
        let results = driver::run(self, &call, alterations.len()).await?;
        Ok(alterations
            .iter()
            .map(|a| a.entity.clone())
            .zip(results)
            .collect())
    }
}
