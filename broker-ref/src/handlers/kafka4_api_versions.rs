//! What an Apache Kafka **4.4.0** broker says in its `ApiVersions` response.
//!
//! This module is a table of facts, not an implementation. It records what the
//! broker listener of a single-node `KRaft` cluster (`process.roles=broker,controller`,
//! formatted with `kafka-storage.sh format --standalone`, everything else default)
//! puts in `ApiVersionsResponse`.
//!
//! Where the numbers come from:
//!
//! * The `kafka-clients-4.4.0.jar` that the compat harness caches in
//!   `tests/compat/.cache/kafka-libs/`. Its `kafka/kafka-version.properties` gives
//!   version 4.4.0, commit `1156b2752aaa28ea`. A small throwaway Java program
//!   (not kept in this repo) called the jar's own
//!   `ApiVersionsResponse.filterApis(BROKER, false, false)`, and also
//!   `DefaultApiVersionManager.apiVersionResponse(..)` from `kafka-server-4.4.0.jar`
//!   with the controller's `ApiVersions` intersected in. Both gave the 77 rows below.
//! * The JSON schemas in that jar (`common/message/*Request.json`: `listeners`,
//!   `validVersions`, `latestVersionUnstable`). They are byte-identical to
//!   `clients/src/main/resources/common/message/` on the Apache 4.4 branch at
//!   `87943b2ff8` (2026-08-21), read from a mirror of `confluentinc/kafka`.
//! * The logic, read on that branch and cross-checked against the 4.3.1 release
//!   commit `26b251a451`: `clients/.../protocol/ApiKeys.java`
//!   (`PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION`, `toApiVersion`),
//!   `clients/.../requests/ApiVersionsResponse.java` (`filterApis`,
//!   `intersectForwardableApis`, the feature-key builders),
//!   `clients/.../requests/ApiVersionsRequest.java` (`getErrorResponse`, `isValid`),
//!   `server/.../server/DefaultApiVersionManager.java`,
//!   `server/.../server/BrokerFeatures.java`, `server-common/.../common/Feature.java`
//!   and `core/.../kafka/server/KafkaApis.scala` (`handleApiVersionsRequest`).
//!
//! `docs/notes/kafka4-apiversions.md` has the whole write-up, including how
//! 4.0 to 4.3 differ and where the `kafka-protocol` 0.18.0 crate falls short.

/// One advertised API: the key and the inclusive version range sent for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiRange {
    /// Kafka API key (for example 0 = Produce, 18 = `ApiVersions`).
    pub api_key: i16,
    /// Lowest version, inclusive.
    pub min: i16,
    /// Highest version, inclusive.
    pub max: i16,
}

/// One feature entry, as it appears in the `SupportedFeatures` or
/// `FinalizedFeatures` tagged field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureRange {
    /// Feature name, for example `metadata.version`.
    pub name: &'static str,
    /// `MinVersion`, or `MinVersionLevel` for finalized features.
    pub min: i16,
    /// `MaxVersion`, or `MaxVersionLevel` for finalized features.
    pub max: i16,
}

/// The Kafka release these tables describe.
pub const KAFKA_VERSION: &str = "4.4.0";

/// The commit id that the 4.4.0 `kafka-clients` jar reports.
pub const KAFKA_COMMIT_ID: &str = "1156b2752aaa28ea";

