//! The APIs this client sends, and the versions of each it may negotiate: one list for the
//! connection's negotiation, the hostile-response tests and the response fuzz target.

use std::ops::RangeInclusive;

use kafka_protocol::messages::ApiKey;

use super::codec::codec_versions;

/// Every API whose request the client (producer, consumer, groups, transactions, admin, SASL)
/// sends, so every API whose response it decodes.
pub const CLIENT_APIS: &[ApiKey] = &[
    ApiKey::ApiVersions,
    ApiKey::Metadata,
    ApiKey::Produce,
    ApiKey::Fetch,
    ApiKey::ListOffsets,
    ApiKey::OffsetForLeaderEpoch,
    ApiKey::FindCoordinator,
    ApiKey::JoinGroup,
    ApiKey::SyncGroup,
    ApiKey::Heartbeat,
    ApiKey::LeaveGroup,
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::OffsetDelete,
    ApiKey::InitProducerId,
    ApiKey::AddPartitionsToTxn,
    ApiKey::AddOffsetsToTxn,
    ApiKey::TxnOffsetCommit,
    ApiKey::EndTxn,
    ApiKey::SaslHandshake,
    ApiKey::SaslAuthenticate,
    ApiKey::CreateTopics,
    ApiKey::DeleteTopics,
    ApiKey::CreatePartitions,
    ApiKey::DeleteRecords,
    ApiKey::DescribeConfigs,
    ApiKey::AlterConfigs,
    ApiKey::IncrementalAlterConfigs,
    ApiKey::DescribeClientQuotas,
    ApiKey::AlterClientQuotas,
    ApiKey::DescribeGroups,
    ApiKey::ListGroups,
    ApiKey::DeleteGroups,
    ApiKey::DescribeCluster,
    ApiKey::DescribeLogDirs,
    ApiKey::DescribeAcls,
    ApiKey::CreateAcls,
    ApiKey::DeleteAcls,
    ApiKey::DescribeUserScramCredentials,
    ApiKey::AlterUserScramCredentials,
    ApiKey::ElectLeaders,
    ApiKey::ConsumerGroupHeartbeat,
    ApiKey::ConsumerGroupDescribe,
];

/// The highest version of `key` the client code fills the fields of (negotiation never goes
/// above it).
pub fn client_max_version(key: ApiKey) -> i16 {
    match key {
        // v13 addresses topics by id only; our producer sends names.
        ApiKey::Produce => 12,
        // v13+ addresses topics by id only; our consumer sends names.
        ApiKey::Fetch => 12,
        ApiKey::ApiVersions => 3,
        other => codec_versions(other).max,
    }
}

/// Every version of `key` the client may negotiate, so every version of its response it may
/// have to decode.
pub fn client_versions(key: ApiKey) -> RangeInclusive<i16> {
    codec_versions(key).min..=client_max_version(key)
}

/// Maps two selector bytes to one of [`CLIENT_APIS`] and one of the versions the client may
/// negotiate for it, so that arbitrary input (the `responses` fuzz target, its corpus test)
/// reaches every API at every version.
pub fn client_api_at(api: u8, version: u8) -> (ApiKey, i16) {
    let key = CLIENT_APIS[usize::from(api) % CLIENT_APIS.len()];
    let versions = client_versions(key);
    let span = i32::from(*versions.end()) - i32::from(*versions.start()) + 1;
    let offset = i32::from(version) % span.max(1);
    // offset < span, so start + offset is within the range of i16.
    let version = i16::try_from(i32::from(*versions.start()) + offset).unwrap_or(*versions.start());
    (key, version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_api_has_a_non_empty_version_range() {
        for &key in CLIENT_APIS {
            let versions = client_versions(key);
            assert!(!versions.is_empty(), "{key:?}");
        }
        assert_eq!(client_versions(ApiKey::Produce).end(), &12);
        assert_eq!(client_versions(ApiKey::ApiVersions), 0..=3);
    }

    #[test]
    fn selectors_reach_every_api_at_every_version() {
        let mut reached = std::collections::HashSet::new();
        for api in 0..=u8::MAX {
            for version in 0..=u8::MAX {
                let (key, v) = client_api_at(api, version);
                assert!(client_versions(key).contains(&v), "{key:?} v{v}");
                reached.insert((key, v));
            }
        }
        let all: usize = CLIENT_APIS
            .iter()
            .map(|&k| client_versions(k).count())
            .sum();
        assert_eq!(reached.len(), all);
    }
}
