//! Client quotas (KIP-546): the core's `describe_client_quotas` / `alter_client_quotas`, behind
//! the Kotlin `Admin.describeClientQuotas` / `alterClientQuotas` (the Java client's calls, with
//! its `org.apache.kafka.common.quota` classes mirrored in Kotlin).

use std::collections::HashMap;

use odradek::admin::{QuotaAlteration as CoreAlteration, QuotaEntity, QuotaFilter, QuotaMatch};

use super::NativeAdmin;
use crate::error::info_of;
use crate::spawn::on_runtime;
use crate::{ErrorInfo, NativeError};

/// One component of a quota entity.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct QuotaEntityPart {
    /// Entity type: `user`, `client-id` or `ip`.
    pub entity_type: String,
    /// Its name; `null` for the type's default entity.
    pub entity_name: Option<String>,
}

/// How a filter component matches (Java's `ClientQuotaFilterComponent`).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Enum)]
pub enum QuotaNameMatch {
    /// This name exactly.
    Exact {
        /// The name.
        name: String,
    },
    /// The type's default entity.
    Default,
    /// Any entity that has the type.
    Any,
}

/// One component of a describe filter.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct QuotaFilterPart {
    /// Entity type.
    pub entity_type: String,
    /// How its name matches.
    pub matching: QuotaNameMatch,
}

/// A described entity and its quotas.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct QuotaEntry {
    /// The entity's components.
    pub entity: Vec<QuotaEntityPart>,
    /// Quota key to value.
    pub values: HashMap<String, f64>,
}

/// One change: a key and its new value, `null` to remove it.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct QuotaOp {
    /// Key, e.g. `producer_byte_rate`.
    pub key: String,
    /// New value; `null` removes the key.
    pub value: Option<f64>,
}

/// One entity's changes.
#[derive(Debug, Clone, PartialEq, uniffi::Record)]
pub struct QuotaChange {
    /// The entity.
    pub entity: Vec<QuotaEntityPart>,
    /// The changes.
    pub ops: Vec<QuotaOp>,
}

/// One alteration's outcome.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct QuotaResult {
    /// The entity.
    pub entity: Vec<QuotaEntityPart>,
    /// Its error (INVALID_REQUEST for a bad key, value or entity type); `null` on success.
    pub error: Option<ErrorInfo>,
}

fn to_core(parts: Vec<QuotaEntityPart>) -> QuotaEntity {
    parts
        .into_iter()
        .map(|p| (p.entity_type, p.entity_name))
        .collect()
}

fn from_core(e: QuotaEntity) -> Vec<QuotaEntityPart> {
    e.into_iter()
        .map(|(entity_type, entity_name)| QuotaEntityPart {
            entity_type,
            entity_name,
        })
        .collect()
}

#[uniffi::export]
impl NativeAdmin {
    /// The quotas of the entities the filter selects (`strict`: only entities with no
    /// component beyond those named). Throws INVALID_REQUEST for a malformed filter,
    /// UNSUPPORTED_VERSION for an unknown entity type.
    pub async fn describe_client_quotas(
        &self,
        components: Vec<QuotaFilterPart>,
        strict: bool,
    ) -> Result<Vec<QuotaEntry>, NativeError> {
        let admin = self.admin.clone();
        let filter = QuotaFilter {
            components: components
                .into_iter()
                .map(|c| {
                    let m = match c.matching {
                        QuotaNameMatch::Exact { name } => QuotaMatch::Exact(name),
                        QuotaNameMatch::Default => QuotaMatch::Default,
                        QuotaNameMatch::Any => QuotaMatch::Any,
                    };
                    (c.entity_type, m)
                })
                .collect(),
            strict,
        };
        let found = on_runtime(async move { admin.describe_client_quotas(&filter).await })
            .await?
            .map_err(|e| NativeError::core(&e))?;
        Ok(found
            .into_iter()
            .map(|(entity, values)| QuotaEntry {
                entity: from_core(entity),
                values: values.into_iter().collect(),
            })
            .collect())
    }

    /// Sets or removes quotas (with `validate_only`, only checks them); one result per
    /// change, in order.
    pub async fn alter_client_quotas(
        &self,
        changes: Vec<QuotaChange>,
        validate_only: bool,
    ) -> Result<Vec<QuotaResult>, NativeError> {
        let admin = self.admin.clone();
        let list: Vec<CoreAlteration> = changes
            .into_iter()
            .map(|c| CoreAlteration {
                entity: to_core(c.entity),
                ops: c.ops.into_iter().map(|o| (o.key, o.value)).collect(),
            })
            .collect();
        let done = on_runtime(async move { admin.alter_client_quotas(&list, validate_only).await })
            .await?
            .map_err(|e| NativeError::core(&e))?;
        Ok(done
            .into_iter()
            .map(|(entity, r)| QuotaResult {
                entity: from_core(entity),
                error: r.err().map(|e| info_of(&e)),
            })
            .collect())
    }
}