/// The `ApiKeys` array a Kafka 4.4.0 broker listener sends with default configs.
///
/// Rows are sorted by api key, which is the order Kafka sends them in.
///
/// * Produce is listed as 0-13 but only v3-v13 are accepted; see
///   [`REAL_MIN_OVERRIDES`].
/// * The telemetry APIs (71, 72) are missing because no client-telemetry
///   exporter is configured by default; see [`TELEMETRY_ONLY`].
/// * The ranges marked "forwarded" are intersected with the controller's own
///   `ApiVersions`. On a single node the controller runs the same code, so the
///   intersection changes nothing.
/// * A version flagged `latestVersionUnstable` (`InitProducerId` v6) is left out
///   unless `unstable.api.versions.enable=true`.
/// * The request version does not change this list. Versions 0-5 all get the same
///   rows; only the feature tagged fields depend on the request version.
#[rustfmt::skip]
pub const ADVERTISED: &[ApiRange] = &[
    ApiRange { api_key: 0, min: 0, max: 13 }, // Produce (accepts only v3+)
    ApiRange { api_key: 1, min: 4, max: 18 }, // Fetch
    ApiRange { api_key: 2, min: 1, max: 11 }, // ListOffsets
    ApiRange { api_key: 3, min: 0, max: 13 }, // Metadata
    ApiRange { api_key: 8, min: 2, max: 10 }, // OffsetCommit
    ApiRange { api_key: 9, min: 1, max: 10 }, // OffsetFetch
    ApiRange { api_key: 10, min: 0, max: 6 }, // FindCoordinator
    ApiRange { api_key: 11, min: 0, max: 9 }, // JoinGroup
    ApiRange { api_key: 12, min: 0, max: 4 }, // Heartbeat
    ApiRange { api_key: 13, min: 0, max: 5 }, // LeaveGroup
    ApiRange { api_key: 14, min: 0, max: 5 }, // SyncGroup
    ApiRange { api_key: 15, min: 0, max: 6 }, // DescribeGroups
    ApiRange { api_key: 16, min: 0, max: 5 }, // ListGroups
    ApiRange { api_key: 17, min: 0, max: 1 }, // SaslHandshake
    ApiRange { api_key: 18, min: 0, max: 5 }, // ApiVersions
    ApiRange { api_key: 19, min: 2, max: 7 }, // CreateTopics (forwarded)
    ApiRange { api_key: 20, min: 1, max: 6 }, // DeleteTopics (forwarded)
    ApiRange { api_key: 21, min: 0, max: 2 }, // DeleteRecords
    ApiRange { api_key: 22, min: 0, max: 5 }, // InitProducerId (v6 unstable, hidden)
    ApiRange { api_key: 23, min: 2, max: 4 }, // OffsetForLeaderEpoch
    ApiRange { api_key: 24, min: 0, max: 5 }, // AddPartitionsToTxn
    ApiRange { api_key: 25, min: 0, max: 4 }, // AddOffsetsToTxn
    ApiRange { api_key: 26, min: 0, max: 5 }, // EndTxn
    ApiRange { api_key: 27, min: 1, max: 2 }, // WriteTxnMarkers
    ApiRange { api_key: 28, min: 0, max: 6 }, // TxnOffsetCommit
    ApiRange { api_key: 29, min: 1, max: 3 }, // DescribeAcls
    ApiRange { api_key: 30, min: 1, max: 3 }, // CreateAcls (forwarded)
    ApiRange { api_key: 31, min: 1, max: 3 }, // DeleteAcls (forwarded)
    ApiRange { api_key: 32, min: 1, max: 4 }, // DescribeConfigs
    ApiRange { api_key: 33, min: 0, max: 2 }, // AlterConfigs (forwarded)
    ApiRange { api_key: 34, min: 1, max: 2 }, // AlterReplicaLogDirs
    ApiRange { api_key: 35, min: 1, max: 5 }, // DescribeLogDirs
    ApiRange { api_key: 36, min: 0, max: 2 }, // SaslAuthenticate
    ApiRange { api_key: 37, min: 0, max: 3 }, // CreatePartitions (forwarded)
    ApiRange { api_key: 38, min: 1, max: 3 }, // CreateDelegationToken (forwarded)
    ApiRange { api_key: 39, min: 1, max: 2 }, // RenewDelegationToken (forwarded)
    ApiRange { api_key: 40, min: 1, max: 2 }, // ExpireDelegationToken (forwarded)
    ApiRange { api_key: 41, min: 1, max: 3 }, // DescribeDelegationToken
    ApiRange { api_key: 42, min: 0, max: 3 }, // DeleteGroups
    ApiRange { api_key: 43, min: 0, max: 2 }, // ElectLeaders (forwarded)
    ApiRange { api_key: 44, min: 0, max: 1 }, // IncrementalAlterConfigs (forwarded)
    ApiRange { api_key: 45, min: 0, max: 1 }, // AlterPartitionReassignments (forwarded)
    ApiRange { api_key: 46, min: 0, max: 0 }, // ListPartitionReassignments (forwarded)
    ApiRange { api_key: 47, min: 0, max: 0 }, // OffsetDelete
    ApiRange { api_key: 48, min: 0, max: 1 }, // DescribeClientQuotas
    ApiRange { api_key: 49, min: 0, max: 1 }, // AlterClientQuotas (forwarded)
    ApiRange { api_key: 50, min: 0, max: 0 }, // DescribeUserScramCredentials
    ApiRange { api_key: 51, min: 0, max: 0 }, // AlterUserScramCredentials (forwarded)
    ApiRange { api_key: 55, min: 0, max: 2 }, // DescribeQuorum (forwarded)
    ApiRange { api_key: 57, min: 0, max: 2 }, // UpdateFeatures (forwarded)
    ApiRange { api_key: 60, min: 0, max: 2 }, // DescribeCluster
    ApiRange { api_key: 61, min: 0, max: 0 }, // DescribeProducers
    ApiRange { api_key: 64, min: 0, max: 0 }, // UnregisterBroker (forwarded)
    ApiRange { api_key: 65, min: 0, max: 0 }, // DescribeTransactions
    ApiRange { api_key: 66, min: 0, max: 2 }, // ListTransactions
    ApiRange { api_key: 68, min: 0, max: 1 }, // ConsumerGroupHeartbeat
    ApiRange { api_key: 69, min: 0, max: 1 }, // ConsumerGroupDescribe
    ApiRange { api_key: 74, min: 0, max: 1 }, // ListConfigResources
    ApiRange { api_key: 75, min: 0, max: 0 }, // DescribeTopicPartitions
    ApiRange { api_key: 76, min: 1, max: 1 }, // ShareGroupHeartbeat
    ApiRange { api_key: 77, min: 1, max: 1 }, // ShareGroupDescribe
    ApiRange { api_key: 78, min: 1, max: 2 }, // ShareFetch
    ApiRange { api_key: 79, min: 1, max: 2 }, // ShareAcknowledge
    ApiRange { api_key: 80, min: 0, max: 1 }, // AddRaftVoter (forwarded)
    ApiRange { api_key: 81, min: 0, max: 0 }, // RemoveRaftVoter (forwarded)
    ApiRange { api_key: 83, min: 0, max: 0 }, // InitializeShareGroupState
    ApiRange { api_key: 84, min: 0, max: 0 }, // ReadShareGroupState
    ApiRange { api_key: 85, min: 0, max: 1 }, // WriteShareGroupState
    ApiRange { api_key: 86, min: 0, max: 0 }, // DeleteShareGroupState
    ApiRange { api_key: 87, min: 0, max: 1 }, // ReadShareGroupStateSummary
    ApiRange { api_key: 88, min: 0, max: 1 }, // StreamsGroupHeartbeat
    ApiRange { api_key: 89, min: 0, max: 1 }, // StreamsGroupDescribe
    ApiRange { api_key: 90, min: 0, max: 1 }, // DescribeShareGroupOffsets
    ApiRange { api_key: 91, min: 0, max: 0 }, // AlterShareGroupOffsets
    ApiRange { api_key: 92, min: 0, max: 0 }, // DeleteShareGroupOffsets
    ApiRange { api_key: 93, min: 0, max: 0 }, // StreamsGroupTopologyDescriptionUpdate
    ApiRange { api_key: 94, min: 0, max: 0 }, // UnregisterController (forwarded)
];

