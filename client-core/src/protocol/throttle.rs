//! `throttle_time_ms` (KIP-219) of every response: read by the client's connections, which send
//! nothing more to a broker that throttled them until the time has passed, and set by the
//! broker's quota enforcement. The lists of responses with and without the field were taken from
//! the `kafka-protocol` crate's message structs.

use kafka_protocol::messages::*;

/// A response's `throttle_time_ms` (0 for responses without the field).
pub trait Throttled {
    /// The throttle time the broker reported, in milliseconds.
    fn throttle_time_ms(&self) -> i32;
}

macro_rules! throttled {
    ($($variant:ident => $t:ty),* $(,)?) => {
        $(impl Throttled for $t {
            fn throttle_time_ms(&self) -> i32 {
                self.throttle_time_ms
            }
        })*

        /// Sets the `throttle_time_ms` of a response that has the field (others are unchanged).
        pub fn set_throttle_time(response: &mut ResponseKind, ms: i32) {
            match response {
                $(ResponseKind::$variant(r) => r.throttle_time_ms = ms,)*
                _ => {}
            }
        }

        /// The `throttle_time_ms` of a response (0 if it has no such field).
        pub fn throttle_time_of(response: &ResponseKind) -> i32 {
            match response {
                $(ResponseKind::$variant(r) => r.throttle_time_ms,)*
                _ => 0,
            }
        }
    };
}

macro_rules! unthrottled {
    ($($t:ty),* $(,)?) => {
        $(impl Throttled for $t {
            fn throttle_time_ms(&self) -> i32 {
                0
            }
        })*
    };
}

throttled! {
    AddOffsetsToTxn => AddOffsetsToTxnResponse,
    AddPartitionsToTxn => AddPartitionsToTxnResponse,
    AddRaftVoter => AddRaftVoterResponse,
    AllocateProducerIds => AllocateProducerIdsResponse,
    AlterClientQuotas => AlterClientQuotasResponse,
    AlterConfigs => AlterConfigsResponse,
    AlterPartition => AlterPartitionResponse,
    AlterPartitionReassignments => AlterPartitionReassignmentsResponse,
    AlterReplicaLogDirs => AlterReplicaLogDirsResponse,
    AlterShareGroupOffsets => AlterShareGroupOffsetsResponse,
    AlterUserScramCredentials => AlterUserScramCredentialsResponse,
    ApiVersions => ApiVersionsResponse,
    AssignReplicasToDirs => AssignReplicasToDirsResponse,
    BrokerHeartbeat => BrokerHeartbeatResponse,
    BrokerRegistration => BrokerRegistrationResponse,
    ConsumerGroupDescribe => ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeat => ConsumerGroupHeartbeatResponse,
    ControllerRegistration => ControllerRegistrationResponse,
    CreateAcls => CreateAclsResponse,
    CreateDelegationToken => CreateDelegationTokenResponse,
    CreatePartitions => CreatePartitionsResponse,
    CreateTopics => CreateTopicsResponse,
    DeleteAcls => DeleteAclsResponse,
    DeleteGroups => DeleteGroupsResponse,
    DeleteRecords => DeleteRecordsResponse,
    DeleteShareGroupOffsets => DeleteShareGroupOffsetsResponse,
    DeleteTopics => DeleteTopicsResponse,
    DescribeAcls => DescribeAclsResponse,
    DescribeClientQuotas => DescribeClientQuotasResponse,
    DescribeCluster => DescribeClusterResponse,
    DescribeConfigs => DescribeConfigsResponse,
    DescribeDelegationToken => DescribeDelegationTokenResponse,
    DescribeGroups => DescribeGroupsResponse,
    DescribeLogDirs => DescribeLogDirsResponse,
    DescribeProducers => DescribeProducersResponse,
    DescribeShareGroupOffsets => DescribeShareGroupOffsetsResponse,
    DescribeTopicPartitions => DescribeTopicPartitionsResponse,
    DescribeTransactions => DescribeTransactionsResponse,
    DescribeUserScramCredentials => DescribeUserScramCredentialsResponse,
    ElectLeaders => ElectLeadersResponse,
    EndTxn => EndTxnResponse,
    ExpireDelegationToken => ExpireDelegationTokenResponse,
    Fetch => FetchResponse,
    FetchSnapshot => FetchSnapshotResponse,
    FindCoordinator => FindCoordinatorResponse,
    GetTelemetrySubscriptions => GetTelemetrySubscriptionsResponse,
    Heartbeat => HeartbeatResponse,
    IncrementalAlterConfigs => IncrementalAlterConfigsResponse,
    InitProducerId => InitProducerIdResponse,
    JoinGroup => JoinGroupResponse,
    LeaveGroup => LeaveGroupResponse,
    ListConfigResources => ListConfigResourcesResponse,
    ListGroups => ListGroupsResponse,
    ListOffsets => ListOffsetsResponse,
    ListPartitionReassignments => ListPartitionReassignmentsResponse,
    ListTransactions => ListTransactionsResponse,
    Metadata => MetadataResponse,
    OffsetCommit => OffsetCommitResponse,
    OffsetDelete => OffsetDeleteResponse,
    OffsetFetch => OffsetFetchResponse,
    OffsetForLeaderEpoch => OffsetForLeaderEpochResponse,
    Produce => ProduceResponse,
    PushTelemetry => PushTelemetryResponse,
    RemoveRaftVoter => RemoveRaftVoterResponse,
    RenewDelegationToken => RenewDelegationTokenResponse,
    ShareAcknowledge => ShareAcknowledgeResponse,
    ShareFetch => ShareFetchResponse,
    ShareGroupDescribe => ShareGroupDescribeResponse,
    ShareGroupHeartbeat => ShareGroupHeartbeatResponse,
    SyncGroup => SyncGroupResponse,
    TxnOffsetCommit => TxnOffsetCommitResponse,
    UnregisterBroker => UnregisterBrokerResponse,
    UpdateFeatures => UpdateFeaturesResponse,
    UpdateRaftVoter => UpdateRaftVoterResponse,
}

