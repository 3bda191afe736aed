//! The topic-partition items of a request, for faults and refusals that concern one partition
//! rather than a whole request: an error injected for `orders/2` only, or an in-process test
//! broker refusing the partitions it does not lead.
//!
//! Kafka answers per item: one Produce response can accept one partition's batch and refuse
//! another's with NOT_LEADER_OR_FOLLOWER, which every client handles (it retries only the
//! refused batch, after a metadata refresh). So a request with refused items is *split*: the
//! refused items are taken out ([`remove`]), the rest is handled normally, and the refusals are
//! merged into that response ([`merge_errors`]), shaped as the handler would shape an error.
//! That is done for the four partition-scoped APIs a client sends to a partition's leader:
//! Produce, Fetch, ListOffsets and OffsetForLeaderEpoch ([`splittable`]). A Fetch is never cut
//! down (an incremental fetch session would forget the removed partitions and the client would
//! stall on them): it is handled whole and the refused partitions are overwritten afterwards.
//! Other APIs' items are listed ([`items`]) only so that a topic-filtered rule can match them.

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind, TopicName};
use odradek::ErrorCode;
use uuid::Uuid;

use crate::broker::Broker;

/// One topic-partition a request names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The topic's name (resolved from its id when the request carries only the id; empty when
    /// the id is unknown).
    pub topic: String,
    /// The topic id the request used (nil when it used the name).
    pub topic_id: Uuid,
    /// The partition.
    pub partition: i32,
    /// The leader epoch the client believes current (-1: not sent).
    pub current_leader_epoch: i32,
}

/// Whether refused items of `api_key` are answered per item (the rest handled normally).
pub fn splittable(api_key: ApiKey) -> bool {
    matches!(
        api_key,
        ApiKey::Produce | ApiKey::Fetch | ApiKey::ListOffsets | ApiKey::OffsetForLeaderEpoch
    )
}

fn name_of(broker: &Broker, name: &TopicName, id: Uuid) -> String {
    if name.is_empty() {
        broker
            .topics
            .get_by_id(id)
            .map(|t| t.name.clone())
            .unwrap_or_default()
    } else {
        name.to_string()
    }
}

fn item(topic: String, topic_id: Uuid, partition: i32, epoch: i32) -> Item {
    Item {
        topic,
        topic_id,
        partition,
        current_leader_epoch: epoch,
    }
}

