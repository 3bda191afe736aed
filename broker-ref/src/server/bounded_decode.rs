//! Request decoding whose memory is bounded by the frame's size.
//!
//! The `kafka-protocol` decoders turn every array element into a struct of tens to hundreds of
//! bytes, while an element can take as little as one to three bytes on the wire: a 17 MiB
//! Produce of 6,000,000 empty topic entries decoded to ~1.2 GiB. Checking array counts against
//! the remaining bytes cannot catch that (the entries are really there), so the decoder reads
//! through a [`MeteredBuf`] that counts the bytes this thread allocates (the broker binary's
//! [`super::alloc_meter::MeteredAllocator`]: at most [`alloc_budget`], 16 bytes per frame byte
//! plus 4 MiB) and the primitive reads (each decoded element, field or string costs at least
//! one; at most [`read_budget`], the bound where allocation is not metered), and reports no
//! bytes left once either runs out. The decoder then fails with its ordinary "not enough bytes" error
//! and the connection is closed, as for any request Kafka cannot parse. Memory per read is
//! bounded by the largest decoded struct over its fewest wire reads, so a request costs a
//! small multiple of its size.

use std::ops::Range;

use bytes::{Buf, Bytes};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::buf::ByteBuf;
use kafka_protocol::protocol::Decodable;
use odradek::protocol::{api_name, decode_request_header, DecodedRequest};

use super::alloc_meter;

/// Reads a request of any size may make (small requests are never refused).
pub const MIN_READ_BUDGET: usize = 16 << 10;

/// Frame bytes per read a request may make: real requests make one read per 4 to 30 bytes (a
/// Fetch partition: 7 reads for 33 bytes); arrays of near-empty entries make one per byte.
pub const BYTES_PER_READ: usize = 2;

/// The reads a frame of `len` bytes may make.
pub fn read_budget(len: usize) -> usize {
    (len / BYTES_PER_READ).max(MIN_READ_BUDGET)
}

/// Bytes decoding a request may allocate, per byte of frame, where the allocator is metered.
pub const ALLOC_PER_BYTE: usize = 16;

/// Bytes any request may allocate while decoding.
pub const MIN_ALLOC_BUDGET: usize = 4 << 20;

/// The bytes decoding a frame of `len` bytes may allocate (with a metered allocator).
pub fn alloc_budget(len: usize) -> usize {
    len.saturating_mul(ALLOC_PER_BYTE)
        .saturating_add(MIN_ALLOC_BUDGET)
}

/// A request body that counts reads (and, with a metered allocator, this thread's
/// allocations) and runs dry after its budget.
#[derive(Debug)]
pub struct MeteredBuf {
    inner: Bytes,
    reads: usize,
    budget: usize,
    /// This thread's allocation counter at the start, and the bytes decoding may allocate.
    alloc: Option<(usize, usize)>,
}

impl MeteredBuf {
    /// `inner`, allowed `budget` reads and `alloc_budget` bytes of allocation.
    pub fn new(inner: Bytes, budget: usize, alloc_budget: usize) -> Self {
        MeteredBuf {
            inner,
            reads: 0,
            budget,
            alloc: alloc_meter::thread_allocated().map(|start| (start, alloc_budget)),
        }
    }

    /// Whether the budget ran out (the decoder then saw no bytes left).
    pub fn exhausted(&self) -> bool {
        self.reads > self.budget || self.allocated().is_some_and(|(used, max)| used > max)
    }

    /// Bytes allocated since the start, and the allowance (with a metered allocator).
    fn allocated(&self) -> Option<(usize, usize)> {
        let (start, max) = self.alloc?;
        let now = alloc_meter::thread_allocated()?;
        Some((now.wrapping_sub(start), max))
    }

    /// Reads made so far.
    pub fn reads(&self) -> usize {
        self.reads
    }

    fn count(&mut self) {
        self.reads = self.reads.saturating_add(1);
    }
}

impl Buf for MeteredBuf {
    fn remaining(&self) -> usize {
        if self.exhausted() {
            0
        } else {
            self.inner.remaining()
        }
    }

    fn chunk(&self) -> &[u8] {
        if self.exhausted() {
            &[]
        } else {
            self.inner.chunk()
        }
    }

    fn advance(&mut self, cnt: usize) {
        self.count();
        self.inner.advance(cnt);
    }
}

impl ByteBuf for MeteredBuf {
    fn peek_bytes(&mut self, r: Range<usize>) -> Bytes {
        self.count();
        self.inner.slice(r)
    }

