//! Choosing a partition for a record.
//!
//! Keyed records: `murmur2(key) & 0x7fffffff % partitions`, the formula of the Java client's
//! default partitioner and librdkafka's `murmur2_random`, so the same key lands in the same
//! partition whichever client wrote it. Unkeyed records: uniform sticky partitioning (KIP-794):
//! stay on one partition until `batch.size` bytes went to it, then move to another at random.
//! [`PartitionChooser`] applies the configured `partitioner` (or a custom one) to a record.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use rustc_hash::FxHashMap;

use crate::config::PartitionerKind;

/// Kafka's murmur2 variant (seed `0x9747b28c`), on signed 32-bit arithmetic like the Java code.
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let len = data.len();
    let mut h: u32 = SEED ^ (len as u32);
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = chunks.remainder();
    if tail.len() >= 3 {
        h ^= u32::from(tail[2]) << 16;
    }
    if tail.len() >= 2 {
        h ^= u32::from(tail[1]) << 8;
    }
    if !tail.is_empty() {
        h ^= u32::from(tail[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The default partition of a key among `partitions`.
pub fn partition_for_key(key: &[u8], partitions: i32) -> i32 {
    (murmur2(key) & 0x7fff_ffff) % partitions.max(1)
}

/// CRC-32 (IEEE 802.3, zlib's `crc32`) of `data`: the hash of librdkafka's `consistent` and
/// `consistent_random` partitioners.
pub fn crc32(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xedb8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            table[i] = c;
            i += 1;
        }
        table
    };
    let mut crc = !0u32;
    for &b in data {
        crc = TABLE[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}

/// 32-bit FNV-1a of `data`: the hash of librdkafka's `fnv1a` and `fnv1a_random` partitioners.
pub fn fnv1a(data: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for &b in data {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// What librdkafka's `fnv1a` partitioners take the partition modulo: the FNV-1a hash read as a
/// signed 32-bit value, made non-negative (Sarama's hash partitioner, which librdkafka
/// matches; the most negative value stays as it is).
pub fn fnv1a_partition_hash(data: &[u8]) -> u32 {
    (fnv1a(data) as i32).wrapping_abs() as u32
}

/// A user-supplied partitioner.
pub trait Partitioner: Send + Sync + std::fmt::Debug {
    /// Picks a partition in `0..partitions` for a record of `topic` with `key`.
    fn partition(&self, topic: &str, key: Option<&[u8]>, partitions: i32) -> i32;
}

/// A small xorshift generator: good enough to spread sticky partitions, no dependency.
#[derive(Debug)]
struct Rng(AtomicU64);

impl Rng {
    fn seeded() -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x2545_f491, |d| d.as_nanos() as u64)
            | 1;
        Rng(AtomicU64::new(seed))
    }

    fn next(&self) -> u64 {
        let mut x = self.0.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0.store(x, Ordering::Relaxed);
        x
    }
}

/// Per-topic state of the uniform sticky partitioner.
#[derive(Debug, Default, Clone, Copy)]
struct Sticky {
    partition: i32,
    bytes: usize,
}

/// Sticky assignment for unkeyed records (KIP-794) and round robin.
#[derive(Debug)]
pub struct StickyPartitioner {
    batch_size: usize,
    /// By the application's topics, looked up per record: a fast hasher.
    state: Mutex<FxHashMap<String, Sticky>>,
    round_robin: Mutex<FxHashMap<String, i32>>,
    rng: Rng,
}

impl StickyPartitioner {
    /// A partitioner that switches partitions after `batch_size` bytes.
    pub fn new(batch_size: usize) -> Self {
        StickyPartitioner {
            batch_size: batch_size.max(1),
            state: Mutex::new(FxHashMap::default()),
            round_robin: Mutex::new(FxHashMap::default()),
            rng: Rng::seeded(),
        }
    }

    /// The partition for an unkeyed record of `size` bytes.
    pub fn sticky(&self, topic: &str, partitions: i32, size: usize) -> i32 {
        let partitions = partitions.max(1);
        let Ok(mut state) = self.state.lock() else {
            return (self.rng.next() % partitions as u64) as i32;
        };
        let step = |entry: &mut Sticky| {
            if entry.bytes >= self.batch_size || entry.partition >= partitions {
                let mut next = (self.rng.next() % partitions as u64) as i32;
                if partitions > 1 && next == entry.partition {
                    next = (next + 1) % partitions;
                }
                *entry = Sticky {
                    partition: next,
                    bytes: 0,
                };
            }
            entry.bytes += size;
            entry.partition
        };
        // Looked up by `&str`: the key is allocated only for a topic's first record.
        if let Some(entry) = state.get_mut(topic) {
            return step(entry);
        }
        let mut entry = Sticky {
            partition: (self.rng.next() % partitions as u64) as i32,
            bytes: 0,
        };
        let partition = step(&mut entry);
        state.insert(topic.to_string(), entry);
        partition
    }

    /// Sticky choices for a run of unkeyed records of `topic`, with one lookup of its state:
    /// the partitioner is locked until the run is dropped (do not call
    /// [`StickyPartitioner::sticky`] meanwhile).
    pub(crate) fn run<'a>(&'a self, topic: &str, partitions: i32) -> StickyRun<'a> {
        let partitions = partitions.max(1);
        let mut state = self.state.lock().ok();
        let (key, entry) = match state.as_mut().and_then(|s| s.remove_entry(topic)) {
            Some((k, e)) => (k, e),
            None => (
                topic.to_string(),
                Sticky {
                    partition: (self.rng.next() % partitions as u64) as i32,
                    bytes: 0,
                },
            ),
        };
        StickyRun {
            owner: self,
            state,
            key: Some(key),
            entry,
            partitions,
        }
    }

    /// A uniformly random partition (librdkafka's `random` partitioner for keyed records).
    pub fn random(&self, partitions: i32) -> i32 {
        (self.rng.next() % partitions.max(1) as u64) as i32
    }

    /// The next partition in round-robin order.
    pub fn round_robin(&self, topic: &str, partitions: i32) -> i32 {
        let partitions = partitions.max(1);
        let Ok(mut rr) = self.round_robin.lock() else {
            return 0;
        };
        // Looked up by `&str`: the key is allocated only for a topic's first record.
        if let Some(next) = rr.get_mut(topic) {
            *next = (*next + 1) % partitions;
            return *next;
        }
        rr.insert(topic.to_string(), 0);
        0
    }
}

/// A run of sticky choices for one topic (see [`StickyPartitioner::run`]).
pub(crate) struct StickyRun<'a> {
    owner: &'a StickyPartitioner,
    /// `None` if the lock was poisoned: choices are then random, as in `sticky`.
    state: Option<std::sync::MutexGuard<'a, FxHashMap<String, Sticky>>>,
    key: Option<String>,
    entry: Sticky,
    partitions: i32,
}