/// APIs whose advertised minimum is lower than the lowest version the broker
/// really accepts. Each row gives the range the broker will actually parse.
///
/// Only Produce is affected. Kafka 4.0 dropped Produce v0-v2 (KIP-896), but
/// older librdkafka clients (2.11.0 and earlier) will not compress a batch unless
/// the broker's Produce range includes v0. So since KAFKA-18659, 4.0+ brokers
/// still advertise min 0 (`ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION`)
/// but refuse v0-v2. A v0-v2 Produce request fails in the socket layer's header
/// check: the broker logs an `UnsupportedVersionException` and closes the
/// connection without replying.
///
/// Fetch has no such workaround: it advertises 4-18 and accepts 4-18.
#[rustfmt::skip]
pub const REAL_MIN_OVERRIDES: &[ApiRange] = &[
    ApiRange { api_key: 0, min: 3, max: 13 }, // Produce
];

/// APIs a 4.4.0 broker lists only when a client-telemetry exporter is set up.
/// That means a `metric.reporters` class that implements
/// `ClientTelemetryExporterProvider` or the deprecated `ClientTelemetry`. The
/// default reporters do not, so with default configs these rows are **not**
/// sent.
#[rustfmt::skip]
pub const TELEMETRY_ONLY: &[ApiRange] = &[
    ApiRange { api_key: 71, min: 0, max: 0 }, // GetTelemetrySubscriptions
    ApiRange { api_key: 72, min: 0, max: 0 }, // PushTelemetry
];

