//! DescribeClientQuotas and AlterClientQuotas over the broker's quota store
//! (`crate::quota::QuotaStore`).

use kafka_protocol::messages::alter_client_quotas_response::{
    EntityData as AlterEntity, EntryData as AlterEntry,
};
use kafka_protocol::messages::describe_client_quotas_response::{
    EntityData as DescribeEntity, EntryData as DescribeEntry, ValueData,
};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse, ResponseKind,
};
use odradek::ErrorCode;

use super::context::RequestContext;
use super::reply::sb;
use crate::broker::Broker;
use crate::quota::{Alteration, Match};

/// DescribeClientQuotas: the entities matching the filter, or the filter's error.
pub(super) fn describe(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    request: DescribeClientQuotasRequest,
) -> crate::Result<ResponseKind> {
    let mut filter = Vec::with_capacity(request.components.len());
    for c in &request.components {
        let m =
            match (c.match_type, c._match.as_ref()) {
                (0, Some(name)) => Match::Exact(name.to_string()),
                (0, None) => {
                    return Ok(describe_error(
                        ErrorCode::InvalidRequest,
                        "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                    ))
                }
                (1, None) => Match::Default,
                (1, Some(_)) => {
                    return Ok(describe_error(
                        ErrorCode::InvalidRequest,
                        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                    ))
                }
                (2, None) => Match::Specified,
                (2, Some(_)) => return Ok(describe_error(
                    ErrorCode::InvalidRequest,
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
                )),
                (other, _) => {
                    return Ok(describe_error(
                        ErrorCode::InvalidRequest,
                        &format!("Unknown match type {other}"),
                    ))
                }
            };
        filter.push((c.entity_type.to_string(), m));
    }
    let found = match broker.quotas.store.describe(&filter, request.strict) {
        Ok(found) => found,
        Err(e) => return Ok(describe_error(e.code, &e.message)),
    };
    let entries = found
        .into_iter()
        .map(|(entity, values)| {
            DescribeEntry::default()
                .with_entity(
                    entity
                        .components()
                        .into_iter()
                        .map(|(t, n)| {
                            DescribeEntity::default()
                                .with_entity_type(sb(t))
                                .with_entity_name(n.map(sb))
                        })
                        .collect(),
                )
                .with_values(
                    values
                        .into_iter()
                        .map(|(k, v)| ValueData::default().with_key(sb(k)).with_value(v))
                        .collect(),
                )
        })
        .collect();
    Ok(ResponseKind::DescribeClientQuotas(
        DescribeClientQuotasResponse::default().with_entries(Some(entries)),
    ))
}

/// A DescribeClientQuotas error answer (no entries).
pub(super) fn describe_error(code: ErrorCode, message: &str) -> ResponseKind {
    ResponseKind::DescribeClientQuotas(
        DescribeClientQuotasResponse::default()
            .with_error_code(code.code())
            .with_error_message(Some(sb(message)))
            .with_entries(None),
    )
}

/// AlterClientQuotas: one result per entry, in the request's order.
pub(super) fn alter(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    request: AlterClientQuotasRequest,
) -> crate::Result<ResponseKind> {
    let results = broker
        .quotas
        .store
        .alter(&alterations_of(&request), request.validate_only)?;
    Ok(alter_answer(&request, results))
}

/// The request's entries as quota store alterations.
pub(super) fn alterations_of(request: &AlterClientQuotasRequest) -> Vec<Alteration> {
    request
        .entries
        .iter()
        .map(|e| Alteration {
            components: e
                .entity
                .iter()
                .map(|c| {
                    (
                        c.entity_type.to_string(),
                        c.entity_name.as_ref().map(|n| n.to_string()),
                    )
                })
                .collect(),
            ops: e
                .ops
                .iter()
                .map(|o| (o.key.to_string(), (!o.remove).then_some(o.value)))
                .collect(),
        })
        .collect()
}

/// The answer to `request` with one verdict per entry.
pub(super) fn alter_answer(
    request: &AlterClientQuotasRequest,
    results: Vec<std::result::Result<(), crate::quota::QuotaError>>,
) -> ResponseKind {
    let entries = request
        .entries
        .iter()
        .zip(results)
        .map(|(e, r)| {
            let (code, message) = match r {
                Ok(()) => (ErrorCode::NoError, None),
                Err(err) => (err.code, Some(sb(err.message))),
            };
            AlterEntry::default()
                .with_error_code(code.code())
                .with_error_message(message)
                .with_entity(echo_entity(&e.entity))
        })
        .collect();
    ResponseKind::AlterClientQuotas(AlterClientQuotasResponse::default().with_entries(entries))
}

/// AlterClientQuotas refused as a whole (authorization): every entry gets `code`.
pub(super) fn alter_refused(request: &AlterClientQuotasRequest, code: ErrorCode) -> ResponseKind {
    let entries = request
        .entries
        .iter()
        .map(|e| {
            AlterEntry::default()
                .with_error_code(code.code())
                .with_entity(echo_entity(&e.entity))
        })
        .collect();
    ResponseKind::AlterClientQuotas(AlterClientQuotasResponse::default().with_entries(entries))
}

/// An AlterClientQuotas entry's entity as its answer repeats it.
fn echo_entity(
    entity: &[kafka_protocol::messages::alter_client_quotas_request::EntityData],
) -> Vec<AlterEntity> {
    entity
        .iter()
        .map(|c| {
            AlterEntity::default()
                .with_entity_type(c.entity_type.clone())
                .with_entity_name(c.entity_name.clone())
        })
        .collect()
}
