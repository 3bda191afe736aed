//! The records the group coordinator keeps in `__consumer_offsets`, in Apache Kafka's own layouts
//! (so Kafka's tools can read the topic): offset commits (key version 1, value version 3),
//! group metadata (key version 2, value version 3); consumer-protocol groups' records (key
//! versions 3 to 8) are `super::consumer::storage`'s. A null value is a tombstone.

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// A committed offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    /// Next offset to consume.
    pub offset: i64,
    /// Leader epoch of the last consumed record, or -1.
    pub leader_epoch: i32,
    /// Client metadata string.
    pub metadata: String,
    /// When it was committed (ms).
    pub commit_timestamp: i64,
}

/// A member as persisted with its group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMember {
    /// Member id.
    pub member_id: String,
    /// Static membership id.
    pub group_instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Rebalance timeout (ms).
    pub rebalance_timeout_ms: i32,
    /// Session timeout (ms).
    pub session_timeout_ms: i32,
    /// The member's metadata for the chosen protocol.
    pub subscription: Bytes,
    /// Its assignment.
    pub assignment: Bytes,
}

/// A group as persisted after each completed rebalance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredGroup {
    /// Protocol type (e.g. `consumer`).
    pub protocol_type: String,
    /// Generation.
    pub generation: i32,
    /// Chosen protocol (assignor).
    pub protocol: Option<String>,
    /// Leader member id.
    pub leader: Option<String>,
    /// When the state last changed (ms).
    pub state_timestamp: i64,
    /// Members.
    pub members: Vec<StoredMember>,
}

/// A decoded `__consumer_offsets` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoordinatorRecord {
    /// Offset commit (`None` = deleted).
    Offset {
        /// Group.
        group: String,
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// The commit, or `None` for a tombstone.
        value: Option<CommittedOffset>,
    },
    /// Group metadata (`None` = group deleted).
    Group {
        /// Group.
        group: String,
        /// The metadata, or `None` for a tombstone.
        value: Option<StoredGroup>,
    },
}

pub(crate) fn put_str(b: &mut BytesMut, s: &str) {
    b.put_i16(s.len().min(i16::MAX as usize) as i16);
    b.put_slice(&s.as_bytes()[..s.len().min(i16::MAX as usize)]);
}

fn put_nullable_str(b: &mut BytesMut, s: Option<&str>) {
    match s {
        Some(s) => put_str(b, s),
        None => b.put_i16(-1),
    }
}

fn put_bytes(b: &mut BytesMut, v: &[u8]) {
    b.put_i32(v.len() as i32);
    b.put_slice(v);
}

/// Encodes `(key, value)` of an offset commit.
pub fn offset_record(
    group: &str,
    topic: &str,
    partition: i32,
    value: Option<&CommittedOffset>,
) -> (Bytes, Option<Bytes>) {
    let mut k = BytesMut::new();
    k.put_i16(1);
    put_str(&mut k, group);
    put_str(&mut k, topic);
    k.put_i32(partition);
    let v = value.map(|c| {
        let mut v = BytesMut::new();
        v.put_i16(3);
        v.put_i64(c.offset);
        v.put_i32(c.leader_epoch);
        put_str(&mut v, &c.metadata);
        v.put_i64(c.commit_timestamp);
        v.freeze()
    });
    (k.freeze(), v)
}

/// Encodes `(key, value)` of group metadata.
pub fn group_record(group: &str, value: Option<&StoredGroup>) -> (Bytes, Option<Bytes>) {
    let mut k = BytesMut::new();
    k.put_i16(2);
    put_str(&mut k, group);
    let v = value.map(|g| {
        let mut v = BytesMut::new();
        v.put_i16(3);
        put_str(&mut v, &g.protocol_type);
        v.put_i32(g.generation);
        put_nullable_str(&mut v, g.protocol.as_deref());
        put_nullable_str(&mut v, g.leader.as_deref());
        v.put_i64(g.state_timestamp);
        v.put_i32(g.members.len() as i32);
        for m in &g.members {
            put_str(&mut v, &m.member_id);
            put_nullable_str(&mut v, m.group_instance_id.as_deref());
            put_str(&mut v, &m.client_id);
            put_str(&mut v, &m.client_host);
            v.put_i32(m.rebalance_timeout_ms);
            v.put_i32(m.session_timeout_ms);
            put_bytes(&mut v, &m.subscription);
            put_bytes(&mut v, &m.assignment);
        }
        v.freeze()
    });
    (k.freeze(), v)
}

/// Reads the fields of a record, failing on any shortfall.
pub(crate) struct Reader(pub(crate) Bytes);

impl Reader {
    pub(crate) fn need(&self, n: usize) -> Option<()> {
        (self.0.remaining() >= n).then_some(())
    }
    pub(crate) fn i16(&mut self) -> Option<i16> {
        self.need(2)?;
        Some(self.0.get_i16())
    }
    pub(crate) fn i32(&mut self) -> Option<i32> {
        self.need(4)?;
        Some(self.0.get_i32())
    }
    pub(crate) fn i64(&mut self) -> Option<i64> {
        self.need(8)?;
        Some(self.0.get_i64())
    }
    pub(crate) fn i8(&mut self) -> Option<i8> {
        self.need(1)?;
        Some(self.0.get_i8())
    }
    pub(crate) fn nullable_str(&mut self) -> Option<Option<String>> {
        let n = self.i16()?;
        if n < 0 {
            return Some(None);
        }
        self.need(n as usize)?;
        let b = self.0.split_to(n as usize);
        Some(Some(String::from_utf8_lossy(&b).into_owned()))
    }
    pub(crate) fn str(&mut self) -> Option<String> {
        self.nullable_str()?
    }
    pub(crate) fn bytes(&mut self) -> Option<Bytes> {
        let n = self.i32()?;
        if n < 0 {
            return Some(Bytes::new());
        }
        self.need(n as usize)?;
        Some(self.0.split_to(n as usize))
    }
}