/// The single `ApiKeys` row in the reply to an `ApiVersions` request whose version
/// is above the broker's maximum (here, above 5).
///
/// In that case the broker does not parse the request body. It replies with a
/// version-0 response (response header v0, body v0) with `ErrorCode = 35`
/// (`UNSUPPORTED_VERSION`) and an `ApiKeys` array holding only this `ApiVersions` row.
/// The body has no throttle field, because v0 has none. On the wire the body is
/// `0023 00000001 0012 0000 0005`.
#[rustfmt::skip]
pub const UNSUPPORTED_VERSION_FALLBACK: ApiRange = ApiRange { api_key: 18, min: 0, max: 5 };

/// The `SupportedFeatures` tagged field (tag 0), in the order a 4.4.0 broker
/// writes it (Java `HashMap` iteration order).
///
/// For `ApiVersions` requests v0-v3 the broker drops every feature whose min is 0
/// (KAFKA-17492). Only `metadata.version` is left.
#[rustfmt::skip]
pub const SUPPORTED_FEATURES: &[FeatureRange] = &[
    FeatureRange { name: "group.version", min: 0, max: 1 },
    FeatureRange { name: "kraft.version", min: 0, max: 1 },
    FeatureRange { name: "metadata.version", min: 7, max: 33 }, // 3.3-IV3 ..= 4.4-IV2
    FeatureRange { name: "share.version", min: 0, max: 2 },
    FeatureRange { name: "streams.version", min: 0, max: 1 },
    FeatureRange { name: "transaction.version", min: 0, max: 2 },
    FeatureRange { name: "eligible.leader.replicas.version", min: 0, max: 1 },
];

/// The `FinalizedFeatures` tagged field (tag 2) on a cluster freshly formatted
/// with `kafka-storage.sh format --standalone` and no `--release-version` or
/// `--feature` flags. Rows are in the order a 4.4.0 broker writes them, and min
/// equals max for every row.
///
/// Mind the wire order inside each entry: `Name`, then **`MaxVersionLevel`**,
/// then `MinVersionLevel`.
///
/// Features finalized at level 0 are left out. If the cluster is formatted
/// with a static `controller.quorum.voters` instead of `--standalone`, then
/// `kraft.version` is 0 and that row disappears.
///
/// `FinalizedFeaturesEpoch` (tag 1) is not a constant. It is the offset of the
/// last metadata record the broker has applied, so it grows while the broker
/// runs. `ZkMigrationReady` (tag 3) is never set by a broker, so it is left off
/// the wire.
#[rustfmt::skip]
pub const FINALIZED_FEATURES_FRESH_CLUSTER: &[FeatureRange] = &[
    FeatureRange { name: "group.version", min: 1, max: 1 },
    FeatureRange { name: "kraft.version", min: 1, max: 1 },
    FeatureRange { name: "share.version", min: 2, max: 2 },
    FeatureRange { name: "metadata.version", min: 33, max: 33 }, // 4.4-IV2
    FeatureRange { name: "streams.version", min: 1, max: 1 },
    FeatureRange { name: "transaction.version", min: 2, max: 2 },
    FeatureRange { name: "eligible.leader.replicas.version", min: 1, max: 1 },
];

