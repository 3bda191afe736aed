//! A consumer group's records in `__consumer_offsets`, in Apache Kafka's layouts (record types
//! 3 to 8, values in the flexible encoding, version 0): the group epoch, the subscribed topics'
//! metadata, each member's subscription, each member's target assignment with the assignment
//! epoch, and each member's current assignment. A write carries only what changed since the last
//! one ([`changes`]); a removed member leaves tombstones; replay ([`Replayed`]) rebuilds the
//! group from the latest value of each key.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use uuid::Uuid;

use super::assignor::Assignment;
use super::group::{stored_member, ClassicProtocol, ConsumerGroup, Member};
use super::reconcile::{MemberState, Reconciled};
use super::written::Written;
use crate::coordinator::storage::put_str;

/// Key types (Kafka's record types).
const GROUP_METADATA: i16 = 3;
const PARTITION_METADATA: i16 = 4;
const MEMBER_METADATA: i16 = 5;
const TARGET_METADATA: i16 = 6;
const TARGET_MEMBER: i16 = 7;
const CURRENT_MEMBER: i16 = 8;

/// A record: key and value (`None` = tombstone).
pub type Record = (Bytes, Option<Bytes>);

fn key(kind: i16, group: &str, member: Option<&str>) -> Bytes {
    let mut k = BytesMut::new();
    k.put_i16(kind);
    put_str(&mut k, group);
    if let Some(m) = member {
        put_str(&mut k, m);
    }
    k.freeze()
}