/// The items of a request (empty for APIs without topic-partitions).
pub fn items(broker: &Broker, request: &RequestKind) -> Vec<Item> {
    let mut out = Vec::new();
    match request {
        RequestKind::Produce(r) => {
            for t in &r.topic_data {
                let name = name_of(broker, &t.name, t.topic_id);
                for p in &t.partition_data {
                    out.push(item(name.clone(), t.topic_id, p.index, -1));
                }
            }
        }
        RequestKind::Fetch(r) => {
            for t in &r.topics {
                let name = name_of(broker, &t.topic, t.topic_id);
                for p in &t.partitions {
                    out.push(item(
                        name.clone(),
                        t.topic_id,
                        p.partition,
                        p.current_leader_epoch,
                    ));
                }
            }
        }
        RequestKind::ListOffsets(r) => {
            for t in &r.topics {
                for p in &t.partitions {
                    out.push(item(
                        t.name.to_string(),
                        Uuid::nil(),
                        p.partition_index,
                        p.current_leader_epoch,
                    ));
                }
            }
        }
        RequestKind::OffsetForLeaderEpoch(r) => {
            for t in &r.topics {
                for p in &t.partitions {
                    out.push(item(
                        t.topic.to_string(),
                        Uuid::nil(),
                        p.partition,
                        p.current_leader_epoch,
                    ));
                }
            }
        }
        RequestKind::OffsetCommit(r) => {
            for t in &r.topics {
                let name = name_of(broker, &t.name, t.topic_id);
                for p in &t.partitions {
                    out.push(item(name.clone(), t.topic_id, p.partition_index, -1));
                }
            }
        }
        RequestKind::TxnOffsetCommit(r) => {
            for t in &r.topics {
                for p in &t.partitions {
                    out.push(item(t.name.to_string(), Uuid::nil(), p.partition_index, -1));
                }
            }
        }
        RequestKind::OffsetFetch(r) => {
            for t in r.topics.iter().flatten() {
                for &p in &t.partition_indexes {
                    out.push(item(t.name.to_string(), Uuid::nil(), p, -1));
                }
            }
            for g in &r.groups {
                for t in g.topics.iter().flatten() {
                    let name = name_of(broker, &t.name, t.topic_id);
                    for &p in &t.partition_indexes {
                        out.push(item(name.clone(), t.topic_id, p, -1));
                    }
                }
            }
        }
        RequestKind::AddPartitionsToTxn(r) => {
            let topics = r
                .v3_and_below_topics
                .iter()
                .chain(r.transactions.iter().flat_map(|t| t.topics.iter()));
            for t in topics {
                for &p in &t.partitions {
                    out.push(item(t.name.to_string(), Uuid::nil(), p, -1));
                }
            }
        }
        RequestKind::DeleteRecords(r) => {
            for t in &r.topics {
                for p in &t.partitions {
                    out.push(item(t.name.to_string(), Uuid::nil(), p.partition_index, -1));
                }
            }
        }
        RequestKind::Metadata(r) => {
            for t in r.topics.iter().flatten() {
                if let Some(name) = &t.name {
                    out.push(item(name.to_string(), t.topic_id, -1, -1));
                }
            }
        }
        RequestKind::CreateTopics(r) => {
            for t in &r.topics {
                out.push(item(t.name.to_string(), Uuid::nil(), -1, -1));
            }
        }
        _ => {}
    }
    out
}

/// The partitions a Fetch response carries, as items (name resolved, epoch unknown).
pub fn fetch_response_items(broker: &Broker, response: &ResponseKind) -> Vec<Item> {
    let ResponseKind::Fetch(r) = response else {
        return Vec::new();
    };
    r.responses
        .iter()
        .flat_map(|t| {
            let name = name_of(broker, &t.topic, t.topic_id);
            t.partitions
                .iter()
                .map(move |p| item(name.clone(), t.topic_id, p.partition_index, -1))
        })
        .collect()
}

/// Whether a request or response entry names the item's topic: by name when the entry has one,
/// else by topic id.
fn same_topic(item: &Item, name: &TopicName, id: Uuid) -> bool {
    if name.is_empty() {
        !id.is_nil() && id == item.topic_id
    } else {
        name.as_str() == item.topic
    }
}

/// Same topic and partition.
fn same(item: &Item, name: &TopicName, id: Uuid, partition: i32) -> bool {
    item.partition == partition && same_topic(item, name, id)
}

/// Takes the refused items out of a Produce, ListOffsets or OffsetForLeaderEpoch request (the
/// handler then answers the rest). A Fetch is left whole; see the module comment.
pub fn remove(request: &mut RequestKind, refused: &[(Item, ErrorCode)]) {
    let gone =
        |name: &TopicName, id: Uuid, p: i32| refused.iter().any(|(i, _)| same(i, name, id, p));
    match request {
        RequestKind::Produce(r) => {
            for t in &mut r.topic_data {
                t.partition_data
                    .retain(|p| !gone(&t.name, t.topic_id, p.index));
            }
            r.topic_data.retain(|t| !t.partition_data.is_empty());
        }
        RequestKind::ListOffsets(r) => {
            for t in &mut r.topics {
                t.partitions
                    .retain(|p| !gone(&t.name, Uuid::nil(), p.partition_index));
            }
            r.topics.retain(|t| !t.partitions.is_empty());
        }
        RequestKind::OffsetForLeaderEpoch(r) => {
            for t in &mut r.topics {
                t.partitions
                    .retain(|p| !gone(&t.topic, Uuid::nil(), p.partition));
            }
            r.topics.retain(|t| !t.partitions.is_empty());
        }
        _ => {}
    }
}