/// The version ranges that the `kafka-protocol` crate 0.18.0 can encode and
/// decode, for each advertised API where that range ends below Kafka 4.4.0's
/// advertised max. The crate was generated from Kafka 4.1.0's schemas.
///
/// The crate has no types at all for the keys in [`KAFKA_PROTOCOL_0_18_MISSING`].
#[rustfmt::skip]
pub const KAFKA_PROTOCOL_0_18_LIMITS: &[ApiRange] = &[
    ApiRange { api_key: 2, min: 1, max: 10 },  // ListOffsets (Kafka: 11)
    ApiRange { api_key: 18, min: 0, max: 4 },  // ApiVersions (Kafka: 5)
    ApiRange { api_key: 27, min: 1, max: 1 },  // WriteTxnMarkers (Kafka: 2)
    ApiRange { api_key: 28, min: 0, max: 5 },  // TxnOffsetCommit (Kafka: 6)
    ApiRange { api_key: 35, min: 1, max: 4 },  // DescribeLogDirs (Kafka: 5)
    ApiRange { api_key: 42, min: 0, max: 2 },  // DeleteGroups (Kafka: 3)
    ApiRange { api_key: 78, min: 1, max: 1 },  // ShareFetch (Kafka: 2)
    ApiRange { api_key: 79, min: 1, max: 1 },  // ShareAcknowledge (Kafka: 2)
    ApiRange { api_key: 80, min: 0, max: 0 },  // AddRaftVoter (Kafka: 1)
    ApiRange { api_key: 85, min: 0, max: 0 },  // WriteShareGroupState (Kafka: 1)
    ApiRange { api_key: 87, min: 0, max: 0 },  // ReadShareGroupStateSummary (Kafka: 1)
    ApiRange { api_key: 90, min: 0, max: 0 },  // DescribeShareGroupOffsets (Kafka: 1)
];

/// API keys that Kafka 4.4.0 advertises but the `kafka-protocol` crate 0.18.0
/// does not define: 88 `StreamsGroupHeartbeat`, 89 `StreamsGroupDescribe`,
/// 93 `StreamsGroupTopologyDescriptionUpdate` and 94 `UnregisterController`.
pub const KAFKA_PROTOCOL_0_18_MISSING: &[i16] = &[88, 89, 93, 94];

/// Looks up `api_key` in [`ADVERTISED`].
#[must_use]
pub fn advertised(api_key: i16) -> Option<ApiRange> {
    ADVERTISED.iter().copied().find(|r| r.api_key == api_key)
}

/// The range Kafka 4.4.0 really parses for `api_key`: the advertised range,
/// with the minimum raised by [`REAL_MIN_OVERRIDES`] where one applies.
#[must_use]
pub fn accepted(api_key: i16) -> Option<ApiRange> {
    REAL_MIN_OVERRIDES
        .iter()
        .copied()
        .find(|r| r.api_key == api_key)
        .or_else(|| advertised(api_key))
}