    fn get_bytes(&mut self, size: usize) -> Bytes {
        self.count();
        self.inner.split_to(size)
    }
}

/// Why a request was not decoded.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Malformed header or body, or an API this crate cannot decode.
    #[error(transparent)]
    Malformed(#[from] odradek::Error),
    /// The body needed more reads than its size allows.
    #[error("{api} request of {bytes} bytes needs more than {reads} field reads or {alloc} bytes of memory to decode; refused to bound its memory")]
    TooDense {
        /// The API's name.
        api: &'static str,
        /// The frame size.
        bytes: usize,
        /// The reads it was allowed.
        reads: usize,
        /// The bytes it was allowed to allocate (where metered).
        alloc: usize,
    },
}

fn body<T: Decodable>(buf: &mut MeteredBuf, version: i16) -> Result<T, String> {
    T::decode(buf, version).map_err(|e| e.to_string())
}

/// The body of an `api_key` request, decoded from `buf`.
fn decode_body(api_key: ApiKey, buf: &mut MeteredBuf, version: i16) -> Result<RequestKind, String> {
    Ok(match api_key {
        ApiKey::Produce => RequestKind::Produce(body::<ProduceRequest>(buf, version)?),
        ApiKey::Fetch => RequestKind::Fetch(body::<FetchRequest>(buf, version)?),
        ApiKey::ListOffsets => RequestKind::ListOffsets(body::<ListOffsetsRequest>(buf, version)?),
        ApiKey::Metadata => RequestKind::Metadata(body::<MetadataRequest>(buf, version)?),
        ApiKey::OffsetCommit => {
            RequestKind::OffsetCommit(body::<OffsetCommitRequest>(buf, version)?)
        }
        ApiKey::OffsetFetch => RequestKind::OffsetFetch(body::<OffsetFetchRequest>(buf, version)?),
        ApiKey::FindCoordinator => {
            RequestKind::FindCoordinator(body::<FindCoordinatorRequest>(buf, version)?)
        }
        ApiKey::JoinGroup => RequestKind::JoinGroup(body::<JoinGroupRequest>(buf, version)?),
        ApiKey::Heartbeat => RequestKind::Heartbeat(body::<HeartbeatRequest>(buf, version)?),
        ApiKey::LeaveGroup => RequestKind::LeaveGroup(body::<LeaveGroupRequest>(buf, version)?),
        ApiKey::SyncGroup => RequestKind::SyncGroup(body::<SyncGroupRequest>(buf, version)?),
        ApiKey::DescribeGroups => {
            RequestKind::DescribeGroups(body::<DescribeGroupsRequest>(buf, version)?)
        }
        ApiKey::ListGroups => RequestKind::ListGroups(body::<ListGroupsRequest>(buf, version)?),
        ApiKey::SaslHandshake => {
            RequestKind::SaslHandshake(body::<SaslHandshakeRequest>(buf, version)?)
        }
        ApiKey::ApiVersions => RequestKind::ApiVersions(body::<ApiVersionsRequest>(buf, version)?),
        ApiKey::CreateTopics => {
            RequestKind::CreateTopics(body::<CreateTopicsRequest>(buf, version)?)
        }
        ApiKey::DeleteTopics => {
            RequestKind::DeleteTopics(body::<DeleteTopicsRequest>(buf, version)?)
        }
        ApiKey::DeleteRecords => {
            RequestKind::DeleteRecords(body::<DeleteRecordsRequest>(buf, version)?)
        }
        ApiKey::InitProducerId => {
            RequestKind::InitProducerId(body::<InitProducerIdRequest>(buf, version)?)
        }
        ApiKey::OffsetForLeaderEpoch => {
            RequestKind::OffsetForLeaderEpoch(body::<OffsetForLeaderEpochRequest>(buf, version)?)
        }
        ApiKey::AddPartitionsToTxn => {
            RequestKind::AddPartitionsToTxn(body::<AddPartitionsToTxnRequest>(buf, version)?)
        }
        ApiKey::AddOffsetsToTxn => {
            RequestKind::AddOffsetsToTxn(body::<AddOffsetsToTxnRequest>(buf, version)?)
        }
        ApiKey::EndTxn => RequestKind::EndTxn(body::<EndTxnRequest>(buf, version)?),
        ApiKey::WriteTxnMarkers => {
            RequestKind::WriteTxnMarkers(body::<WriteTxnMarkersRequest>(buf, version)?)
        }
        ApiKey::TxnOffsetCommit => {
            RequestKind::TxnOffsetCommit(body::<TxnOffsetCommitRequest>(buf, version)?)
        }
        ApiKey::DescribeAcls => {
            RequestKind::DescribeAcls(body::<DescribeAclsRequest>(buf, version)?)
        }
        ApiKey::CreateAcls => RequestKind::CreateAcls(body::<CreateAclsRequest>(buf, version)?),
        ApiKey::DeleteAcls => RequestKind::DeleteAcls(body::<DeleteAclsRequest>(buf, version)?),
        ApiKey::DescribeConfigs => {
            RequestKind::DescribeConfigs(body::<DescribeConfigsRequest>(buf, version)?)
        }
        ApiKey::AlterConfigs => {
            RequestKind::AlterConfigs(body::<AlterConfigsRequest>(buf, version)?)
        }
        ApiKey::AlterReplicaLogDirs => {
            RequestKind::AlterReplicaLogDirs(body::<AlterReplicaLogDirsRequest>(buf, version)?)
        }
        ApiKey::DescribeLogDirs => {
            RequestKind::DescribeLogDirs(body::<DescribeLogDirsRequest>(buf, version)?)
        }
        ApiKey::SaslAuthenticate => {
            RequestKind::SaslAuthenticate(body::<SaslAuthenticateRequest>(buf, version)?)
        }
        ApiKey::CreatePartitions => {
            RequestKind::CreatePartitions(body::<CreatePartitionsRequest>(buf, version)?)
        }
        ApiKey::CreateDelegationToken => {
            RequestKind::CreateDelegationToken(body::<CreateDelegationTokenRequest>(buf, version)?)
        }
        ApiKey::RenewDelegationToken => {
            RequestKind::RenewDelegationToken(body::<RenewDelegationTokenRequest>(buf, version)?)
        }
        ApiKey::ExpireDelegationToken => {
            RequestKind::ExpireDelegationToken(body::<ExpireDelegationTokenRequest>(buf, version)?)
        }
        ApiKey::DescribeDelegationToken => {
            RequestKind::DescribeDelegationToken(body::<DescribeDelegationTokenRequest>(
                buf, version,
            )?)
        }
        ApiKey::DeleteGroups => {
            RequestKind::DeleteGroups(body::<DeleteGroupsRequest>(buf, version)?)
        }
        ApiKey::ElectLeaders => {
            RequestKind::ElectLeaders(body::<ElectLeadersRequest>(buf, version)?)
        }
        ApiKey::IncrementalAlterConfigs => {
            RequestKind::IncrementalAlterConfigs(body::<IncrementalAlterConfigsRequest>(
                buf, version,
            )?)
        }
        ApiKey::AlterPartitionReassignments => {
            RequestKind::AlterPartitionReassignments(body::<AlterPartitionReassignmentsRequest>(
                buf, version,
            )?)
        }
        ApiKey::ListPartitionReassignments => {
            RequestKind::ListPartitionReassignments(body::<ListPartitionReassignmentsRequest>(
                buf, version,
            )?)
        }
        ApiKey::OffsetDelete => {
            RequestKind::OffsetDelete(body::<OffsetDeleteRequest>(buf, version)?)
        }
        ApiKey::DescribeClientQuotas => {
            RequestKind::DescribeClientQuotas(body::<DescribeClientQuotasRequest>(buf, version)?)
        }
        ApiKey::AlterClientQuotas => {
            RequestKind::AlterClientQuotas(body::<AlterClientQuotasRequest>(buf, version)?)
        }
        ApiKey::DescribeUserScramCredentials => {
            RequestKind::DescribeUserScramCredentials(body::<DescribeUserScramCredentialsRequest>(
                buf, version,
            )?)
        }
        ApiKey::AlterUserScramCredentials => {
            RequestKind::AlterUserScramCredentials(body::<AlterUserScramCredentialsRequest>(
                buf, version,
            )?)
        }
        ApiKey::Vote => RequestKind::Vote(body::<VoteRequest>(buf, version)?),
        ApiKey::BeginQuorumEpoch => {
            RequestKind::BeginQuorumEpoch(body::<BeginQuorumEpochRequest>(buf, version)?)
        }
        ApiKey::EndQuorumEpoch => {
            RequestKind::EndQuorumEpoch(body::<EndQuorumEpochRequest>(buf, version)?)
        }
        ApiKey::DescribeQuorum => {
            RequestKind::DescribeQuorum(body::<DescribeQuorumRequest>(buf, version)?)
        }
        ApiKey::AlterPartition => {
            RequestKind::AlterPartition(body::<AlterPartitionRequest>(buf, version)?)
        }
        ApiKey::UpdateFeatures => {
            RequestKind::UpdateFeatures(body::<UpdateFeaturesRequest>(buf, version)?)
        }
        ApiKey::Envelope => RequestKind::Envelope(body::<EnvelopeRequest>(buf, version)?),
        ApiKey::FetchSnapshot => {
            RequestKind::FetchSnapshot(body::<FetchSnapshotRequest>(buf, version)?)
        }
        ApiKey::DescribeCluster => {
            RequestKind::DescribeCluster(body::<DescribeClusterRequest>(buf, version)?)
        }
        ApiKey::DescribeProducers => {
            RequestKind::DescribeProducers(body::<DescribeProducersRequest>(buf, version)?)
        }
        ApiKey::BrokerRegistration => {
            RequestKind::BrokerRegistration(body::<BrokerRegistrationRequest>(buf, version)?)
        }
        ApiKey::BrokerHeartbeat => {
            RequestKind::BrokerHeartbeat(body::<BrokerHeartbeatRequest>(buf, version)?)
        }
        ApiKey::UnregisterBroker => {
            RequestKind::UnregisterBroker(body::<UnregisterBrokerRequest>(buf, version)?)
        }
        ApiKey::DescribeTransactions => {
            RequestKind::DescribeTransactions(body::<DescribeTransactionsRequest>(buf, version)?)
        }
        ApiKey::ListTransactions => {
            RequestKind::ListTransactions(body::<ListTransactionsRequest>(buf, version)?)
        }
        ApiKey::AllocateProducerIds => {
            RequestKind::AllocateProducerIds(body::<AllocateProducerIdsRequest>(buf, version)?)
        }
        ApiKey::ConsumerGroupHeartbeat => {
            RequestKind::ConsumerGroupHeartbeat(body::<ConsumerGroupHeartbeatRequest>(
                buf, version,
            )?)
        }
        ApiKey::ConsumerGroupDescribe => {
            RequestKind::ConsumerGroupDescribe(body::<ConsumerGroupDescribeRequest>(buf, version)?)
        }
        ApiKey::ControllerRegistration => {
            RequestKind::ControllerRegistration(body::<ControllerRegistrationRequest>(
                buf, version,
            )?)
        }
        ApiKey::GetTelemetrySubscriptions => {
            RequestKind::GetTelemetrySubscriptions(body::<GetTelemetrySubscriptionsRequest>(
                buf, version,
            )?)
        }
        ApiKey::PushTelemetry => {
            RequestKind::PushTelemetry(body::<PushTelemetryRequest>(buf, version)?)
        }
        ApiKey::AssignReplicasToDirs => {
            RequestKind::AssignReplicasToDirs(body::<AssignReplicasToDirsRequest>(buf, version)?)
        }
        ApiKey::ListConfigResources => {
            RequestKind::ListConfigResources(body::<ListConfigResourcesRequest>(buf, version)?)
        }
        ApiKey::DescribeTopicPartitions => {
            RequestKind::DescribeTopicPartitions(body::<DescribeTopicPartitionsRequest>(
                buf, version,
            )?)
        }
        ApiKey::ShareGroupHeartbeat => {
            RequestKind::ShareGroupHeartbeat(body::<ShareGroupHeartbeatRequest>(buf, version)?)
        }
        ApiKey::ShareGroupDescribe => {
            RequestKind::ShareGroupDescribe(body::<ShareGroupDescribeRequest>(buf, version)?)
        }
        ApiKey::ShareFetch => RequestKind::ShareFetch(body::<ShareFetchRequest>(buf, version)?),
        ApiKey::ShareAcknowledge => {
            RequestKind::ShareAcknowledge(body::<ShareAcknowledgeRequest>(buf, version)?)
        }
        ApiKey::AddRaftVoter => {
            RequestKind::AddRaftVoter(body::<AddRaftVoterRequest>(buf, version)?)
        }
        ApiKey::RemoveRaftVoter => {
            RequestKind::RemoveRaftVoter(body::<RemoveRaftVoterRequest>(buf, version)?)
        }
        ApiKey::UpdateRaftVoter => {
            RequestKind::UpdateRaftVoter(body::<UpdateRaftVoterRequest>(buf, version)?)
        }
        ApiKey::InitializeShareGroupState => {
            RequestKind::InitializeShareGroupState(body::<InitializeShareGroupStateRequest>(
                buf, version,
            )?)
        }
        ApiKey::ReadShareGroupState => {
            RequestKind::ReadShareGroupState(body::<ReadShareGroupStateRequest>(buf, version)?)
        }
        ApiKey::WriteShareGroupState => {
            RequestKind::WriteShareGroupState(body::<WriteShareGroupStateRequest>(buf, version)?)
        }
        ApiKey::DeleteShareGroupState => {
            RequestKind::DeleteShareGroupState(body::<DeleteShareGroupStateRequest>(buf, version)?)
        }
        ApiKey::ReadShareGroupStateSummary => {
            RequestKind::ReadShareGroupStateSummary(body::<ReadShareGroupStateSummaryRequest>(
                buf, version,
            )?)
        }
        ApiKey::DescribeShareGroupOffsets => {
            RequestKind::DescribeShareGroupOffsets(body::<DescribeShareGroupOffsetsRequest>(
                buf, version,
            )?)
        }
        ApiKey::AlterShareGroupOffsets => {
            RequestKind::AlterShareGroupOffsets(body::<AlterShareGroupOffsetsRequest>(
                buf, version,
            )?)
        }
        ApiKey::DeleteShareGroupOffsets => {
            RequestKind::DeleteShareGroupOffsets(body::<DeleteShareGroupOffsetsRequest>(
                buf, version,
            )?)
        }
    })
}