/// Clears the clients' current leader epochs in a request whose epochs were already checked
/// against the test cluster's own (the handlers know only the single-node epoch 0).
pub fn clear_leader_epochs(request: &mut RequestKind) {
    match request {
        RequestKind::Fetch(r) => r
            .topics
            .iter_mut()
            .flat_map(|t| t.partitions.iter_mut())
            .for_each(|p| p.current_leader_epoch = -1),
        RequestKind::ListOffsets(r) => r
            .topics
            .iter_mut()
            .flat_map(|t| t.partitions.iter_mut())
            .for_each(|p| p.current_leader_epoch = -1),
        RequestKind::OffsetForLeaderEpoch(r) => r
            .topics
            .iter_mut()
            .flat_map(|t| t.partitions.iter_mut())
            .for_each(|p| p.current_leader_epoch = -1),
        _ => {}
    }
}

/// Index of the topic entry for `item` in a response's topic list, added if missing.
fn topic_slot<T>(
    topics: &mut Vec<T>,
    item: &Item,
    key: impl Fn(&T) -> (&TopicName, Uuid),
    new: impl FnOnce() -> T,
) -> usize {
    let found = topics.iter().position(|t| {
        let (name, id) = key(t);
        same_topic(item, name, id)
    });
    found.unwrap_or_else(|| {
        topics.push(new());
        topics.len() - 1
    })
}

/// The name to write in a response for an item: the request's (empty when it used an id).
fn wire_name(item: &Item, used_id: bool) -> TopicName {
    if used_id {
        TopicName(Default::default())
    } else {
        TopicName(kafka_protocol::protocol::StrBytes::from_string(
            item.topic.clone(),
        ))
    }
}

/// Writes each refused item into `response` (replacing an entry the handler produced for the
/// same partition), shaped as that API's per-partition error.
pub fn merge_errors(response: &mut ResponseKind, refused: &[(Item, ErrorCode)]) {
    // Clients match entries by topic and partition, so where an entry lands does not matter.
    for (i, code) in refused {
        let e = code.code();
        let used_id = !i.topic_id.is_nil();
        match response {
            ResponseKind::Produce(r) => {
                let slot = topic_slot(
                    &mut r.responses,
                    i,
                    |t| (&t.name, t.topic_id),
                    || {
                        TopicProduceResponse::default()
                            .with_name(wire_name(i, used_id))
                            .with_topic_id(i.topic_id)
                    },
                );
                let parts = &mut r.responses[slot].partition_responses;
                parts.retain(|p| p.index != i.partition);
                parts.push(
                    PartitionProduceResponse::default()
                        .with_index(i.partition)
                        .with_error_code(e)
                        .with_base_offset(-1),
                );
            }
            ResponseKind::Fetch(r) => {
                let slot = topic_slot(
                    &mut r.responses,
                    i,
                    |t| (&t.topic, t.topic_id),
                    || {
                        FetchableTopicResponse::default()
                            .with_topic(wire_name(i, used_id))
                            .with_topic_id(i.topic_id)
                    },
                );
                let parts = &mut r.responses[slot].partitions;
                parts.retain(|p| p.partition_index != i.partition);
                parts.push(
                    PartitionData::default()
                        .with_partition_index(i.partition)
                        .with_error_code(e)
                        .with_high_watermark(-1)
                        .with_records(Some(Bytes::new())),
                );
            }
            ResponseKind::ListOffsets(r) => {
                let slot = topic_slot(
                    &mut r.topics,
                    i,
                    |t| (&t.name, Uuid::nil()),
                    || ListOffsetsTopicResponse::default().with_name(wire_name(i, false)),
                );
                let parts = &mut r.topics[slot].partitions;
                parts.retain(|p| p.partition_index != i.partition);
                parts.push(
                    ListOffsetsPartitionResponse::default()
                        .with_partition_index(i.partition)
                        .with_error_code(e)
                        .with_timestamp(-1)
                        .with_offset(-1)
                        .with_leader_epoch(-1),
                );
            }
            ResponseKind::OffsetForLeaderEpoch(r) => {
                let slot = topic_slot(
                    &mut r.topics,
                    i,
                    |t| (&t.topic, Uuid::nil()),
                    || OffsetForLeaderTopicResult::default().with_topic(wire_name(i, false)),
                );
                let parts = &mut r.topics[slot].partitions;
                parts.retain(|p| p.partition != i.partition);
                parts.push(
                    EpochEndOffset::default()
                        .with_partition(i.partition)
                        .with_error_code(e)
                        .with_leader_epoch(-1)
                        .with_end_offset(-1),
                );
            }
            _ => {}
        }
    }
}