/// Whether Kafka 4.4.0 would take a request with this key and version instead
/// of closing the connection.
///
/// `ApiVersions` is the exception: the broker answers any version of it, and
/// versions above the max get the [`UNSUPPORTED_VERSION_FALLBACK`] reply. This
/// function only says whether the version is a normal, in-range one.
#[must_use]
pub fn accepts(api_key: i16, version: i16) -> bool {
    accepted(api_key).is_some_and(|r| version >= r.min && version <= r.max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_sorted_and_ordered(table: &[ApiRange], what: &str) {
        for r in table {
            assert!(r.min >= 0, "{what}: key {} has a negative min", r.api_key);
            assert!(r.min <= r.max, "{what}: key {} has min > max", r.api_key);
        }
        for pair in table.windows(2) {
            assert!(
                pair[0].api_key < pair[1].api_key,
                "{what}: key {} is followed by key {}",
                pair[0].api_key,
                pair[1].api_key
            );
        }
    }

    #[test]
    fn advertised_is_sorted_unique_and_min_le_max() {
        check_sorted_and_ordered(ADVERTISED, "ADVERTISED");
    }

    #[test]
    fn advertised_has_the_expected_size_and_edges() {
        assert_eq!(ADVERTISED.len(), 77);
        assert_eq!(
            advertised(0),
            Some(ApiRange {
                api_key: 0,
                min: 0,
                max: 13
            })
        );
        assert_eq!(
            advertised(1),
            Some(ApiRange {
                api_key: 1,
                min: 4,
                max: 18
            })
        );
        assert_eq!(advertised(18), Some(UNSUPPORTED_VERSION_FALLBACK));
        // Controller-only and removed keys are absent.
        for key in [4, 5, 6, 7, 52, 53, 54, 56, 58, 59, 62, 63, 67, 70, 73, 82] {
            assert_eq!(advertised(key), None, "key {key} should not be advertised");
        }
    }

    #[test]
    fn overrides_only_raise_the_min() {
        check_sorted_and_ordered(REAL_MIN_OVERRIDES, "REAL_MIN_OVERRIDES");
        for o in REAL_MIN_OVERRIDES {
            let adv = advertised(o.api_key).expect("override for an unadvertised key");
            assert!(
                o.min > adv.min,
                "override for {} does not raise the min",
                o.api_key
            );
            assert_eq!(o.max, adv.max, "override for {} changes the max", o.api_key);
        }
        assert!(!accepts(0, 2));
        assert!(accepts(0, 3));
        assert!(accepts(0, 13));
        assert!(!accepts(0, 14));
        assert!(!accepts(1, 3));
        assert!(accepts(11, 0));
    }

    #[test]
    fn telemetry_rows_are_not_in_the_default_table() {
        check_sorted_and_ordered(TELEMETRY_ONLY, "TELEMETRY_ONLY");
        for t in TELEMETRY_ONLY {
            assert_eq!(advertised(t.api_key), None);
        }
    }

    #[test]
    fn feature_tables_are_consistent() {
        for (i, f) in SUPPORTED_FEATURES.iter().enumerate() {
            assert!(f.min <= f.max, "{} has min > max", f.name);
            assert!(
                SUPPORTED_FEATURES[i + 1..].iter().all(|g| g.name != f.name),
                "{} listed twice",
                f.name
            );
        }
        assert_eq!(
            FINALIZED_FEATURES_FRESH_CLUSTER.len(),
            SUPPORTED_FEATURES.len()
        );
        for f in FINALIZED_FEATURES_FRESH_CLUSTER {
            assert_eq!(f.min, f.max, "{} is finalized at a range", f.name);
            assert_ne!(f.max, 0, "level-0 features are never sent");
            let s = SUPPORTED_FEATURES
                .iter()
                .find(|s| s.name == f.name)
                .expect("finalized feature missing from supported features");
            assert!(
                s.min <= f.max && f.max <= s.max,
                "{} finalized outside its range",
                f.name
            );
        }
    }

    #[test]
    fn crate_limits_refer_to_real_shortfalls() {
        check_sorted_and_ordered(KAFKA_PROTOCOL_0_18_LIMITS, "KAFKA_PROTOCOL_0_18_LIMITS");
        for l in KAFKA_PROTOCOL_0_18_LIMITS {
            let adv = advertised(l.api_key).expect("limit for an unadvertised key");
            assert!(l.max < adv.max, "key {} is not actually short", l.api_key);
            let acc = accepted(l.api_key).expect("advertised keys are accepted");
            assert!(
                l.min <= acc.min,
                "crate cannot reach the lowest accepted version of {}",
                l.api_key
            );
        }
        for key in KAFKA_PROTOCOL_0_18_MISSING {
            assert!(
                advertised(*key).is_some(),
                "missing key {key} is not advertised"
            );
        }
    }
}
