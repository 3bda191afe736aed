//! Per-topic storage settings, with Apache Kafka 4.x's topic-level names, defaults and
//! validation ranges.
//!
//! [`LogConfig`] is a plain struct (tests and the broker may build one directly); the property
//! interface used by CreateTopics / AlterConfigs / DescribeConfigs is
//! [`LogConfig::from_overrides`] and [`LogConfig::entries`].

use odradek::records::{Compression, TimestampType};
use odradek::ErrorCode;

use crate::{Error, Result};

/// Every topic-level key [`LogConfig`] understands, in the order [`LogConfig::entries`] lists them.
///
/// Besides the keys the log itself acts on, this includes the Kafka topic keys that belong to
/// other layers (`min.insync.replicas`, `unclean.leader.election.enable`, the replication
/// throttles) so that clients creating topics with them are not refused; they are stored and
/// described, and the partition layer may read them.
pub const TOPIC_CONFIG_KEYS: &[&str] = &[
    "cleanup.policy",
    "compression.type",
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.zstd.level",
    "delete.retention.ms",
    "file.delete.delay.ms",
    "flush.messages",
    "flush.ms",
    "follower.replication.throttled.replicas",
    "index.interval.bytes",
    "leader.replication.throttled.replicas",
    "max.compaction.lag.ms",
    "max.message.bytes",
    "message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms",
    "message.timestamp.type",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "min.insync.replicas",
    "preallocate",
    "retention.bytes",
    "retention.ms",
    "segment.bytes",
    "segment.index.bytes",
    "segment.jitter.ms",
    "segment.ms",
    "unclean.leader.election.enable",
];

/// Smallest `segment.bytes` accepted: one batch header. Deliberately below Kafka 4.x's floor of
/// 1 MiB (KIP-1030, which added the internal `internal.segment.bytes` for tests instead), so
/// tests and small deployments can use small segments through the ordinary key.
pub const MIN_SEGMENT_BYTES: i32 = odradek::records::RECORD_BATCH_OVERHEAD as i32;

/// `compression.type`: what the broker does with the codec of incoming batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TopicCompression {
    /// `producer` (the default): store batches with the codec the producer chose.
    #[default]
    Producer,
    /// `uncompressed` (`none` is accepted as a synonym): store batches uncompressed.
    Uncompressed,
    /// `gzip`, `snappy`, `lz4` or `zstd`: store batches with this codec.
    Codec(Compression),
}

impl TopicCompression {
    /// The codec every stored batch must use, or `None` when the producer's codec is kept.
    pub fn target(self) -> Option<Compression> {
        match self {
            TopicCompression::Producer => None,
            TopicCompression::Uncompressed => Some(Compression::None),
            TopicCompression::Codec(c) => Some(c),
        }
    }

    /// The property value (`producer`, `uncompressed`, `gzip`, ...).
    pub fn name(self) -> &'static str {
        match self {
            TopicCompression::Producer => "producer",
            TopicCompression::Uncompressed | TopicCompression::Codec(Compression::None) => {
                "uncompressed"
            }
            TopicCompression::Codec(c) => c.name(),
        }
    }

    /// Parses a property value; `None` for anything Kafka would refuse (plus the `none` synonym).
    pub fn parse(value: &str) -> Option<TopicCompression> {
        match value {
            "producer" => Some(TopicCompression::Producer),
            "uncompressed" | "none" => Some(TopicCompression::Uncompressed),
            "gzip" | "snappy" | "lz4" | "zstd" => {
                Compression::from_name(value).map(TopicCompression::Codec)
            }
            _ => None,
        }
    }
}

/// `cleanup.policy`: a non-empty set of `delete` and `compact`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanupPolicy {
    /// `delete`: old segments are removed by `retention.ms` / `retention.bytes`.
    pub delete: bool,
    /// `compact`: the log cleaner keeps the latest record per key.
    pub compact: bool,
}

impl Default for CleanupPolicy {
    fn default() -> Self {
        CleanupPolicy {
            delete: true,
            compact: false,
        }
    }
}

