//! InitProducerId. Idempotent producers get a new producer id at epoch 0, or (KIP-360) the same
//! id with a bumped epoch when they present their current id and epoch. Transactional producers
//! are served by the transaction coordinator (`coordinator::txn`): a timeout above
//! `transaction.max.timeout.ms` is INVALID_TRANSACTION_TIMEOUT, and a new session fences the
//! previous one.

use kafka_protocol::messages::{
    InitProducerIdRequest, InitProducerIdResponse, ProducerId, ResponseKind,
};
use odradek::ErrorCode;

use super::context::RequestContext;
use super::reply::HandlerResult;
use crate::broker::Broker;

/// Handles InitProducerId.
pub fn handle(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    r: InitProducerIdRequest,
) -> HandlerResult {
    let version = ctx.api_version;
    let error = |code: ErrorCode| {
        Ok(ResponseKind::InitProducerId(
            InitProducerIdResponse::default()
                .with_error_code(code.code())
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        ))
    };
    if let Some(txn_id) = r.transactional_id.as_ref().filter(|t| !t.is_empty()) {
        let expected = (r.producer_id.0 >= 0 && r.producer_epoch >= 0)
            .then_some((r.producer_id.0, r.producer_epoch));
        return match broker
            .txns
            .init_producer_id(txn_id, r.transaction_timeout_ms, expected)
        {
            Ok((id, epoch)) => Ok(ResponseKind::InitProducerId(
                InitProducerIdResponse::default()
                    .with_producer_id(ProducerId(id))
                    .with_producer_epoch(epoch),
            )),
            Err(code) => error(super::txn::fenced_for(code, version, 4)),
        };
    }
    let (id, epoch) =
        if r.producer_id.0 >= 0 && r.producer_epoch >= 0 && r.producer_epoch < i16::MAX - 1 {
            // KIP-360: an idempotent producer resets its sequences by bumping its epoch.
            (r.producer_id.0, r.producer_epoch + 1)
        } else {
            match broker.producer_ids.next_id() {
                Ok(id) => (id, 0),
                Err(_) => return error(ErrorCode::CoordinatorNotAvailable),
            }
        };
    Ok(ResponseKind::InitProducerId(
        InitProducerIdResponse::default()
            .with_producer_id(ProducerId(id))
            .with_producer_epoch(epoch),
    ))
}