/// Decodes one request frame (without its size prefix) like [`odradek::protocol::decode_request`],
/// with the body's reads bounded by [`read_budget`] of the frame size.
pub fn decode_request_bounded(mut frame: Bytes) -> Result<DecodedRequest, DecodeError> {
    let len = frame.len();
    let (api_key, header) = decode_request_header(&mut frame)?;
    let version = header.request_api_version;
    let mut buf = MeteredBuf::new(frame, read_budget(len), alloc_budget(len));
    let decoded = decode_body(api_key, &mut buf, version);
    let body = match decoded {
        Ok(body) => body,
        Err(_) if buf.exhausted() => {
            return Err(DecodeError::TooDense {
                api: api_name(api_key as i16),
                bytes: len,
                reads: buf.budget,
                alloc: alloc_budget(len),
            })
        }
        Err(e) => return Err(odradek::Error::malformed(api_name(api_key as i16), e).into()),
    };
    Ok(DecodedRequest {
        api_key,
        header,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::protocol::StrBytes;
    use odradek::protocol::encode_request;

    fn frame_of<R: kafka_protocol::protocol::Request>(body: &R, version: i16) -> Bytes {
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(7)
            .with_client_id(Some(StrBytes::from_static_str("t")));
        encode_request(&header, body).unwrap()
    }

    #[test]
    fn ordinary_requests_decode_as_before() {
        let topics = (0..1000)
            .map(|i| {
                metadata_request::MetadataRequestTopic::default()
                    .with_name(Some(TopicName(StrBytes::from_string(format!("t{i}")))))
            })
            .collect();
        let frame = frame_of(&MetadataRequest::default().with_topics(Some(topics)), 12);
        let decoded = decode_request_bounded(frame).unwrap();
        assert_eq!(decoded.header.correlation_id, 7);
        let RequestKind::Metadata(m) = decoded.body else {
            panic!("not metadata")
        };
        assert_eq!(m.topics.unwrap().len(), 1000);
    }

    #[test]
    fn arrays_of_near_empty_entries_run_out_of_reads() {
        // Without a metered allocator (unit tests), the read budget bounds the decode.
        let topics = vec![produce_request::TopicProduceData::default(); 200_000];
        let frame = frame_of(&ProduceRequest::default().with_topic_data(topics), 9);
        let err = decode_request_bounded(frame).unwrap_err();
        assert!(matches!(err, DecodeError::TooDense { .. }), "{err}");
        assert!(err.to_string().contains("Produce"), "{err}");
    }

    #[test]
    fn a_truncated_body_is_malformed_not_dense() {
        let frame = frame_of(&MetadataRequest::default().with_topics(Some(vec![])), 12);
        let cut = frame.slice(..frame.len() - 1);
        assert!(matches!(
            decode_request_bounded(cut),
            Err(DecodeError::Malformed(_))
        ));
    }
}