impl CleanupPolicy {
    /// The property value: `delete`, `compact` or `compact,delete`.
    pub fn name(self) -> &'static str {
        match (self.compact, self.delete) {
            (true, true) => "compact,delete",
            (true, false) => "compact",
            _ => "delete",
        }
    }

    fn parse(value: &str) -> Option<CleanupPolicy> {
        let mut policy = CleanupPolicy {
            delete: false,
            compact: false,
        };
        for item in value.split(',').map(str::trim) {
            match item {
                "delete" => policy.delete = true,
                "compact" => policy.compact = true,
                _ => return None,
            }
        }
        (policy.delete || policy.compact).then_some(policy)
    }
}

/// The storage settings of one topic. Field docs give the Kafka property name and default.
#[derive(Debug, Clone, PartialEq)]
pub struct LogConfig {
    /// `segment.bytes` (1073741824): roll the active segment before it would exceed this size.
    pub segment_bytes: i32,
    /// `segment.ms` (604800000): roll the active segment this long after its first append.
    pub segment_ms: i64,
    /// `segment.jitter.ms` (0): stored for DescribeConfigs; this broker rolls without jitter.
    pub segment_jitter_ms: i64,
    /// `segment.index.bytes` (10485760): roll when an index file would exceed this size.
    pub segment_index_bytes: i32,
    /// `index.interval.bytes` (4096): log bytes between two index entries.
    pub index_interval_bytes: i32,
    /// `retention.ms` (604800000; -1 = keep forever).
    pub retention_ms: i64,
    /// `retention.bytes` (-1 = no size limit).
    pub retention_bytes: i64,
    /// `cleanup.policy` (`delete`).
    pub cleanup_policy: CleanupPolicy,
    /// `flush.messages` (i64::MAX): fsync after this many records.
    pub flush_messages: i64,
    /// `flush.ms` (i64::MAX): fsync when this long has passed since the last fsync.
    pub flush_ms: i64,
    /// `max.message.bytes` (1048588): largest batch accepted, after any recompression.
    pub max_message_bytes: i32,
    /// `message.timestamp.type` (`CreateTime`).
    pub message_timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms` (i64::MAX): how far in the past a create time may be.
    pub message_timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms` (3600000 since Kafka 4.0): how far in the future.
    pub message_timestamp_after_max_ms: i64,
    /// `delete.retention.ms` (86400000): how long tombstones survive compaction.
    pub delete_retention_ms: i64,
    /// `min.compaction.lag.ms` (0).
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms` (i64::MAX); also bounds the segment age on compacted topics.
    pub max_compaction_lag_ms: i64,
    /// `min.cleanable.dirty.ratio` (0.5).
    pub min_cleanable_dirty_ratio: f64,
    /// `file.delete.delay.ms` (60000). Stored; see `docs/storage.md` for why deletion is
    /// immediate here.
    pub file_delete_delay_ms: i64,
    /// `compression.type` (`producer`).
    pub compression_type: TopicCompression,
    /// `compression.gzip.level` (-1 = codec default; 1..=9), used when the broker recompresses.
    pub compression_gzip_level: i32,
    /// `compression.lz4.level` (9; 1..=17). Stored; our lz4 encoder has one level.
    pub compression_lz4_level: i32,
    /// `compression.zstd.level` (3; -131072..=22), used when the broker recompresses.
    pub compression_zstd_level: i32,
    /// `min.insync.replicas` (1). Read by the partition layer, not the log.
    pub min_insync_replicas: i32,
    /// `unclean.leader.election.enable` (false). Not used by a single-node broker.
    pub unclean_leader_election_enable: bool,
    /// `preallocate` (false). Stored; segments here always grow on demand.
    pub preallocate: bool,
    /// `leader.replication.throttled.replicas` (empty): replicas throttled on the leader side
    /// ([`lists_replica`]).
    pub leader_replication_throttled_replicas: String,
    /// `follower.replication.throttled.replicas` (empty): replicas throttled on the follower
    /// side.
    pub follower_replication_throttled_replicas: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1_073_741_824,
            segment_ms: 604_800_000,
            segment_jitter_ms: 0,
            segment_index_bytes: 10_485_760,
            index_interval_bytes: 4096,
            retention_ms: 604_800_000,
            retention_bytes: -1,
            cleanup_policy: CleanupPolicy::default(),
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            max_message_bytes: 1_048_588,
            message_timestamp_type: TimestampType::CreateTime,
            message_timestamp_before_max_ms: i64::MAX,
            message_timestamp_after_max_ms: 3_600_000,
            delete_retention_ms: 86_400_000,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            min_cleanable_dirty_ratio: 0.5,
            file_delete_delay_ms: 60_000,
            compression_type: TopicCompression::Producer,
            compression_gzip_level: -1,
            compression_lz4_level: 9,
            compression_zstd_level: 3,
            min_insync_replicas: 1,
            unclean_leader_election_enable: false,
            preallocate: false,
            leader_replication_throttled_replicas: String::new(),
            follower_replication_throttled_replicas: String::new(),
        }
    }
}

/// Whether a `*.replication.throttled.replicas` value lists replica `partition:broker` (or is
/// `*`).
pub fn lists_replica(list: &str, partition: i32, broker: i32) -> bool {
    let list = list.trim();
    if list == "*" {
        return true;
    }
    list.split(',').any(|entry| {
        entry
            .trim()
            .split_once(':')
            .and_then(|(p, b)| Some((p.trim().parse::<i32>().ok()?, b.trim().parse::<i32>().ok()?)))
            == Some((partition, broker))
    })
}

/// Kafka's `ThrottledReplicaListValidator`: `*`, empty, or `partition:broker` entries
/// separated by commas.
pub(crate) fn valid_replica_list(list: &str) -> bool {
    let list = list.trim();
    list.is_empty()
        || list == "*"
        || list.split(',').all(|entry| {
            entry.trim().split_once(':').is_some_and(|(p, b)| {
                p.trim().parse::<u32>().is_ok() && b.trim().parse::<u32>().is_ok()
            })
        })
}

fn invalid(key: &str, value: &str, why: &str) -> Error {
    Error::kafka(
        ErrorCode::InvalidConfig,
        format!("invalid value `{value}` for configuration `{key}`: {why}"),
    )
}

fn long(key: &str, value: &str, min: i64, max: i64) -> Result<i64> {
    let v: i64 = value
        .trim()
        .parse()
        .map_err(|_| invalid(key, value, "not a 64-bit integer"))?;
    if v < min || v > max {
        return Err(invalid(key, value, &format!("must be in [{min}, {max}]")));
    }
    Ok(v)
}

fn int(key: &str, value: &str, min: i32, max: i32) -> Result<i32> {
    let v: i32 = value
        .trim()
        .parse()
        .map_err(|_| invalid(key, value, "not a 32-bit integer"))?;
    if v < min || v > max {
        return Err(invalid(key, value, &format!("must be in [{min}, {max}]")));
    }
    Ok(v)
}

fn boolean(key: &str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(invalid(key, value, "expected true or false")),
    }
}

impl LogConfig {
    /// `base` with `entries` (property name, value) applied in order. Fails with
    /// `INVALID_CONFIG`, naming the key, for an unknown key or a value Kafka would refuse.
    pub fn from_overrides<'a>(
        base: &LogConfig,
        entries: impl Iterator<Item = (&'a str, &'a str)>,
    ) -> Result<LogConfig> {
        let mut config = base.clone();
        for (key, value) in entries {
            config.set(key, value)?;
        }
        if config.min_compaction_lag_ms > config.max_compaction_lag_ms {
            return Err(Error::kafka(
                ErrorCode::InvalidConfig,
                format!(
                    "configuration `min.compaction.lag.ms` ({}) exceeds `max.compaction.lag.ms` ({})",
                    config.min_compaction_lag_ms, config.max_compaction_lag_ms
                ),
            ));
        }
        Ok(config)
    }

    fn set(&mut self, key: &str, value: &str) -> Result<()> {
        match key {
            "cleanup.policy" => {
                self.cleanup_policy = CleanupPolicy::parse(value)
                    .ok_or_else(|| invalid(key, value, "expected delete, compact or both"))?;
            }
            "compression.type" => {
                self.compression_type = TopicCompression::parse(value).ok_or_else(|| {
                    invalid(
                        key,
                        value,
                        "expected producer, uncompressed, gzip, snappy, lz4 or zstd",
                    )
                })?;
            }
            "compression.gzip.level" => {
                let level = int(key, value, -1, 9)?;
                if level == 0 {
                    return Err(invalid(key, value, "must be -1 or in [1, 9]"));
                }
                self.compression_gzip_level = level;
            }
            "compression.lz4.level" => self.compression_lz4_level = int(key, value, 1, 17)?,
            "compression.zstd.level" => {
                self.compression_zstd_level = int(key, value, -131_072, 22)?;
            }
            "delete.retention.ms" => self.delete_retention_ms = long(key, value, 0, i64::MAX)?,
            "file.delete.delay.ms" => self.file_delete_delay_ms = long(key, value, 0, i64::MAX)?,
            "flush.messages" => self.flush_messages = long(key, value, 1, i64::MAX)?,
            "flush.ms" => self.flush_ms = long(key, value, 0, i64::MAX)?,
            "follower.replication.throttled.replicas" => {
                if !valid_replica_list(value) {
                    return Err(invalid(
                        key,
                        value,
                        "must be `*` or partition:broker pairs separated by commas",
                    ));
                }
                self.follower_replication_throttled_replicas = value.trim().to_string();
            }
            "index.interval.bytes" => self.index_interval_bytes = int(key, value, 0, i32::MAX)?,
            "leader.replication.throttled.replicas" => {
                if !valid_replica_list(value) {
                    return Err(invalid(
                        key,
                        value,
                        "must be `*` or partition:broker pairs separated by commas",
                    ));
                }
                self.leader_replication_throttled_replicas = value.trim().to_string();
            }
            "max.compaction.lag.ms" => {
                self.max_compaction_lag_ms = long(key, value, 1, i64::MAX)?;
            }
            "max.message.bytes" => self.max_message_bytes = int(key, value, 0, i32::MAX)?,
            "message.timestamp.after.max.ms" => {
                self.message_timestamp_after_max_ms = long(key, value, 0, i64::MAX)?;
            }
            "message.timestamp.before.max.ms" => {
                self.message_timestamp_before_max_ms = long(key, value, 0, i64::MAX)?;
            }
            "message.timestamp.type" => {
                self.message_timestamp_type = match value.trim() {
                    "CreateTime" => TimestampType::CreateTime,
                    "LogAppendTime" => TimestampType::LogAppendTime,
                    _ => return Err(invalid(key, value, "expected CreateTime or LogAppendTime")),
                };
            }
            "min.cleanable.dirty.ratio" => {
                let ratio: f64 = value
                    .trim()
                    .parse()
                    .map_err(|_| invalid(key, value, "not a number"))?;
                if !(0.0..=1.0).contains(&ratio) {
                    return Err(invalid(key, value, "must be in [0, 1]"));
                }
                self.min_cleanable_dirty_ratio = ratio;
            }
            "min.compaction.lag.ms" => self.min_compaction_lag_ms = long(key, value, 0, i64::MAX)?,
            "min.insync.replicas" => self.min_insync_replicas = int(key, value, 1, i32::MAX)?,
            "preallocate" => self.preallocate = boolean(key, value)?,
            "retention.bytes" => self.retention_bytes = long(key, value, i64::MIN, i64::MAX)?,
            "retention.ms" => self.retention_ms = long(key, value, -1, i64::MAX)?,
            "segment.bytes" => self.segment_bytes = int(key, value, MIN_SEGMENT_BYTES, i32::MAX)?,
            "segment.index.bytes" => self.segment_index_bytes = int(key, value, 4, i32::MAX)?,
            "segment.jitter.ms" => self.segment_jitter_ms = long(key, value, 0, i64::MAX)?,
            "segment.ms" => self.segment_ms = long(key, value, 1, i64::MAX)?,
            "unclean.leader.election.enable" => {
                self.unclean_leader_election_enable = boolean(key, value)?;
            }
            _ => {
                return Err(Error::kafka(
                    ErrorCode::InvalidConfig,
                    format!("unknown topic configuration `{key}`"),
                ))
            }
        }
        Ok(())
    }

    /// Every key of [`TOPIC_CONFIG_KEYS`] with its current value, as DescribeConfigs shows it.
    pub fn entries(&self) -> Vec<(&'static str, String)> {
        TOPIC_CONFIG_KEYS
            .iter()
            .map(|&key| (key, self.value_of(key)))
            .collect()
    }

    fn value_of(&self, key: &str) -> String {
        match key {
            "cleanup.policy" => self.cleanup_policy.name().to_string(),
            "compression.type" => self.compression_type.name().to_string(),
            "compression.gzip.level" => self.compression_gzip_level.to_string(),
            "compression.lz4.level" => self.compression_lz4_level.to_string(),
            "compression.zstd.level" => self.compression_zstd_level.to_string(),
            "delete.retention.ms" => self.delete_retention_ms.to_string(),
            "file.delete.delay.ms" => self.file_delete_delay_ms.to_string(),
            "flush.messages" => self.flush_messages.to_string(),
            "flush.ms" => self.flush_ms.to_string(),
            "follower.replication.throttled.replicas" => {
                self.follower_replication_throttled_replicas.clone()
            }
            "index.interval.bytes" => self.index_interval_bytes.to_string(),
            "leader.replication.throttled.replicas" => {
                self.leader_replication_throttled_replicas.clone()
            }
            "max.compaction.lag.ms" => self.max_compaction_lag_ms.to_string(),
            "max.message.bytes" => self.max_message_bytes.to_string(),
            "message.timestamp.after.max.ms" => self.message_timestamp_after_max_ms.to_string(),
            "message.timestamp.before.max.ms" => self.message_timestamp_before_max_ms.to_string(),
            "message.timestamp.type" => match self.message_timestamp_type {
                TimestampType::CreateTime => "CreateTime".to_string(),
                TimestampType::LogAppendTime => "LogAppendTime".to_string(),
            },
            "min.cleanable.dirty.ratio" => self.min_cleanable_dirty_ratio.to_string(),
            "min.compaction.lag.ms" => self.min_compaction_lag_ms.to_string(),
            "min.insync.replicas" => self.min_insync_replicas.to_string(),
            "preallocate" => self.preallocate.to_string(),
            "retention.bytes" => self.retention_bytes.to_string(),
            "retention.ms" => self.retention_ms.to_string(),
            "segment.bytes" => self.segment_bytes.to_string(),
            "segment.index.bytes" => self.segment_index_bytes.to_string(),
            "segment.jitter.ms" => self.segment_jitter_ms.to_string(),
            "segment.ms" => self.segment_ms.to_string(),
            "unclean.leader.election.enable" => self.unclean_leader_election_enable.to_string(),
            _ => String::new(),
        }
    }

    /// Whether the log cleaner compacts this topic (`cleanup.policy` contains `compact`);
    /// compacted topics refuse records without a key.
    pub fn is_compacted(&self) -> bool {
        self.cleanup_policy.compact
    }

    /// Whether retention deletes old segments (`cleanup.policy` contains `delete`).
    pub fn is_delete(&self) -> bool {
        self.cleanup_policy.delete
    }

    /// The longest a segment stays active: `segment.ms`, or `max.compaction.lag.ms` when that is
    /// smaller on a compacted topic (as Kafka does, so compaction can reach every record).
    pub fn max_segment_ms(&self) -> i64 {
        if self.is_compacted() && self.max_compaction_lag_ms > 0 {
            self.segment_ms.min(self.max_compaction_lag_ms)
        } else {
            self.segment_ms
        }
    }

    /// The codec level for recompressing with `codec` (`None` = the codec's default).
    pub fn compression_level(&self, codec: Compression) -> Option<i32> {
        match codec {
            Compression::Gzip if self.compression_gzip_level > 0 => {
                Some(self.compression_gzip_level)
            }
            Compression::Zstd => Some(self.compression_zstd_level),
            _ => None,
        }
    }

    /// Offset index entries that fit in `segment.index.bytes`.
    pub(crate) fn max_offset_index_entries(&self) -> usize {
        (self.segment_index_bytes.max(0) as usize / super::index::ENTRY_SIZE).max(1)
    }

    /// Time index entries that fit in `segment.index.bytes`.
    pub(crate) fn max_time_index_entries(&self) -> usize {
        (self.segment_index_bytes.max(0) as usize / super::time_index::ENTRY_SIZE).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::{lists_replica, valid_replica_list};

    #[test]
    fn replica_lists_follow_kafkas_format() {
        assert!(lists_replica("*", 3, 7));
        assert!(lists_replica("0:1, 3:7", 3, 7));
        assert!(!lists_replica("0:1,3:8", 3, 7));
        assert!(!lists_replica("", 0, 1));
        assert!(valid_replica_list("0:1,1:2"));
        assert!(valid_replica_list("*"));
        assert!(valid_replica_list(""));
        assert!(!valid_replica_list("0"));
        assert!(!valid_replica_list("a:1"));
        assert!(!valid_replica_list("0:1,*"));
    }

    use super::*;

    fn apply(pairs: &[(&str, &str)]) -> Result<LogConfig> {
        LogConfig::from_overrides(&LogConfig::default(), pairs.iter().copied())
    }

    #[test]
    fn defaults_match_kafka_4() {
        let c = LogConfig::default();
        let e: std::collections::HashMap<_, _> = c.entries().into_iter().collect();
        assert_eq!(e["segment.bytes"], "1073741824");
        assert_eq!(e["segment.ms"], "604800000");
        assert_eq!(e["segment.index.bytes"], "10485760");
        assert_eq!(e["index.interval.bytes"], "4096");
        assert_eq!(e["retention.ms"], "604800000");
        assert_eq!(e["retention.bytes"], "-1");
        assert_eq!(e["cleanup.policy"], "delete");
        assert_eq!(e["flush.messages"], i64::MAX.to_string());
        assert_eq!(e["flush.ms"], i64::MAX.to_string());
        assert_eq!(e["max.message.bytes"], "1048588");
        assert_eq!(e["message.timestamp.type"], "CreateTime");
        assert_eq!(e["message.timestamp.before.max.ms"], i64::MAX.to_string());
        assert_eq!(e["message.timestamp.after.max.ms"], "3600000");
        assert_eq!(e["delete.retention.ms"], "86400000");
        assert_eq!(e["min.compaction.lag.ms"], "0");
        assert_eq!(e["max.compaction.lag.ms"], i64::MAX.to_string());
        assert_eq!(e["min.cleanable.dirty.ratio"], "0.5");
        assert_eq!(e["file.delete.delay.ms"], "60000");
        assert_eq!(e["compression.type"], "producer");
        assert!(!c.is_compacted());
    }

    #[test]
    fn entries_list_every_key_and_round_trip() {
        let c = apply(&[
            ("cleanup.policy", "compact,delete"),
            ("compression.type", "zstd"),
            ("retention.ms", "-1"),
            ("min.cleanable.dirty.ratio", "0.25"),
            ("message.timestamp.type", "LogAppendTime"),
            ("preallocate", "true"),
        ])
        .unwrap();
        let entries = c.entries();
        let keys: Vec<_> = entries.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, TOPIC_CONFIG_KEYS);
        let again = LogConfig::from_overrides(
            &LogConfig::default(),
            entries.iter().map(|(k, v)| (*k, v.as_str())),
        )
        .unwrap();
        assert_eq!(again, c);
        assert!(c.is_compacted() && c.is_delete());
        assert_eq!(c.compression_type.target(), Some(Compression::Zstd));
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        for (key, value) in [
            ("segment.bytes", "60"),
            ("segment.bytes", "lots"),
            ("segment.ms", "0"),
            ("retention.ms", "-2"),
            ("cleanup.policy", "archive"),
            ("cleanup.policy", ""),
            ("compression.type", "brotli"),
            ("message.timestamp.type", "createtime"),
            ("min.cleanable.dirty.ratio", "1.5"),
            ("flush.messages", "0"),
            ("max.message.bytes", "-1"),
            ("no.such.key", "1"),
        ] {
            let err = apply(&[(key, value)]).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidConfig, "{key}={value}");
            assert!(err.to_string().contains(key), "{err}");
        }
        let err = apply(&[
            ("min.compaction.lag.ms", "10"),
            ("max.compaction.lag.ms", "5"),
        ])
        .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidConfig);
    }

    #[test]
    fn compression_names() {
        assert_eq!(
            TopicCompression::parse("none"),
            Some(TopicCompression::Uncompressed)
        );
        assert_eq!(
            TopicCompression::parse("lz4").map(TopicCompression::name),
            Some("lz4")
        );
        assert_eq!(TopicCompression::Producer.target(), None);
        assert_eq!(
            TopicCompression::Uncompressed.target(),
            Some(Compression::None)
        );
    }

    #[test]
    fn compacted_topics_roll_by_max_compaction_lag() {
        let c = apply(&[
            ("cleanup.policy", "compact"),
            ("max.compaction.lag.ms", "1000"),
        ])
        .unwrap();
        assert_eq!(c.max_segment_ms(), 1000);
        assert_eq!(LogConfig::default().max_segment_ms(), 604_800_000);
    }
}