fn uvarint(b: &mut BytesMut, mut v: u64) {
    while v >= 0x80 {
        b.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    b.put_u8(v as u8);
}

fn compact_str(b: &mut BytesMut, s: Option<&str>) {
    match s {
        None => uvarint(b, 0),
        Some(s) => {
            uvarint(b, s.len() as u64 + 1);
            b.put_slice(s.as_bytes());
        }
    }
}

fn no_tags(b: &mut BytesMut) {
    uvarint(b, 0);
}

fn value(build: impl FnOnce(&mut BytesMut)) -> Bytes {
    let mut v = BytesMut::new();
    v.put_i16(0);
    build(&mut v);
    no_tags(&mut v);
    v.freeze()
}

fn topic_partitions(b: &mut BytesMut, a: &Assignment) {
    let topics: Vec<(&Uuid, &BTreeSet<i32>)> = a.iter().filter(|(_, p)| !p.is_empty()).collect();
    uvarint(b, topics.len() as u64 + 1);
    for (t, ps) in topics {
        b.put_slice(t.as_bytes());
        uvarint(b, ps.len() as u64 + 1);
        for p in ps {
            b.put_i32(*p);
        }
        no_tags(b);
    }
}

/// The tag of `ClassicMemberMetadata` in a member's subscription value.
const CLASSIC_MEMBER_METADATA_TAG: u64 = 0;

fn member_value(m: &Member) -> Bytes {
    let mut v = BytesMut::new();
    v.put_i16(0);
    compact_str(&mut v, m.instance_id.as_deref());
    compact_str(&mut v, m.rack_id.as_deref());
    compact_str(&mut v, Some(&m.client_id));
    compact_str(&mut v, Some(&m.client_host));
    uvarint(&mut v, m.topic_names.len() as u64 + 1);
    for n in &m.topic_names {
        compact_str(&mut v, Some(n));
    }
    compact_str(&mut v, m.topic_regex.as_deref());
    v.put_i32(m.rebalance_timeout_ms);
    compact_str(&mut v, m.server_assignor.as_deref());
    match &m.classic {
        None => no_tags(&mut v),
        Some(c) => {
            // A tagged, nullable struct: its size counts the presence byte before it.
            let mut s = BytesMut::new();
            s.put_u8(1);
            s.put_i32(c.session_timeout_ms);
            uvarint(&mut s, c.protocols.len() as u64 + 1);
            for (name, metadata) in &c.protocols {
                compact_str(&mut s, Some(name));
                uvarint(&mut s, metadata.len() as u64 + 1);
                s.put_slice(metadata);
                no_tags(&mut s);
            }
            no_tags(&mut s);
            uvarint(&mut v, 1);
            uvarint(&mut v, CLASSIC_MEMBER_METADATA_TAG);
            uvarint(&mut v, s.len() as u64);
            v.put_slice(&s);
        }
    }
    v.freeze()
}

fn current_value(c: &Reconciled) -> Bytes {
    value(|v| {
        v.put_i32(c.member_epoch);
        v.put_i32(c.previous_member_epoch);
        v.put_i8(c.state.code());
        topic_partitions(v, &c.assigned);
        topic_partitions(v, &c.pending_revocation);
    })
}

fn metadata_value(g: &ConsumerGroup, name_of: &dyn Fn(Uuid) -> Option<String>) -> Bytes {
    value(|v| {
        uvarint(v, g.subscribed_metadata.len() as u64 + 1);
        for (id, partitions) in &g.subscribed_metadata {
            v.put_slice(id.as_bytes());
            compact_str(v, Some(&name_of(*id).unwrap_or_default()));
            v.put_i32(*partitions);
            // No per-partition rack metadata: the assignors are not rack-aware.
            uvarint(v, 1);
            no_tags(v);
        }
    })
}

/// The records that bring storage from what was last written to `g`'s state, and what will
/// then have been written (to keep once the records are appended).
pub fn changes(
    g: &ConsumerGroup,
    name_of: &dyn Fn(Uuid) -> Option<String>,
) -> (Vec<Record>, Written) {
    let was = &g.written;
    let mut now = Written {
        epoch: Some(g.group_epoch),
        assignment_epoch: Some(g.assignment_epoch),
        metadata: Some(metadata_value(g, name_of)),
        ..Written::default()
    };
    let mut out = Vec::new();
    for (id, m) in &g.members {
        let v = member_value(m);
        if was.members.get(id) != Some(&v) {
            out.push((key(MEMBER_METADATA, &g.id, Some(id)), Some(v.clone())));
        }
        now.members.insert(id.clone(), v);
    }
    for id in was.members.keys().filter(|id| !g.members.contains_key(*id)) {
        out.push((key(CURRENT_MEMBER, &g.id, Some(id)), None));
        out.push((key(TARGET_MEMBER, &g.id, Some(id)), None));
        out.push((key(MEMBER_METADATA, &g.id, Some(id)), None));
    }
    if was.metadata != now.metadata {
        out.push((key(PARTITION_METADATA, &g.id, None), now.metadata.clone()));
    }
    if was.epoch != now.epoch {
        out.push((
            key(GROUP_METADATA, &g.id, None),
            Some(value(|v| v.put_i32(g.group_epoch))),
        ));
    }
    for id in g.members.keys() {
        let target = g.target.get(id).cloned().unwrap_or_default();
        let v = value(|v| topic_partitions(v, &target));
        if was.targets.get(id) != Some(&v) {
            out.push((key(TARGET_MEMBER, &g.id, Some(id)), Some(v.clone())));
        }
        now.targets.insert(id.clone(), v);
    }
    if was.assignment_epoch != now.assignment_epoch {
        out.push((
            key(TARGET_METADATA, &g.id, None),
            Some(value(|v| v.put_i32(g.assignment_epoch))),
        ));
    }
    for (id, m) in &g.members {
        let v = current_value(&m.current);
        if was.currents.get(id) != Some(&v) {
            out.push((key(CURRENT_MEMBER, &g.id, Some(id)), Some(v.clone())));
        }
        now.currents.insert(id.clone(), v);
    }
    (out, now)
}

/// Tombstones for every record of `g` (the group is deleted).
pub fn tombstones(g: &ConsumerGroup) -> Vec<Record> {
    let mut out = Vec::new();
    for id in g
        .written
        .members
        .keys()
        .chain(g.members.keys())
        .collect::<BTreeSet<_>>()
    {
        out.push((key(CURRENT_MEMBER, &g.id, Some(id)), None));
        out.push((key(TARGET_MEMBER, &g.id, Some(id)), None));
        out.push((key(MEMBER_METADATA, &g.id, Some(id)), None));
    }
    out.push((key(TARGET_METADATA, &g.id, None), None));
    out.push((key(PARTITION_METADATA, &g.id, None), None));
    out.push((key(GROUP_METADATA, &g.id, None), None));
    out
}

/// Reads a flexible-encoding value.
struct Reader(Bytes);

impl Reader {
    fn need(&self, n: usize) -> Option<()> {
        (self.0.remaining() >= n).then_some(())
    }
    fn i8(&mut self) -> Option<i8> {
        self.need(1)?;
        Some(self.0.get_i8())
    }
    fn i16(&mut self) -> Option<i16> {
        self.need(2)?;
        Some(self.0.get_i16())
    }
    fn i32(&mut self) -> Option<i32> {
        self.need(4)?;
        Some(self.0.get_i32())
    }
    fn uvarint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.i8()? as u8;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    /// A compact length: `None` inside for null.
    fn len(&mut self) -> Option<Option<usize>> {
        let n = self.uvarint()?;
        if n == 0 {
            return Some(None);
        }
        let n = usize::try_from(n - 1).ok()?;
        // Every element takes at least a byte: a length beyond the bytes left is corrupt.
        self.need(n)?;
        Some(Some(n))
    }
    fn nullable_str(&mut self) -> Option<Option<String>> {
        let Some(n) = self.len()? else {
            return Some(None);
        };
        let b = self.0.split_to(n);
        Some(Some(String::from_utf8_lossy(&b).into_owned()))
    }
    fn str(&mut self) -> Option<String> {
        self.nullable_str()?
    }
    fn bytes(&mut self) -> Option<Bytes> {
        let n = self.len()?.unwrap_or(0);
        Some(self.0.split_to(n))
    }
    /// The tagged fields of a member's subscription value: its `ClassicMemberMetadata`, if
    /// there (other tags are skipped).
    fn classic_member_metadata(&mut self) -> Option<Option<ClassicProtocol>> {
        let mut classic = None;
        for _ in 0..self.uvarint()? {
            let tag = self.uvarint()?;
            let size = usize::try_from(self.uvarint()?).ok()?;
            self.need(size)?;
            let mut field = Reader(self.0.split_to(size));
            if tag != CLASSIC_MEMBER_METADATA_TAG || field.i8()? < 0 {
                continue;
            }
            let session_timeout_ms = field.i32()?;
            let mut protocols = Vec::new();
            for _ in 0..field.len()?.unwrap_or(0) {
                let name = field.str()?;
                let metadata = field.bytes()?;
                field.skip_tags()?;
                protocols.push((name, metadata));
            }
            field.skip_tags()?;
            classic = Some(ClassicProtocol {
                session_timeout_ms,
                protocols,
            });
        }
        Some(classic)
    }
    fn uuid(&mut self) -> Option<Uuid> {
        self.need(16)?;
        let mut b = [0u8; 16];
        self.0.copy_to_slice(&mut b);
        Some(Uuid::from_bytes(b))
    }
    fn skip_tags(&mut self) -> Option<()> {
        let n = self.uvarint()?;
        for _ in 0..n {
            self.uvarint()?;
            let size = usize::try_from(self.uvarint()?).ok()?;
            self.need(size)?;
            self.0.advance(size);
        }
        Some(())
    }
    fn topic_partitions(&mut self) -> Option<Assignment> {
        let mut a = Assignment::new();
        for _ in 0..self.len()?.unwrap_or(0) {
            let t = self.uuid()?;
            let ps = a.entry(t).or_default();
            for _ in 0..self.len()?.unwrap_or(0) {
                ps.insert(self.i32()?);
            }
            self.skip_tags()?;
        }
        a.retain(|_, p| !p.is_empty());
        Some(a)
    }
}

/// One decoded consumer-group record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerRecord {
    /// Group epoch (`None`: the group is deleted).
    Epoch(Option<i32>),
    /// Subscribed topics' partition counts.
    Metadata(Option<BTreeMap<Uuid, i32>>),
    /// A member's subscription (`None`: the member left).
    Member(String, Option<Box<Member>>),
    /// The assignment epoch.
    AssignmentEpoch(Option<i32>),
    /// A member's target assignment.
    Target(String, Option<Assignment>),
    /// A member's current assignment.
    Current(String, Option<Reconciled>),
}

