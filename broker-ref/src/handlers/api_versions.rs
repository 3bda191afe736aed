//! ApiVersions: which APIs and versions this broker serves.
//!
//! Ranges follow Apache Kafka 4.4.0's advertisement (see `kafka4_api_versions.rs`), capped at what
//! the `kafka-protocol` crate can decode, and only for APIs this broker implements: advertising an
//! API we would then refuse would break clients that probe for it. Produce keeps Kafka's quirk of
//! advertising v0 (older librdkafka releases stop compressing otherwise) while v0-2 are refused
//! exactly as Kafka refuses them: by closing the connection.

use bytes::Bytes;
use kafka_protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse, ResponseKind};
use odradek::protocol::{encode_response, RequestPrefix};
use odradek::ErrorCode;

use super::context::RequestContext;
use super::kafka4_api_versions::{ApiRange, ADVERTISED};
use super::reply::sb;

/// API keys this broker implements.
pub const ADVERTISED_APIS: &[ApiKey] = &[
    ApiKey::Produce,
    ApiKey::Fetch,
    ApiKey::ListOffsets,
    ApiKey::Metadata,
    ApiKey::DescribeTopicPartitions,
    ApiKey::ApiVersions,
    ApiKey::CreateTopics,
    ApiKey::DeleteTopics,
    ApiKey::DeleteRecords,
    ApiKey::OffsetForLeaderEpoch,
    ApiKey::DescribeConfigs,
    ApiKey::AlterConfigs,
    ApiKey::DescribeLogDirs,
    ApiKey::CreatePartitions,
    ApiKey::IncrementalAlterConfigs,
    ApiKey::DescribeCluster,
    ApiKey::FindCoordinator,
    ApiKey::JoinGroup,
    ApiKey::SyncGroup,
    ApiKey::Heartbeat,
    ApiKey::LeaveGroup,
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::DescribeGroups,
    ApiKey::ListGroups,
    ApiKey::DeleteGroups,
    ApiKey::OffsetDelete,
    ApiKey::ConsumerGroupHeartbeat,
    ApiKey::ConsumerGroupDescribe,
    ApiKey::InitProducerId,
    ApiKey::AddPartitionsToTxn,
    ApiKey::AddOffsetsToTxn,
    ApiKey::EndTxn,
    ApiKey::TxnOffsetCommit,
    ApiKey::WriteTxnMarkers,
    ApiKey::DescribeTransactions,
    ApiKey::ListTransactions,
    ApiKey::DescribeProducers,
    ApiKey::SaslHandshake,
    ApiKey::SaslAuthenticate,
    ApiKey::DescribeAcls,
    ApiKey::CreateAcls,
    ApiKey::DeleteAcls,
    ApiKey::DescribeUserScramCredentials,
    ApiKey::AlterUserScramCredentials,
    ApiKey::DescribeClientQuotas,
    ApiKey::AlterClientQuotas,
];

/// The advertised range of an API, if served: Kafka 4.4.0's range capped at the codec's maximum.
pub fn advertised_range(api_key: i16) -> Option<ApiRange> {
    let key = ApiKey::try_from(api_key).ok()?;
    if !ADVERTISED_APIS.contains(&key) {
        return None;
    }
    let kafka = ADVERTISED.iter().find(|r| r.api_key == api_key)?;
    let codec = odradek::protocol::codec_versions(key);
    Some(ApiRange {
        api_key,
        min: kafka.min,
        max: kafka.max.min(codec.max),
    })
}

/// Kafka's answer to an ApiVersions request newer than it knows: a v0 response with
/// UNSUPPORTED_VERSION listing only ApiVersions' own range, so the client can retry lower.
/// `None` when the version is known; otherwise the response frame (size prefix included).
pub fn reject_unsupported_version(prefix: &RequestPrefix) -> Option<odradek::Result<Bytes>> {
    let range = advertised_range(prefix.api_key)?;
    if prefix.api_version <= range.max {
        return None;
    }
    let body = ApiVersionsResponse::default()
        .with_error_code(ErrorCode::UnsupportedVersion.code())
        .with_api_keys(vec![ApiVersion::default()
            .with_api_key(range.api_key)
            .with_min_version(range.min)
            .with_max_version(range.max)]);
    Some(encode_response(0, prefix.correlation_id, &body))
}

/// APIs a broker serves in cluster mode only (the controller decides them).
pub const CLUSTER_ONLY_APIS: &[ApiKey] = &[
    ApiKey::ElectLeaders,
    ApiKey::AlterPartitionReassignments,
    ApiKey::ListPartitionReassignments,
];