unthrottled! {
    BeginQuorumEpochResponse,
    DeleteShareGroupStateResponse,
    DescribeQuorumResponse,
    EndQuorumEpochResponse,
    EnvelopeResponse,
    InitializeShareGroupStateResponse,
    ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryResponse,
    SaslAuthenticateResponse,
    SaslHandshakeResponse,
    VoteResponse,
    WriteShareGroupStateResponse,
    WriteTxnMarkersResponse,
}

/// Whether the client, rather than the broker alone, waits out a throttle reported in this
/// API's response at this version (Java's `AbstractResponse.shouldClientThrottle`): the
/// versions from KIP-219 on, where the broker answers at once and then stops reading the
/// connection. Older versions leave the whole wait to the broker.
pub fn client_throttles(api_key: i16, version: i16) -> bool {
    let Ok(key) = ApiKey::try_from(api_key) else {
        return false;
    };
    let since: i16 = match key {
        ApiKey::Produce => 6,
        ApiKey::Fetch => 8,
        ApiKey::ListOffsets => 3,
        ApiKey::Metadata => 6,
        ApiKey::OffsetCommit | ApiKey::OffsetFetch => 4,
        ApiKey::FindCoordinator => 2,
        ApiKey::JoinGroup => 3,
        ApiKey::Heartbeat | ApiKey::LeaveGroup | ApiKey::SyncGroup => 2,
        ApiKey::DescribeGroups | ApiKey::ListGroups | ApiKey::ApiVersions => 2,
        ApiKey::CreateTopics => 3,
        ApiKey::DeleteTopics | ApiKey::DescribeConfigs => 2,
        ApiKey::DeleteRecords
        | ApiKey::InitProducerId
        | ApiKey::AddPartitionsToTxn
        | ApiKey::AddOffsetsToTxn
        | ApiKey::EndTxn
        | ApiKey::TxnOffsetCommit
        | ApiKey::DescribeAcls
        | ApiKey::CreateAcls
        | ApiKey::DeleteAcls
        | ApiKey::AlterConfigs
        | ApiKey::AlterReplicaLogDirs
        | ApiKey::DescribeLogDirs
        | ApiKey::CreatePartitions
        | ApiKey::CreateDelegationToken
        | ApiKey::RenewDelegationToken
        | ApiKey::ExpireDelegationToken
        | ApiKey::DescribeDelegationToken
        | ApiKey::DeleteGroups => 1,
        ApiKey::ElectLeaders
        | ApiKey::IncrementalAlterConfigs
        | ApiKey::AlterPartitionReassignments
        | ApiKey::ListPartitionReassignments
        | ApiKey::OffsetDelete
        | ApiKey::DescribeUserScramCredentials
        | ApiKey::AlterUserScramCredentials
        | ApiKey::DescribeTopicPartitions => 0,
        _ => return false,
    };
    version >= since
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttle_time_is_read_and_set_through_the_response_kind() {
        let mut r = ResponseKind::Produce(ProduceResponse::default());
        set_throttle_time(&mut r, 250);
        assert_eq!(throttle_time_of(&r), 250);
        let ResponseKind::Produce(p) = &r else {
            unreachable!()
        };
        assert_eq!(p.throttle_time_ms(), 250);
        let mut s = ResponseKind::SaslHandshake(SaslHandshakeResponse::default());
        set_throttle_time(&mut s, 250);
        assert_eq!(throttle_time_of(&s), 0);
    }

    #[test]
    fn client_side_throttling_starts_at_kip_219_versions() {
        assert!(!client_throttles(ApiKey::Produce as i16, 5));
        assert!(client_throttles(ApiKey::Produce as i16, 6));
        assert!(client_throttles(ApiKey::Fetch as i16, 8));
        assert!(!client_throttles(ApiKey::OffsetForLeaderEpoch as i16, 4));
        assert!(!client_throttles(-5, 0));
    }
}