/// Decodes a `__consumer_offsets` record of a consumer-protocol group (key type 3 to 8): its
/// group and what it says; `None` for another type or a malformed record.
pub fn decode_record(key: &Bytes, value: Option<&Bytes>) -> Option<(String, ConsumerRecord)> {
    let mut k = crate::coordinator::storage::Reader(key.clone());
    let kind = k.i16()?;
    decode(kind, &mut k, value)
}

/// Decodes a record with key type 3 to 8 (`None` for a malformed or unknown one). `k` is
/// positioned after the key's type.
fn decode(
    kind: i16,
    k: &mut crate::coordinator::storage::Reader,
    value: Option<&Bytes>,
) -> Option<(String, ConsumerRecord)> {
    let group = k.str()?;
    let member = matches!(kind, MEMBER_METADATA | TARGET_MEMBER | CURRENT_MEMBER)
        .then(|| k.str())
        .flatten();
    let mut v = match value {
        Some(v) => {
            let mut r = Reader(v.clone());
            r.i16()?; // value version: 0 (later versions only add tagged fields)
            Some(r)
        }
        None => None,
    };
    let record = match (kind, v.as_mut()) {
        (GROUP_METADATA, v) => ConsumerRecord::Epoch(match v {
            Some(v) => Some(v.i32()?),
            None => None,
        }),
        (PARTITION_METADATA, v) => ConsumerRecord::Metadata(match v {
            Some(v) => {
                let mut m = BTreeMap::new();
                for _ in 0..v.len()?.unwrap_or(0) {
                    let id = v.uuid()?;
                    let _name = v.str()?;
                    let partitions = v.i32()?;
                    for _ in 0..v.len()?.unwrap_or(0) {
                        v.i32()?;
                        for _ in 0..v.len()?.unwrap_or(0) {
                            v.str()?;
                        }
                        v.skip_tags()?;
                    }
                    v.skip_tags()?;
                    m.insert(id, partitions);
                }
                Some(m)
            }
            None => None,
        }),
        (MEMBER_METADATA, v) => ConsumerRecord::Member(
            member.clone()?,
            match v {
                Some(v) => {
                    let instance_id = v.nullable_str()?;
                    let rack_id = v.nullable_str()?;
                    let client_id = v.str()?;
                    let client_host = v.str()?;
                    let mut names = Vec::new();
                    for _ in 0..v.len()?.unwrap_or(0) {
                        names.push(v.str()?);
                    }
                    let regex = v.nullable_str()?.filter(|r| !r.is_empty());
                    let rebalance_timeout_ms = v.i32()?;
                    let assignor = v.nullable_str()?;
                    let classic = v.classic_member_metadata()?;
                    Some(Box::new(stored_member(
                        member.clone()?,
                        instance_id,
                        rack_id,
                        client_id,
                        client_host,
                        names,
                        regex,
                        assignor,
                        rebalance_timeout_ms,
                        Reconciled {
                            state: MemberState::Stable,
                            member_epoch: 0,
                            previous_member_epoch: 0,
                            assigned: Assignment::new(),
                            pending_revocation: Assignment::new(),
                        },
                        classic,
                    )))
                }
                None => None,
            },
        ),
        (TARGET_METADATA, v) => ConsumerRecord::AssignmentEpoch(match v {
            Some(v) => Some(v.i32()?),
            None => None,
        }),
        (TARGET_MEMBER, v) => ConsumerRecord::Target(
            member?,
            match v {
                Some(v) => Some(v.topic_partitions()?),
                None => None,
            },
        ),
        (CURRENT_MEMBER, v) => ConsumerRecord::Current(
            member?,
            match v {
                Some(v) => {
                    let member_epoch = v.i32()?;
                    let previous_member_epoch = v.i32()?;
                    let state = MemberState::from_code(v.i8()?);
                    let assigned = v.topic_partitions()?;
                    let pending_revocation = v.topic_partitions()?;
                    Some(Reconciled {
                        state,
                        member_epoch,
                        previous_member_epoch,
                        assigned,
                        pending_revocation,
                    })
                }
                None => None,
            },
        ),
        _ => return None,
    };
    Some((group, record))
}