impl StickyRun<'_> {
    /// The partition for the run's next record, of `size` bytes (what `sticky` would choose).
    pub fn next(&mut self, size: usize) -> i32 {
        let owner = self.owner;
        if self.state.is_none() {
            return (owner.rng.next() % self.partitions as u64) as i32;
        }
        let entry = &mut self.entry;
        if entry.bytes >= owner.batch_size || entry.partition >= self.partitions {
            let mut next = (owner.rng.next() % self.partitions as u64) as i32;
            if self.partitions > 1 && next == entry.partition {
                next = (next + 1) % self.partitions;
            }
            *entry = Sticky {
                partition: next,
                bytes: 0,
            };
        }
        entry.bytes += size;
        entry.partition
    }
}

impl Drop for StickyRun<'_> {
    fn drop(&mut self) {
        if let (Some(state), Some(key)) = (self.state.as_mut(), self.key.take()) {
            state.insert(key, self.entry);
        }
    }
}

/// The producer's partition choice for records without an explicit partition: a custom
/// [`Partitioner`] when one is set, otherwise the configured `partitioner` (librdkafka's names
/// and hashes), with sticky partitioning for the records it does not hash.
#[derive(Debug)]
pub(crate) struct PartitionChooser {
    kind: PartitionerKind,
    ignore_keys: bool,
    sticky: StickyPartitioner,
    /// Set by `Producer::with_partitioner`; `has_custom` spares the default path the lock.
    custom: RwLock<Option<Arc<dyn Partitioner>>>,
    has_custom: AtomicBool,
}

impl PartitionChooser {
    /// A chooser for `partitioner` (`kind`), `partitioner.ignore.keys` and `batch.size`.
    pub fn new(kind: PartitionerKind, ignore_keys: bool, batch_size: usize) -> Self {
        PartitionChooser {
            kind,
            ignore_keys,
            sticky: StickyPartitioner::new(batch_size),
            custom: RwLock::new(None),
            has_custom: AtomicBool::new(false),
        }
    }

    /// Replaces the configured partitioner with `custom`.
    pub fn set_custom(&self, custom: Arc<dyn Partitioner>) {
        if let Ok(mut slot) = self.custom.write() {
            *slot = Some(custom);
            self.has_custom.store(true, Ordering::Release);
        }
    }

    fn custom(&self) -> Option<Arc<dyn Partitioner>> {
        if !self.has_custom.load(Ordering::Acquire) {
            return None;
        }
        self.custom.read().ok().and_then(|c| c.clone())
    }

    /// Whether an unkeyed (or key-ignoring) run of records of one topic can take its partitions
    /// from one [`StickyRun`] (the default partitioner, no custom one).
    pub fn sticky_runs(&self) -> bool {
        !self.has_custom.load(Ordering::Acquire) && self.kind == PartitionerKind::Default
    }

