//! Request handlers: one module per API family, and the dispatcher that routes a decoded
//! request to its handler and encodes the response.

mod admin_configs;
mod admin_topics;
mod api_versions;
mod broker_configs;
mod chunked;
mod cluster;
mod fetch;
pub mod groups;
mod init_producer_id;
pub mod kafka4_api_versions;
mod list_offsets;
mod metadata;
mod produce;
mod records_admin;
mod txn;

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use kafka_protocol::protocol::StrBytes;
use odradek::protocol::{api_name, decode_request, encode_response_kind, RequestPrefix};
use odradek::ErrorCode;

use crate::broker::Broker;
use crate::Error;

pub use api_versions::{advertised_range, ADVERTISED_APIS};

/// What the connection should do after a request.
#[derive(Debug)]
pub enum Reply {
    /// Write this frame (size prefix included).
    Frame(Bytes),
    /// Write these chunks back to back: one frame whose record data was not copied.
    Chunks(Vec<Bytes>),
    /// Send nothing (Produce with acks=0).
    Nothing,
    /// Close the connection, as Kafka does for malformed or unsupported requests.
    Close(String),
}

/// Handles one request frame (without its size prefix).
pub async fn dispatch(broker: &Arc<Broker>, frame: Bytes) -> Reply {
    let prefix = match RequestPrefix::peek(&frame) {
        Ok(p) => p,
        Err(e) => return Reply::Close(e.to_string()),
    };
    if prefix.api_key == ApiKey::ApiVersions as i16 {
        if let Some(reply) = api_versions::reject_unsupported_version(&prefix) {
            return reply;
        }
    }
    match advertised_range(prefix.api_key) {
        Some(r) if (r.min..=r.max).contains(&prefix.api_version) => {}
        _ => {
            return Reply::Close(format!(
                "unsupported request {} v{} (api key {})",
                api_name(prefix.api_key),
                prefix.api_version,
                prefix.api_key
            ))
        }
    }
    let request = match decode_request(frame) {
        Ok(r) => r,
        Err(e) => return Reply::Close(e.to_string()),
    };
    let version = request.header.request_api_version;
    let correlation_id = request.header.correlation_id;
    let response = match request.body {
        RequestKind::ApiVersions(r) => Ok(Some(api_versions::handle(&r, version))),
        RequestKind::Metadata(r) => metadata::handle(broker, r, version).map(Some),
        RequestKind::Produce(r) => produce::handle(broker, r).await,
        RequestKind::Fetch(r) => fetch::handle(broker, r, version).await.map(Some),
        RequestKind::ListOffsets(r) => list_offsets::handle(broker, r, version).map(Some),
        RequestKind::CreateTopics(r) => admin_topics::create_topics(broker, r, version).map(Some),
        RequestKind::DeleteTopics(r) => admin_topics::delete_topics(broker, r).map(Some),
        RequestKind::CreatePartitions(r) => admin_topics::create_partitions(broker, r).map(Some),
        RequestKind::DescribeConfigs(r) => admin_configs::describe(broker, r).map(Some),
        RequestKind::AlterConfigs(r) => admin_configs::alter(broker, r).map(Some),
        RequestKind::IncrementalAlterConfigs(r) => {
            admin_configs::incremental_alter(broker, r).map(Some)
        }
        RequestKind::InitProducerId(r) => init_producer_id::handle(broker, r, version).map(Some),
        RequestKind::AddPartitionsToTxn(r) => {
            txn::add_partitions_to_txn(broker, r, version).map(Some)
        }
        RequestKind::AddOffsetsToTxn(r) => txn::add_offsets_to_txn(broker, r, version).map(Some),
        RequestKind::EndTxn(r) => txn::end_txn(broker, r, version).map(Some),
        RequestKind::TxnOffsetCommit(r) => txn::txn_offset_commit(broker, r, version).map(Some),
        RequestKind::DescribeTransactions(r) => txn::describe_transactions(broker, r).map(Some),
        RequestKind::ListTransactions(r) => txn::list_transactions(broker, r).map(Some),
        RequestKind::DescribeProducers(r) => txn::describe_producers(broker, r).map(Some),
        RequestKind::FindCoordinator(r) => groups::find_coordinator(broker, r, version).map(Some),
        RequestKind::JoinGroup(r) => {
            let client_id = request
                .header
                .client_id
                .as_ref()
                .map(|c| c.to_string())
                .unwrap_or_default();
            groups::join_group(broker, r, version, client_id)
                .await
                .map(Some)
        }
        RequestKind::SyncGroup(r) => groups::sync_group(broker, r).await.map(Some),
        RequestKind::Heartbeat(r) => groups::heartbeat(broker, r).map(Some),
        RequestKind::LeaveGroup(r) => groups::leave_group(broker, r, version).map(Some),
        RequestKind::OffsetCommit(r) => groups::offset_commit(broker, r).map(Some),
        RequestKind::OffsetFetch(r) => groups::offset_fetch(broker, r, version).map(Some),
        RequestKind::DescribeGroups(r) => groups::describe_groups(broker, r).map(Some),
        RequestKind::ListGroups(r) => groups::list_groups(broker, r).map(Some),
        RequestKind::DeleteGroups(r) => groups::delete_groups(broker, r).map(Some),
        RequestKind::OffsetDelete(r) => groups::offset_delete(broker, r).map(Some),
        RequestKind::DescribeCluster(r) => Ok(Some(cluster::describe_cluster(broker, &r))),
        RequestKind::DescribeLogDirs(r) => cluster::describe_log_dirs(broker, r).map(Some),
        RequestKind::DeleteRecords(r) => records_admin::delete_records(broker, r).map(Some),
        RequestKind::OffsetForLeaderEpoch(r) => {
            records_admin::offset_for_leader_epoch(broker, r).map(Some)
        }
        _ => Err(Error::kafka(
            ErrorCode::UnsupportedVersion,
            "API not served",
        )),
    };
    match response {
        Ok(Some(body)) => {
            let Ok(api_key) = ApiKey::try_from(prefix.api_key) else {
                return Reply::Close("unknown api key".into());
            };
            if let ResponseKind::Fetch(fetch) = &body {
                return match chunked::encode_fetch(version, correlation_id, fetch) {
                    Ok(chunks) => Reply::Chunks(chunks),
                    Err(e) => Reply::Close(format!("cannot encode response: {e}")),
                };
            }
            match encode_response_kind(api_key, version, correlation_id, &body) {
                Ok(frame) => Reply::Frame(frame),
                Err(e) => Reply::Close(format!("cannot encode response: {e}")),
            }
        }
        Ok(None) => Reply::Nothing,
        Err(e) => Reply::Close(e.to_string()),
    }
}

/// Converts an error to `(error_code, error_message)` for a per-item result.
pub(crate) fn error_parts(e: &Error) -> (i16, Option<StrBytes>) {
    let message = match e {
        Error::Kafka { message, .. } => message.clone(),
        other => other.to_string(),
    };
    (e.code().code(), Some(StrBytes::from_string(message)))
}

/// A `StrBytes` from any string.
pub(crate) fn sb(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

/// `Ok(ResponseKind)` shorthand used by handlers.
pub(crate) type HandlerResult = crate::Result<ResponseKind>;