/// A consumer group being rebuilt from its records, latest value per key.
#[derive(Debug, Default)]
pub struct Replayed {
    epoch: Option<i32>,
    assignment_epoch: i32,
    metadata: BTreeMap<Uuid, i32>,
    members: BTreeMap<String, Member>,
    targets: HashMap<String, Assignment>,
    currents: HashMap<String, Reconciled>,
}

impl Replayed {
    /// Applies one record.
    pub fn apply(&mut self, record: ConsumerRecord) {
        match record {
            ConsumerRecord::Epoch(e) => {
                if e.is_none() {
                    *self = Replayed::default();
                } else {
                    self.epoch = e;
                }
            }
            ConsumerRecord::Metadata(m) => self.metadata = m.unwrap_or_default(),
            ConsumerRecord::Member(id, Some(m)) => {
                self.members.insert(id, *m);
            }
            ConsumerRecord::Member(id, None) => {
                self.members.remove(&id);
            }
            ConsumerRecord::AssignmentEpoch(e) => self.assignment_epoch = e.unwrap_or(0),
            ConsumerRecord::Target(id, Some(a)) => {
                self.targets.insert(id, a);
            }
            ConsumerRecord::Target(id, None) => {
                self.targets.remove(&id);
            }
            ConsumerRecord::Current(id, Some(c)) => {
                self.currents.insert(id, c);
            }
            ConsumerRecord::Current(id, None) => {
                self.currents.remove(&id);
            }
        }
    }

