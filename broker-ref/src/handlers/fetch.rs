//! Fetch: long-polling reads of stored batches, bounded by the high watermark (or the last
//! stable offset for read_committed), `max_bytes` and per-partition limits.
//!
//! Fetch sessions (KIP-227): this broker answers every session request sessionless (session id
//! 0), which the protocol allows and every client handles by sending full fetch requests.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::fetch_request::FetchTopic;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{FetchRequest, FetchResponse, ResponseKind};
use odradek::ErrorCode;

use super::error_parts;
use crate::broker::Broker;
use crate::partition::LEADER_EPOCH;
use crate::{Error, Result};

/// Handles Fetch.
pub async fn handle(
    broker: &Arc<Broker>,
    request: FetchRequest,
    version: i16,
) -> Result<ResponseKind> {
    let max_wait = Duration::from_millis(request.max_wait_ms.max(0) as u64);
    let deadline = tokio::time::Instant::now() + max_wait;
    let min_bytes = request.min_bytes.max(0) as usize;
    let broker_max = broker.config.int("fetch.max.bytes").max(1) as usize;
    let max_bytes = (request.max_bytes.max(0) as usize).min(broker_max);
    let read_committed = request.isolation_level == 1;
    loop {
        // Register interest before reading so an append between the read and the wait is seen.
        let notified = broker.data_arrived.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let (topics, bytes, any_error) =
            read_all(broker, &request.topics, max_bytes, read_committed, version);
        let now = tokio::time::Instant::now();
        if bytes >= min_bytes || any_error || now >= deadline {
            return Ok(ResponseKind::Fetch(
                FetchResponse::default()
                    .with_session_id(0)
                    .with_responses(topics),
            ));
        }
        let _ = tokio::time::timeout_at(deadline, notified).await;
    }
}

fn read_all(
    broker: &Broker,
    topics: &[FetchTopic],
    max_bytes: usize,
    read_committed: bool,
    version: i16,
) -> (Vec<FetchableTopicResponse>, usize, bool) {
    let mut budget = max_bytes;
    let mut total = 0usize;
    let mut any_error = false;
    let mut first_with_data = true;
    let mut out = Vec::with_capacity(topics.len());
    for ft in topics {
        let by_id = version >= 13;
        let topic = if by_id {
            broker.topics.get_by_id(ft.topic_id)
        } else {
            broker.topics.get(&ft.topic)
        };
        let mut partitions = Vec::with_capacity(ft.partitions.len());
        for fp in &ft.partitions {
            let mut pd = PartitionData::default()
                .with_partition_index(fp.partition)
                .with_aborted_transactions(read_committed.then(Vec::new));
            let partition = topic.as_ref().and_then(|t| t.partition(fp.partition));
            let result = match partition {
                None => Err(Error::kafka(
                    if by_id {
                        ErrorCode::UnknownTopicId
                    } else {
                        ErrorCode::UnknownTopicOrPartition
                    },
                    "unknown topic or partition",
                )),
                Some(_) if fp.current_leader_epoch > LEADER_EPOCH => {
                    Err(ErrorCode::UnknownLeaderEpoch.into())
                }
                Some(p) => {
                    let limit = (fp.partition_max_bytes.max(0) as usize).min(budget);
                    let out = p.read(fp.fetch_offset, limit, first_with_data, read_committed);
                    match out {
                        Ok(o) => Ok((o, p)),
                        Err(e) => {
                            pd = pd
                                .with_high_watermark(p.high_watermark())
                                .with_last_stable_offset(p.last_stable_offset())
                                .with_log_start_offset(p.log_start_offset());
                            Err(e)
                        }
                    }
                }
            };
            match result {
                Ok((o, _)) => {
                    let n = o.records.len();
                    if n > 0 {
                        first_with_data = false;
                    }
                    budget = budget.saturating_sub(n);
                    total += n;
                    pd = pd
                        .with_high_watermark(o.high_watermark)
                        .with_last_stable_offset(o.last_stable_offset)
                        .with_log_start_offset(o.log_start_offset)
                        .with_records(Some(o.records));
                }
                Err(e) => {
                    any_error = true;
                    let (code, _) = error_parts(&e);
                    if pd.high_watermark == 0 && code != ErrorCode::OffsetOutOfRange.code() {
                        pd = pd.with_high_watermark(-1);
                    }
                    pd = pd
                        .with_error_code(code)
                        .with_records(Some(bytes::Bytes::new()));
                }
            }
            partitions.push(pd);
        }
        out.push(
            FetchableTopicResponse::default()
                .with_topic(ft.topic.clone())
                .with_topic_id(ft.topic_id)
                .with_partitions(partitions),
        );
    }
    (out, total, any_error)
}