    /// Whether a record with `key` is placed sticky by the default partitioner.
    pub fn is_sticky(&self, key: Option<&[u8]>) -> bool {
        key.is_none() || self.ignore_keys
    }

    /// Sticky choices for a run of records of `topic` (see [`StickyPartitioner::run`]).
    pub fn run<'a>(&'a self, topic: &str, partitions: i32) -> StickyRun<'a> {
        self.sticky.run(topic, partitions)
    }

    /// The partition in `0..partitions` for a record of `topic` with `key`, `size` bytes.
    pub fn choose(&self, topic: &str, key: Option<&[u8]>, partitions: i32, size: usize) -> i32 {
        if let Some(custom) = self.custom() {
            return custom
                .partition(topic, key, partitions)
                .clamp(0, (partitions - 1).max(0));
        }
        let key = key.filter(|_| !self.ignore_keys);
        let n = partitions.max(1);
        let hashed = |h: u32| (h % n as u32) as i32;
        match (self.kind, key) {
            (PartitionerKind::RoundRobin, _) => self.sticky.round_robin(topic, partitions),
            (PartitionerKind::Default, Some(key)) => partition_for_key(key, partitions),
            (PartitionerKind::Murmur2, key) => {
                partition_for_key(key.unwrap_or_default(), partitions)
            }
            (PartitionerKind::Consistent, key) => hashed(crc32(key.unwrap_or_default())),
            (PartitionerKind::ConsistentRandom, Some(key)) if !key.is_empty() => hashed(crc32(key)),
            (PartitionerKind::Fnv1a, key) => hashed(fnv1a_partition_hash(key.unwrap_or_default())),
            (PartitionerKind::Fnv1aRandom, Some(key)) => hashed(fnv1a_partition_hash(key)),
            (PartitionerKind::Random, Some(_)) => self.sticky.random(partitions),
            (
                PartitionerKind::Default
                | PartitionerKind::ConsistentRandom
                | PartitionerKind::Fnv1aRandom
                | PartitionerKind::Random,
                _,
            ) => self.sticky.sticky(topic, partitions, size),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur2_matches_kafkas_published_values() {
        // Values from Apache Kafka's own unit tests of Utils.murmur2.
        let cases: [(&[u8], i32); 6] = [
            (b"21", -973_932_308),
            (b"foobar", -790_332_482),
            (b"a-little-bit-long-string", -985_981_536),
            (b"a-little-bit-longer-string", -1_486_304_829),
            (
                b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58_897_971,
            ),
            (b"abc", 479_470_107),
        ];
        for (input, want) in cases {
            assert_eq!(murmur2(input), want, "{}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn sticky_switches_after_batch_size() {
        let p = StickyPartitioner::new(100);
        let first = p.sticky("t", 8, 60);
        assert_eq!(p.sticky("t", 8, 60), first, "still under batch.size");
        let third = p.sticky("t", 8, 60);
        assert_ne!(third, first, "moved on after batch.size bytes");
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200 {
            seen.insert(p.sticky("t", 8, 200));
        }
        assert_eq!(seen.len(), 8, "all partitions used over time");
        assert_eq!(p.sticky("u", 1, 500), 0);
    }

    #[test]
    fn librdkafka_hashes_match_their_reference_values() {
        // The CRC-32 check value, and FNV-1a's published test vectors.
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
        assert_eq!(fnv1a(b""), 0x811c_9dc5);
        assert_eq!(fnv1a(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a(b"foobar"), 0xbf9c_f968);
        // 0xe40c292c is negative as i32: the partition hash is its absolute value.
        assert_eq!(fnv1a_partition_hash(b"a"), 0x1bf3_d6d4);
        assert_eq!(fnv1a_partition_hash(b""), 0x7ee3_623b);
    }

    #[test]
    fn round_robin_cycles() {
        let p = StickyPartitioner::new(100);
        let got: Vec<i32> = (0..6).map(|_| p.round_robin("t", 3)).collect();
        assert_eq!(got, [0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn a_sticky_run_switches_like_sticky_and_keeps_its_state() {
        let p = StickyPartitioner::new(100);
        let (first, second, after) = {
            let mut run = p.run("t", 4);
            let first: Vec<i32> = (0..4).map(|_| run.next(30)).collect();
            // 120 bytes went to the first partition: the next record switches.
            let second = run.next(30);
            (first, second, run.next(30))
        };
        assert!(first.iter().all(|&x| x == first[0] && (0..4).contains(&x)));
        assert_ne!(second, first[0]);
        assert_eq!(after, second);
        // Dropped, the run left its state (60 bytes) for `sticky`: same partition until the
        // batch size is reached.
        assert_eq!(p.sticky("t", 4, 30), second, "90 bytes");
        assert_eq!(p.sticky("t", 4, 30), second, "120 bytes");
        assert_ne!(p.sticky("t", 4, 30), second, "switched after 100 bytes");
    }
}