/// The empty response of a splittable API, for a request whose every item was refused.
pub fn empty_response(api_key: ApiKey) -> Option<ResponseKind> {
    Some(match api_key {
        ApiKey::Produce => ResponseKind::Produce(Default::default()),
        ApiKey::Fetch => ResponseKind::Fetch(Default::default()),
        ApiKey::ListOffsets => ResponseKind::ListOffsets(Default::default()),
        ApiKey::OffsetForLeaderEpoch => ResponseKind::OffsetForLeaderEpoch(Default::default()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::ProduceRequest;
    use kafka_protocol::protocol::StrBytes;

    fn topic(name: &str) -> TopicName {
        TopicName(StrBytes::from_string(name.to_string()))
    }

    #[test]
    fn produce_split_and_merge_answer_per_partition() {
        let mut request = RequestKind::Produce(ProduceRequest::default().with_topic_data(vec![
            TopicProduceData::default()
                .with_name(topic("t"))
                .with_partition_data(vec![
                    PartitionProduceData::default().with_index(0),
                    PartitionProduceData::default().with_index(1),
                ]),
        ]));
        let refused = vec![(
            item("t".into(), Uuid::nil(), 1, -1),
            ErrorCode::NotLeaderOrFollower,
        )];
        remove(&mut request, &refused);
        let RequestKind::Produce(r) = &request else {
            unreachable!()
        };
        assert_eq!(r.topic_data[0].partition_data.len(), 1);
        assert_eq!(r.topic_data[0].partition_data[0].index, 0);

        let mut response = ResponseKind::Produce(Default::default());
        if let ResponseKind::Produce(p) = &mut response {
            p.responses.push(
                TopicProduceResponse::default()
                    .with_name(topic("t"))
                    .with_partition_responses(vec![PartitionProduceResponse::default()
                        .with_index(0)
                        .with_base_offset(7)]),
            );
        }
        merge_errors(&mut response, &refused);
        let ResponseKind::Produce(p) = &response else {
            unreachable!()
        };
        assert_eq!(p.responses.len(), 1, "merged into the same topic");
        let parts = &p.responses[0].partition_responses;
        assert_eq!(parts.len(), 2);
        assert_eq!((parts[0].index, parts[0].error_code), (0, 0));
        assert_eq!(
            (parts[1].index, parts[1].error_code),
            (1, ErrorCode::NotLeaderOrFollower.code())
        );
    }

    #[test]
    fn fetch_errors_replace_the_handlers_entry() {
        let mut response = ResponseKind::Fetch(Default::default());
        if let ResponseKind::Fetch(f) = &mut response {
            f.responses.push(
                FetchableTopicResponse::default()
                    .with_topic(topic("t"))
                    .with_partitions(vec![PartitionData::default()
                        .with_partition_index(0)
                        .with_high_watermark(5)]),
            );
        }
        let refused = vec![(
            item("t".into(), Uuid::nil(), 0, -1),
            ErrorCode::FencedLeaderEpoch,
        )];
        merge_errors(&mut response, &refused);
        let ResponseKind::Fetch(f) = &response else {
            unreachable!()
        };
        assert_eq!(f.responses[0].partitions.len(), 1);
        assert_eq!(
            f.responses[0].partitions[0].error_code,
            ErrorCode::FencedLeaderEpoch.code()
        );
        assert_eq!(f.responses[0].partitions[0].high_watermark, -1);
    }
}