    /// The group, if its records describe one (members get a fresh session), with storage
    /// marked as holding exactly this state.
    pub fn into_group(
        self,
        id: &str,
        now: std::time::Instant,
        session: std::time::Duration,
        name_of: &dyn Fn(Uuid) -> Option<String>,
    ) -> Option<ConsumerGroup> {
        let epoch = self.epoch?;
        let mut g = ConsumerGroup::new(id);
        g.group_epoch = epoch;
        g.assignment_epoch = self.assignment_epoch;
        g.subscribed_metadata = self.metadata;
        let mut currents = self.currents;
        for (member_id, mut m) in self.members {
            if let Some(c) = currents.remove(&member_id) {
                m.current = c;
            }
            g.restore_member(m, now, session);
        }
        g.target = self
            .targets
            .into_iter()
            .filter(|(m, _)| g.members.contains_key(m))
            .collect();
        let (_, written) = changes(&g, name_of);
        g.written = written;
        Some(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordinator::consumer::group::{Heartbeat, Limits, Topics};

    struct OneTopic;
    impl Topics for OneTopic {
        fn lookup(&self, name: &str) -> Option<(Uuid, i32)> {
            (name == "t").then_some((Uuid::from_u128(7), 4))
        }
        fn names(&self) -> Vec<String> {
            vec!["t".into()]
        }
        fn name_of(&self, _: Uuid) -> Option<String> {
            Some("t".into())
        }
    }

    fn replay(records: &[Record]) -> Option<ConsumerGroup> {
        let mut r = Replayed::default();
        for (k, v) in records {
            let (group, rec) = decode_record(k, v.as_ref()).expect("decodes");
            assert_eq!(group, "g");
            r.apply(rec);
        }
        r.into_group(
            "g",
            std::time::Instant::now(),
            std::time::Duration::from_secs(45),
            &|_| Some("t".into()),
        )
    }

    #[test]
    fn a_group_written_as_changes_replays_to_the_same_state() {
        let limits = Limits {
            session_timeout: std::time::Duration::from_secs(45),
            heartbeat_interval_ms: 5000,
            max_size: 10,
            default_assignor: "uniform",
        };
        let mut g = ConsumerGroup::new("g");
        let join = |id: &str| Heartbeat {
            version: 1,
            member_id: id.into(),
            member_epoch: 0,
            rebalance_timeout_ms: 30_000,
            subscribed_topic_names: Some(vec!["t".into()]),
            owned: Some(Assignment::new()),
            client_id: "c".into(),
            client_host: "/h".into(),
            instance_id: (id == "b").then(|| "inst".to_string()),
            ..Heartbeat::default()
        };
        let now = std::time::Instant::now();
        let mut log: Vec<Record> = Vec::new();
        let persist = |g: &mut ConsumerGroup, log: &mut Vec<Record>| {
            let (records, written) = changes(g, &|_| Some("t".into()));
            log.extend(records);
            g.written = written;
        };
        g.heartbeat(join("a"), &OneTopic, limits, now);
        persist(&mut g, &mut log);
        g.heartbeat(join("b"), &OneTopic, limits, now);
        persist(&mut g, &mut log);
        let (again, _) = changes(&g, &|_| Some("t".into()));
        assert!(again.is_empty(), "nothing changed: nothing to write");
        let back = replay(&log).expect("a group");
        assert_eq!(back.group_epoch, g.group_epoch);
        assert_eq!(back.assignment_epoch, g.assignment_epoch);
        assert_eq!(back.target, g.target);
        assert_eq!(back.subscribed_metadata, g.subscribed_metadata);
        assert_eq!(back.members.len(), 2);
        for (id, m) in &g.members {
            let b = &back.members[id];
            assert_eq!(b.current, m.current);
            assert_eq!(b.topic_names, m.topic_names);
            assert_eq!(b.instance_id, m.instance_id);
        }
        // A member leaves: tombstones; deleting the group: no group on replay.
        g.heartbeat(
            Heartbeat {
                member_id: "a".into(),
                member_epoch: -1,
                ..Heartbeat::default()
            },
            &OneTopic,
            limits,
            now,
        );
        persist(&mut g, &mut log);
        assert_eq!(replay(&log).expect("a group").members.len(), 1);
        log.extend(tombstones(&g));
        assert!(replay(&log).is_none());
    }

    #[test]
    fn malformed_values_are_rejected_not_trusted() {
        let k = key(CURRENT_MEMBER, "g", Some("m"));
        // A topic array claiming far more entries than bytes.
        let mut v = BytesMut::new();
        v.put_i16(0);
        v.put_i32(3);
        v.put_i32(2);
        v.put_i8(0);
        uvarint(&mut v, 1 << 40);
        assert!(decode_record(&k, Some(&v.freeze())).is_none());
    }
}