/// Decodes a `__consumer_offsets` record; `None` for versions or types this broker does not read
/// (they are skipped, as Kafka skips unknown record types).
pub fn decode(key: &Bytes, value: Option<&Bytes>) -> Option<CoordinatorRecord> {
    let mut k = Reader(key.clone());
    match k.i16()? {
        0 | 1 => {
            let group = k.str()?;
            let topic = k.str()?;
            let partition = k.i32()?;
            let value = match value {
                None => None,
                Some(v) => {
                    let mut v = Reader(v.clone());
                    let version = v.i16()?;
                    let offset = v.i64()?;
                    let leader_epoch = if version >= 3 { v.i32()? } else { -1 };
                    let metadata = v.str()?;
                    let commit_timestamp = v.i64()?;
                    Some(CommittedOffset {
                        offset,
                        leader_epoch,
                        metadata,
                        commit_timestamp,
                    })
                }
            };
            Some(CoordinatorRecord::Offset {
                group,
                topic,
                partition,
                value,
            })
        }
        2 => {
            let group = k.str()?;
            let value = match value {
                None => None,
                Some(v) => {
                    let mut v = Reader(v.clone());
                    let version = v.i16()?;
                    if !(0..=3).contains(&version) {
                        return None;
                    }
                    let protocol_type = v.str()?;
                    let generation = v.i32()?;
                    let protocol = v.nullable_str()?;
                    let leader = v.nullable_str()?;
                    let state_timestamp = if version >= 2 { v.i64()? } else { -1 };
                    let n = v.i32()?.max(0);
                    let mut members = Vec::new();
                    for _ in 0..n {
                        let member_id = v.str()?;
                        let group_instance_id = if version >= 3 {
                            v.nullable_str()?
                        } else {
                            None
                        };
                        let client_id = v.str()?;
                        let client_host = v.str()?;
                        let rebalance_timeout_ms = if version >= 1 { v.i32()? } else { -1 };
                        let session_timeout_ms = v.i32()?;
                        let subscription = v.bytes()?;
                        let assignment = v.bytes()?;
                        members.push(StoredMember {
                            member_id,
                            group_instance_id,
                            client_id,
                            client_host,
                            rebalance_timeout_ms,
                            session_timeout_ms,
                            subscription,
                            assignment,
                        });
                    }
                    Some(StoredGroup {
                        protocol_type,
                        generation,
                        protocol,
                        leader,
                        state_timestamp,
                        members,
                    })
                }
            };
            Some(CoordinatorRecord::Group { group, value })
        }
        // Consumer-protocol groups' records (types 3 to 8): `super::consumer::storage`.
        _ => None,
    }
}

/// The `__consumer_offsets` partition of a group: `abs(javaHashCode(group)) % partitions`, as
/// Kafka computes it, so a group lands where Kafka would put it.
pub fn partition_for_group(group: &str, partitions: i32) -> i32 {
    let mut h: i32 = 0;
    for unit in group.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(i32::from(unit));
    }
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % partitions.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_records_round_trip() {
        let c = CommittedOffset {
            offset: 42,
            leader_epoch: 3,
            metadata: "meta".into(),
            commit_timestamp: 1000,
        };
        let (k, v) = offset_record("g", "t", 7, Some(&c));
        assert_eq!(
            decode(&k, v.as_ref()),
            Some(CoordinatorRecord::Offset {
                group: "g".into(),
                topic: "t".into(),
                partition: 7,
                value: Some(c)
            })
        );
        let (k, v) = offset_record("g", "t", 7, None);
        assert!(matches!(
            decode(&k, v.as_ref()),
            Some(CoordinatorRecord::Offset { value: None, .. })
        ));
    }

    #[test]
    fn group_records_round_trip() {
        let g = StoredGroup {
            protocol_type: "consumer".into(),
            generation: 5,
            protocol: Some("range".into()),
            leader: Some("m1".into()),
            state_timestamp: 9,
            members: vec![StoredMember {
                member_id: "m1".into(),
                group_instance_id: Some("i1".into()),
                client_id: "c".into(),
                client_host: "/127.0.0.1".into(),
                rebalance_timeout_ms: 300_000,
                session_timeout_ms: 45_000,
                subscription: Bytes::from_static(b"sub"),
                assignment: Bytes::from_static(b"asg"),
            }],
        };
        let (k, v) = group_record("grp", Some(&g));
        assert_eq!(
            decode(&k, v.as_ref()),
            Some(CoordinatorRecord::Group {
                group: "grp".into(),
                value: Some(g)
            })
        );
        assert_eq!(decode(&Bytes::from_static(&[0, 9]), None), None);
        assert_eq!(decode(&Bytes::from_static(&[0]), None), None);
    }

    #[test]
    fn group_partition_matches_java_hash_code() {
        // Java: "test-group".hashCode() == 627841412, so partition 12 of 50.
        assert_eq!(partition_for_group("test-group", 50), 12);
        assert_eq!(partition_for_group("", 50), 0);
        assert!((0..50).contains(&partition_for_group("ключ", 50)));
    }
}
