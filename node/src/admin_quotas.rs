//! Client quota calls of `NativeAdmin` (KIP-546's DescribeClientQuotas / AlterClientQuotas;
//! KafkaJS has none, `node/lib/admin.js` shapes them after the Java client's
//! `describeClientQuotas` / `alterClientQuotas`).

use std::collections::BTreeMap;

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;
use odradek::admin::{QuotaAlteration, QuotaEntity, QuotaFilter, QuotaMatch};

use crate::admin::{reason, NativeAdmin};
use crate::{error, rt};

/// One component of a quota entity: `user`, `client-id` or `ip`, and its name (null: the
/// type's default entity).
#[napi(object)]
pub struct QuotaEntityPart {
    /// Entity type.
    pub entity_type: String,
    /// Name; null for the default entity.
    pub entity_name: Option<String>,
}

/// One component of a describe filter.
#[napi(object)]
pub struct QuotaFilterPart {
    /// Entity type.
    pub entity_type: String,
    /// Kafka's match type: 0 exact name, 1 the default entity, 2 any entity of the type.
    pub match_type: i32,
    /// The name for an exact match.
    pub name: Option<String>,
}

/// A quota key and its value.
#[napi(object)]
pub struct QuotaValue {
    /// Key, e.g. `producer_byte_rate`.
    pub key: String,
    /// Value.
    pub value: f64,
}

/// A described entity and its quotas.
#[napi(object)]
pub struct QuotaEntry {
    /// The entity's components, by entity type.
    pub entity: Vec<QuotaEntityPart>,
    /// Its quotas, by key.
    pub values: Vec<QuotaValue>,
}

/// One change of an alteration.
#[napi(object)]
pub struct QuotaOpSpec {
    /// Key.
    pub key: String,
    /// New value; null removes the key.
    pub value: Option<f64>,
}

/// One entity's changes.
#[napi(object)]
pub struct QuotaAlterationSpec {
    /// The entity.
    pub entity: Vec<QuotaEntityPart>,
    /// Its changes.
    pub ops: Vec<QuotaOpSpec>,
}

fn entity(parts: Vec<QuotaEntityPart>) -> napi::Result<QuotaEntity> {
    let mut out = QuotaEntity::new();
    for p in parts {
        if out.contains_key(&p.entity_type) {
            return Err(error::invalid(format!(
                "Invalid quota entity, entity type {} appears more than once",
                p.entity_type
            )));
        }
        out.insert(p.entity_type, p.entity_name);
    }
    Ok(out)
}

fn parts(e: QuotaEntity) -> Vec<QuotaEntityPart> {
    e.into_iter()
        .map(|(entity_type, entity_name)| QuotaEntityPart {
            entity_type,
            entity_name,
        })
        .collect()
}

fn filter(components: Vec<QuotaFilterPart>, strict: bool) -> napi::Result<QuotaFilter> {
    let mut out = Vec::with_capacity(components.len());
    for c in components {
        let m = match (c.match_type, c.name) {
            (0, Some(n)) => QuotaMatch::Exact(n),
            (0, None) => {
                return Err(error::invalid(format!(
                    "Invalid quota filter, an exact match on {} needs a name",
                    c.entity_type
                )))
            }
            (1, _) => QuotaMatch::Default,
            (2, _) => QuotaMatch::Any,
            (t, _) => return Err(error::invalid(format!("Invalid quota match type {t}"))),
        };
        out.push((c.entity_type, m));
    }
    Ok(QuotaFilter {
        components: out,
        strict,
    })
}

#[napi]
impl NativeAdmin {
    /// DescribeClientQuotas: the entities the filter selects with their quotas (an error of
    /// the request rejects the promise).
    #[napi(ts_return_type = "Promise<Array<QuotaEntry>>")]
    pub fn describe_client_quotas<'env>(
        &self,
        env: &'env Env,
        components: Vec<QuotaFilterPart>,
        strict: bool,
    ) -> napi::Result<PromiseRaw<'env, Vec<QuotaEntry>>> {
        let wanted = filter(components, strict)?;
        let core = self.core.clone();
        rt::promise(env, async move {
            let found = core
                .describe_client_quotas(&wanted)
                .await
                .map_err(error::request)?;
            Ok(found
                .into_iter()
                .map(
                    |(e, values): (QuotaEntity, BTreeMap<String, f64>)| QuotaEntry {
                        entity: parts(e),
                        values: values
                            .into_iter()
                            .map(|(key, value)| QuotaValue { key, value })
                            .collect(),
                    },
                )
                .collect())
        })
    }

    /// AlterClientQuotas: per alteration, in order, null or its encoded error.
    #[napi(ts_return_type = "Promise<Array<string | null>>")]
    pub fn alter_client_quotas<'env>(
        &self,
        env: &'env Env,
        alterations: Vec<QuotaAlterationSpec>,
        validate_only: bool,
    ) -> napi::Result<PromiseRaw<'env, Vec<Option<String>>>> {
        let mut list = Vec::with_capacity(alterations.len());
        for a in alterations {
            list.push(QuotaAlteration {
                entity: entity(a.entity)?,
                ops: a.ops.into_iter().map(|o| (o.key, o.value)).collect(),
            });
        }
        let core = self.core.clone();
        rt::promise(env, async move {
            let results = core
                .alter_client_quotas(&list, validate_only)
                .await
                .map_err(error::request)?;
            Ok(results
                .into_iter()
                .map(|(_, r)| r.err().map(reason))
                .collect())
        })
    }
}
