//! InitProducerId for idempotent producers: a new producer id at epoch 0, or (KIP-360) the same
//! id with a bumped epoch when the producer presents its current id and epoch. Transactional
//! producers need the transaction coordinator, which this broker does not serve yet.

use std::sync::Arc;

use kafka_protocol::messages::{
    InitProducerIdRequest, InitProducerIdResponse, ProducerId, ResponseKind,
};
use odradek::ErrorCode;

use super::HandlerResult;
use crate::broker::Broker;

/// Handles InitProducerId.
pub fn handle(broker: &Arc<Broker>, r: InitProducerIdRequest) -> HandlerResult {
    let error = |code: ErrorCode| {
        Ok(ResponseKind::InitProducerId(
            InitProducerIdResponse::default()
                .with_error_code(code.code())
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        ))
    };
    if r.transactional_id.as_ref().is_some_and(|t| !t.is_empty()) {
        if r.transaction_timeout_ms > broker.config.int("transaction.max.timeout.ms")
            || r.transaction_timeout_ms <= 0
        {
            return error(ErrorCode::InvalidTransactionTimeout);
        }
        return error(ErrorCode::CoordinatorNotAvailable);
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
