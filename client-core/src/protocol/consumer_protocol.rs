//! The consumer protocol's subscription and assignment encodings (a version prefix, then the
//! schema body), exactly as the Java client and librdkafka write them, so members of any client
//! can share one group.

use std::collections::BTreeMap;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition as AssignedTopic;
use kafka_protocol::messages::consumer_protocol_subscription::TopicPartition as OwnedTopic;
use kafka_protocol::messages::{
    ConsumerProtocolAssignment, ConsumerProtocolSubscription, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use crate::types::TopicPartition;
use crate::{Error, Result};

/// Version of the subscription we write (v1 adds owned partitions, needed for cooperative).
const SUBSCRIPTION_VERSION: i16 = 1;
/// Version of the assignment we write.
const ASSIGNMENT_VERSION: i16 = 1;

/// A member's subscription.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subscription {
    /// Subscribed topics.
    pub topics: Vec<String>,
    /// Partitions the member owns now (cooperative rebalancing).
    pub owned: Vec<TopicPartition>,
    /// Assignor-specific data.
    pub user_data: Option<Bytes>,
}

fn group_partitions(partitions: &[TopicPartition]) -> BTreeMap<String, Vec<i32>> {
    let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for tp in partitions {
        by_topic
            .entry(tp.topic.to_string())
            .or_default()
            .push(tp.partition);
    }
    for v in by_topic.values_mut() {
        v.sort_unstable();
    }
    by_topic
}

/// Encodes a subscription.
pub fn encode_subscription(s: &Subscription) -> Result<Bytes> {
    let body = ConsumerProtocolSubscription::default()
        .with_topics(
            s.topics
                .iter()
                .map(|t| StrBytes::from_string(t.clone()))
                .collect(),
        )
        .with_user_data(s.user_data.clone())
        .with_owned_partitions(
            group_partitions(&s.owned)
                .into_iter()
                .map(|(t, ps)| {
                    OwnedTopic::default()
                        .with_topic(TopicName(StrBytes::from_string(t)))
                        .with_partitions(ps)
                })
                .collect(),
        );
    let mut buf = BytesMut::new();
    buf.put_i16(SUBSCRIPTION_VERSION);
    body.encode(&mut buf, SUBSCRIPTION_VERSION)
        .map_err(|e| Error::malformed("consumer subscription", e))?;
    Ok(buf.freeze())
}

/// Decodes a subscription of any version 0..=3 (newer versions are read as v3, as the Java
/// client does for forward compatibility).
pub fn decode_subscription(data: &Bytes) -> Result<Subscription> {
    let mut b = data.clone();
    if b.remaining() < 2 {
        return Err(Error::malformed("consumer subscription", "too short"));
    }
    let version = b.get_i16().clamp(0, 3);
    let s = ConsumerProtocolSubscription::decode(&mut b, version)
        .map_err(|e| Error::malformed("consumer subscription", e))?;
    Ok(Subscription {
        topics: s.topics.iter().map(|t| t.to_string()).collect(),
        owned: s
            .owned_partitions
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(|p| TopicPartition {
                    topic: t.topic.to_string().into(),
                    partition: *p,
                })
            })
            .collect(),
        user_data: s.user_data,
    })
}

/// Encodes an assignment.
pub fn encode_assignment(partitions: &[TopicPartition]) -> Result<Bytes> {
    let body = ConsumerProtocolAssignment::default().with_assigned_partitions(
        group_partitions(partitions)
            .into_iter()
            .map(|(t, ps)| {
                AssignedTopic::default()
                    .with_topic(TopicName(StrBytes::from_string(t)))
                    .with_partitions(ps)
            })
            .collect(),
    );
    let mut buf = BytesMut::new();
    buf.put_i16(ASSIGNMENT_VERSION);
    body.encode(&mut buf, ASSIGNMENT_VERSION)
        .map_err(|e| Error::malformed("consumer assignment", e))?;
    Ok(buf.freeze())
}

/// Decodes an assignment (empty bytes = nothing assigned).
pub fn decode_assignment(data: &Bytes) -> Result<Vec<TopicPartition>> {
    let mut b = data.clone();
    if b.remaining() < 2 {
        return Ok(Vec::new());
    }
    let version = b.get_i16().clamp(0, 3);
    let a = ConsumerProtocolAssignment::decode(&mut b, version)
        .map_err(|e| Error::malformed("consumer assignment", e))?;
    Ok(a.assigned_partitions
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| TopicPartition {
                topic: t.topic.to_string().into(),
                partition: *p,
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(t: &str, p: i32) -> TopicPartition {
        TopicPartition {
            topic: t.into(),
            partition: p,
        }
    }

    #[test]
    fn subscription_round_trip_and_java_layout() {
        let s = Subscription {
            topics: vec!["a".into(), "b".into()],
            owned: vec![tp("a", 1), tp("a", 0)],
            user_data: None,
        };
        let bytes = encode_subscription(&s).unwrap();
        // version 1, topics array of 2, "a", "b", null user data, owned partitions...
        assert_eq!(&bytes[..2], &[0, 1]);
        assert_eq!(&bytes[2..6], &2i32.to_be_bytes());
        let back = decode_subscription(&bytes).unwrap();
        assert_eq!(back.topics, s.topics);
        assert_eq!(back.owned, vec![tp("a", 0), tp("a", 1)]);
    }

    #[test]
    fn assignment_round_trip() {
        let parts = vec![tp("x", 2), tp("y", 0), tp("x", 0)];
        let back = decode_assignment(&encode_assignment(&parts).unwrap()).unwrap();
        assert_eq!(back, vec![tp("x", 0), tp("x", 2), tp("y", 0)]);
        assert!(decode_assignment(&Bytes::new()).unwrap().is_empty());
        assert!(decode_subscription(&Bytes::from_static(&[0, 0, 0xff])).is_err());
    }
}