/// The advertised range of an API on a client listener of `broker`: the single node's, plus
/// [`CLUSTER_ONLY_APIS`] in cluster mode.
pub fn broker_range(broker: &crate::broker::Broker, api_key: i16) -> Option<ApiRange> {
    advertised_range(api_key).or_else(|| {
        let key = ApiKey::try_from(api_key).ok()?;
        if broker.cluster_node().is_none() || !CLUSTER_ONLY_APIS.contains(&key) {
            return None;
        }
        let kafka = ADVERTISED.iter().find(|r| r.api_key == api_key)?;
        let codec = odradek::protocol::codec_versions(key);
        Some(ApiRange {
            api_key,
            min: kafka.min,
            max: kafka.max.min(codec.max),
        })
    })
}

/// The full ApiVersions response.
pub fn handle(
    broker: &crate::broker::Broker,
    ctx: &RequestContext<'_>,
    _request: &ApiVersionsRequest,
) -> ResponseKind {
    let version = ctx.api_version;
    let api_keys = ADVERTISED_APIS
        .iter()
        .chain(CLUSTER_ONLY_APIS)
        .filter_map(|k| broker_range(broker, *k as i16))
        .map(|r| {
            ApiVersion::default()
                .with_api_key(r.api_key)
                .with_min_version(r.min)
                .with_max_version(r.max)
        })
        .collect();
    let mut response = ApiVersionsResponse::default()
        .with_error_code(0)
        .with_api_keys(api_keys);
    if version >= 3 {
        // metadata.version and group.version 1 (KIP-848's consumer groups) are finalized;
        // transaction.version is not: it would tell clients to use KIP-890's second phase,
        // which this broker does not serve.
        response = response
            .with_supported_features(vec![
                SupportedFeatureKey::default()
                    .with_name(sb("metadata.version"))
                    .with_min_version(7)
                    .with_max_version(27),
                SupportedFeatureKey::default()
                    .with_name(sb("group.version"))
                    .with_min_version(0)
                    .with_max_version(1),
            ])
            .with_finalized_features(
                std::iter::once(
                    FinalizedFeatureKey::default()
                        .with_name(sb("metadata.version"))
                        .with_min_version_level(27)
                        .with_max_version_level(27),
                )
                .chain(broker.groups.consumer_protocol_enabled().then(|| {
                    FinalizedFeatureKey::default()
                        .with_name(sb("group.version"))
                        .with_min_version_level(1)
                        .with_max_version_level(1)
                }))
                .collect(),
            )
            .with_finalized_features_epoch(1);
    }
    ResponseKind::ApiVersions(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn produce_keeps_kafkas_v0_quirk_and_ranges_fit_the_codec() {
        let produce = advertised_range(0).unwrap();
        assert_eq!((produce.min, produce.max), (0, 13));
        for key in ADVERTISED_APIS {
            let r = advertised_range(*key as i16).unwrap();
            assert!(r.min <= r.max, "{key:?}");
            assert!(
                r.max <= odradek::protocol::codec_versions(*key).max,
                "{key:?}"
            );
        }
        let markers = advertised_range(ApiKey::WriteTxnMarkers as i16).unwrap();
        assert_eq!(
            (markers.min, markers.max),
            (1, 1),
            "the codec's v1 of Kafka's 1-2"
        );
        let add = advertised_range(ApiKey::AddPartitionsToTxn as i16).unwrap();
        assert_eq!(
            (add.min, add.max),
            (0, 5),
            "v0-3 client form, v4-5 batched form"
        );
        assert_eq!(advertised_range(18).unwrap().max, 4);
    }

    #[test]
    fn too_new_api_versions_gets_a_v0_error_reply() {
        let prefix = RequestPrefix {
            api_key: 18,
            api_version: 9,
            correlation_id: 5,
        };
        let Some(Ok(frame)) = reject_unsupported_version(&prefix) else {
            panic!("expected a frame");
        };
        // size, correlation id, error code 35, array of one: key 18, 0..=4.
        assert_eq!(&frame[4..8], &5i32.to_be_bytes());
        assert_eq!(&frame[8..10], &35i16.to_be_bytes());
        assert_eq!(&frame[10..14], &1i32.to_be_bytes());
        assert_eq!(&frame[14..20], &[0, 18, 0, 0, 0, 4]);
        let ok = RequestPrefix {
            api_version: 3,
            ..prefix
        };
        assert!(reject_unsupported_version(&ok).is_none());
    }
}
