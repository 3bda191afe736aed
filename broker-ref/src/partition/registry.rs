//! The topics this broker hosts, their ids, partition counts and config overrides, persisted in
//! `<log.dir>/__odradek_topics/<topic>.topic` (one `key=value` file per topic, written atomically).
//! The file is the commit point of a create or delete: a partition directory without one is
//! left over from an interrupted delete and is removed at startup.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use odradek::ErrorCode;
use uuid::Uuid;

use super::Partition;
use crate::log::dir_health::{self, DirHealth};
use crate::log::LogConfig;
use crate::{Error, Result};

/// Internal topics Kafka clients know by name.
pub const INTERNAL_TOPICS: &[&str] = &["__consumer_offsets", "__transaction_state"];

const META_DIR: &str = "__odradek_topics";
/// Most partitions one topic may have: each partition holds open files, so an unbounded count
/// from one request could exhaust the broker's file descriptors.
pub const MAX_PARTITIONS_PER_TOPIC: i32 = 10_000;
const MAX_TOPIC_NAME: usize = 249;

/// One topic.
#[derive(Debug)]
pub struct Topic {
    /// Topic name.
    pub name: String,
    /// Topic id (KIP-516).
    pub id: Uuid,
    partitions: RwLock<Vec<Arc<Partition>>>,
    overrides: RwLock<BTreeMap<String, String>>,
}

impl Topic {
    /// Whether this is one of Kafka's internal topics.
    pub fn is_internal(&self) -> bool {
        INTERNAL_TOPICS.contains(&self.name.as_str())
    }

    /// The partitions, in index order.
    pub fn partitions(&self) -> Vec<Arc<Partition>> {
        read(&self.partitions).clone()
    }

    /// One partition.
    pub fn partition(&self, index: i32) -> Option<Arc<Partition>> {
        usize::try_from(index)
            .ok()
            .and_then(|i| read(&self.partitions).get(i).cloned())
    }

    /// Number of partitions.
    pub fn partition_count(&self) -> i32 {
        read(&self.partitions).len() as i32
    }

    /// Topic-level config overrides.
    pub fn overrides(&self) -> BTreeMap<String, String> {
        read(&self.overrides).clone()
    }
}

fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

/// The metadata quorum's log directory in the data directory (cluster mode): it looks like a
/// partition directory and is never one of the registry's.
pub const METADATA_LOG_DIR: &str = "__cluster_metadata-0";

/// The metadata log's topic name: no client topic may take it.
pub const METADATA_TOPIC: &str = "__cluster_metadata";

/// Checks a topic name the way Kafka does (and keeps the metadata log's name free).
pub fn validate_topic_name(name: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::kafka(
            ErrorCode::InvalidTopic,
            format!("topic name `{name}` {why}"),
        ))
    };
    if name.is_empty() {
        return bad("is empty");
    }
    if name == "." || name == ".." {
        return bad("is not allowed");
    }
    if name == METADATA_TOPIC {
        return bad("is the cluster metadata log's");
    }
    if name.len() > MAX_TOPIC_NAME {
        return bad("is longer than 249 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        return bad("may contain only ASCII letters, digits, '.', '_' and '-'");
    }
    Ok(())
}

/// All topics, keyed by name.
#[derive(Debug)]
pub struct TopicRegistry {
    data_dir: PathBuf,
    /// Partitions opened or created at once (`num.recovery.threads.per.data.dir`).
    threads: usize,
    defaults: RwLock<LogConfig>,
    topics: RwLock<BTreeMap<String, Arc<Topic>>>,
    /// Names being created right now: reserved, so the registry lock is not held while their
    /// partitions are made (thousands of them take seconds).
    creating: std::sync::Mutex<std::collections::BTreeSet<String>>,
    /// The data directory's health, shared with every log in it (`log::dir_health`).
    health: Arc<DirHealth>,
}

/// A topic name reserved while its partitions are created.
struct Reservation<'a> {
    registry: &'a TopicRegistry,
    name: String,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.registry.creating().remove(&self.name);
    }
}

struct TopicMeta {
    id: Uuid,
    partitions: i32,
    overrides: BTreeMap<String, String>,
}

impl TopicMeta {
    fn render(&self) -> String {
        let mut s = format!("topic.id={}\npartitions={}\n", self.id, self.partitions);
        for (k, v) in &self.overrides {
            s.push_str(&format!("config.{k}={v}\n"));
        }
        s
    }

    fn parse(path: &Path, text: &str) -> Result<TopicMeta> {
        let bad = |why: String| {
            Error::kafka(
                ErrorCode::KafkaStorageError,
                format!("{}: {why}", path.display()),
            )
        };
        let mut id = None;
        let mut partitions = None;
        let mut overrides = BTreeMap::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let (k, v) = line
                .split_once('=')
                .ok_or_else(|| bad(format!("bad line `{line}`")))?;
            match k {
                "topic.id" => id = Some(Uuid::parse_str(v).map_err(|e| bad(e.to_string()))?),
                "partitions" => {
                    partitions = Some(v.parse().map_err(|_| bad(format!("bad count {v}")))?)
                }
                _ => {
                    if let Some(key) = k.strip_prefix("config.") {
                        overrides.insert(key.to_string(), v.to_string());
                    }
                }
            }
        }
        Ok(TopicMeta {
            id: id.ok_or_else(|| bad("no topic.id".into()))?,
            partitions: partitions.ok_or_else(|| bad("no partitions".into()))?,
            overrides,
        })
    }
}

/// Writes `contents` to `path` atomically: temp file, fsync, rename, fsync of the directory.
pub fn write_atomically(path: &Path, contents: &[u8]) -> Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

impl TopicRegistry {
    /// The data directory's health: offline after a storage error on any log's write path.
    pub fn dir_health(&self) -> &Arc<DirHealth> {
        &self.health
    }

    /// Loads every topic under `data_dir`, opening (recovering if needed) every partition's log
    /// on up to `threads` threads (`num.recovery.threads.per.data.dir`).
    pub fn open(data_dir: &Path, defaults: LogConfig, threads: usize) -> Result<TopicRegistry> {
        let meta_dir = data_dir.join(META_DIR);
        std::fs::create_dir_all(&meta_dir)?;
        let registry = TopicRegistry {
            data_dir: data_dir.to_path_buf(),
            threads,
            defaults: RwLock::new(defaults),
            topics: RwLock::new(BTreeMap::new()),
            creating: std::sync::Mutex::new(std::collections::BTreeSet::new()),
            // Opening the directory starts it healthy, even after a failure in this process.
            health: dir_health::fresh(data_dir),
        };
        let mut metas = Vec::new();
        for entry in std::fs::read_dir(&meta_dir)? {
            let path = entry?.path();
            let Some(name) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".topic"))
            else {
                continue;
            };
            let meta = TopicMeta::parse(&path, &std::fs::read_to_string(&path)?)?;
            let config = registry.effective_config(&meta.overrides)?;
            metas.push((name.to_string(), meta, config));
        }
        let jobs: Vec<(usize, i32)> = metas
            .iter()
            .enumerate()
            .flat_map(|(t, (_, meta, _))| (0..meta.partitions).map(move |i| (t, i)))
            .collect();
        let opened = super::parallel::map_bounded(jobs, threads, |(t, i)| {
            let (name, _, config) = &metas[t];
            Partition::open(data_dir, name, i, config.clone()).map(|p| (t, Arc::new(p)))
        });
        let mut partitions: Vec<Vec<Arc<Partition>>> = metas.iter().map(|_| Vec::new()).collect();
        for result in opened {
            let (t, p) = result?;
            partitions[t].push(p);
        }
        let mut loaded = BTreeMap::new();
        for ((name, meta, _), parts) in metas.into_iter().zip(partitions) {
            let topic = Topic {
                name: name.clone(),
                id: meta.id,
                partitions: RwLock::new(parts),
                overrides: RwLock::new(meta.overrides),
            };
            loaded.insert(name, Arc::new(topic));
        }
        registry.remove_orphans(&loaded)?;
        *write(&registry.topics) = loaded;
        Ok(registry)
    }

    fn remove_orphans(&self, topics: &BTreeMap<String, Arc<Topic>>) -> Result<()> {
        for entry in std::fs::read_dir(&self.data_dir)? {
            let entry = entry?;
            if !entry.file_type()?.is_dir() {
                continue;
            }
            let name = entry.file_name().to_string_lossy().to_string();
            if name == METADATA_LOG_DIR {
                // The metadata quorum's log (cluster mode), not a topic's partition.
                continue;
            }
            let Some((topic, index)) = name.rsplit_once('-') else {
                continue;
            };
            let Ok(index) = index.parse::<i32>() else {
                continue;
            };
            let known = topics
                .get(topic)
                .is_some_and(|t| index < t.partition_count());
            if !known {
                tracing::warn!(dir = %entry.path().display(), "removing partition directory of a deleted topic");
                std::fs::remove_dir_all(entry.path())?;
            }
        }
        Ok(())
    }

    fn open_topic(&self, name: &str, meta: &TopicMeta) -> Result<Topic> {
        let config = self.effective_config(&meta.overrides)?;
        let partitions =
            super::parallel::map_bounded((0..meta.partitions).collect(), self.threads, |i| {
                Partition::open(&self.data_dir, name, i, config.clone()).map(Arc::new)
            })
            .into_iter()
            .collect::<Result<Vec<_>>>()?;
        Ok(Topic {
            name: name.to_string(),
            id: meta.id,
            partitions: RwLock::new(partitions),
            overrides: RwLock::new(meta.overrides.clone()),
        })
    }

    fn creating(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeSet<String>> {
        self.creating.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// TOPIC_ALREADY_EXISTS or a name collision with an existing or reserved topic.
    fn check_name_free(
        &self,
        name: &str,
        topics: &BTreeMap<String, Arc<Topic>>,
        creating: &std::collections::BTreeSet<String>,
    ) -> Result<()> {
        if topics.contains_key(name) || creating.contains(name) {
            return Err(Error::kafka(
                ErrorCode::TopicAlreadyExists,
                format!("topic `{name}` already exists"),
            ));
        }
        let normalized = name.replace('.', "_");
        if let Some(other) = topics
            .keys()
            .chain(creating.iter())
            .find(|t| t.replace('.', "_") == normalized)
        {
            return Err(Error::kafka(
                ErrorCode::InvalidTopic,
                format!("topic `{name}` collides with existing topic `{other}` ('.' and '_' collide in metric names)"),
            ));
        }
        Ok(())
    }

    /// Reserves `name` for a create (released when the guard drops).
    fn reserve(&self, name: &str) -> Result<Reservation<'_>> {
        let topics = read(&self.topics);
        let mut creating = self.creating();
        self.check_name_free(name, &topics, &creating)?;
        creating.insert(name.to_string());
        Ok(Reservation {
            registry: self,
            name: name.to_string(),
        })
    }

    fn partition_dir(&self, name: &str, index: i32) -> PathBuf {
        self.data_dir.join(format!("{name}-{index}"))
    }

    /// Removes partition directories no topic owns (left by a broker that crashed during a
    /// create): a new partition must never resurrect their data.
    fn remove_stray_dirs(&self, name: &str, indexes: std::ops::Range<i32>) -> Result<()> {
        for i in indexes {
            let dir = self.partition_dir(name, i);
            if dir.is_dir() {
                tracing::warn!(dir = %dir.display(), "removing a stray partition directory");
                std::fs::remove_dir_all(&dir)?;
            }
        }
        Ok(())
    }

    /// Best-effort removal of the partition directories of a create that failed.
    fn remove_partition_dirs(&self, name: &str, indexes: std::ops::Range<i32>) {
        for i in indexes {
            let dir = self.partition_dir(name, i);
            if dir.is_dir() {
                if let Err(e) = std::fs::remove_dir_all(&dir) {
                    tracing::warn!(dir = %dir.display(), error = %e, "could not remove the directory of a failed create");
                }
            }
        }
        if let Err(e) = std::fs::File::open(&self.data_dir).and_then(|d| d.sync_all()) {
            tracing::warn!(error = %e, "could not sync the data directory");
        }
    }

    fn meta_path(&self, name: &str) -> PathBuf {
        self.data_dir.join(META_DIR).join(format!("{name}.topic"))
    }

    /// The broker-level topic defaults.
    pub fn defaults(&self) -> LogConfig {
        read(&self.defaults).clone()
    }

    /// Replaces the broker-level topic defaults (dynamic broker configs) and applies them to
    /// every partition at once. Fails, changing nothing, if a topic's overrides do not combine
    /// with the new defaults.
    pub fn set_defaults(&self, defaults: LogConfig) -> Result<()> {
        let topics = self.list();
        let mut configs = Vec::with_capacity(topics.len());
        for topic in &topics {
            let overrides = topic.overrides();
            let config = LogConfig::from_overrides(
                &defaults,
                overrides.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            )?;
            configs.push(config);
        }
        *write(&self.defaults) = defaults;
        for (topic, config) in topics.iter().zip(configs) {
            for p in topic.partitions() {
                p.log()?.set_config(config.clone());
            }
        }
        Ok(())
    }

    /// Broker defaults with `overrides` applied; errors name the bad key.
    pub fn effective_config(&self, overrides: &BTreeMap<String, String>) -> Result<LogConfig> {
        LogConfig::from_overrides(
            &read(&self.defaults),
            overrides.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        )
    }

    /// Looks a topic up by name.
    pub fn get(&self, name: &str) -> Option<Arc<Topic>> {
        read(&self.topics).get(name).cloned()
    }

    /// Looks a topic up by id.
    pub fn get_by_id(&self, id: Uuid) -> Option<Arc<Topic>> {
        read(&self.topics).values().find(|t| t.id == id).cloned()
    }

    /// Every topic, sorted by name.
    pub fn list(&self) -> Vec<Arc<Topic>> {
        read(&self.topics).values().cloned().collect()
    }

    /// Creates a topic (or only validates the request). Errors: INVALID_TOPIC_EXCEPTION,
    /// TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_CONFIG.
    pub fn create(
        &self,
        name: &str,
        partitions: i32,
        overrides: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<Arc<Topic>> {
        self.create_with_id(name, Uuid::new_v4(), partitions, overrides, validate_only)
    }

    /// [`TopicRegistry::create`] with the topic id given (cluster mode: the controller chose
    /// it, and every broker hosts the topic under the same id).
    pub fn create_with_id(
        &self,
        name: &str,
        id: Uuid,
        partitions: i32,
        overrides: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<Arc<Topic>> {
        validate_topic_name(name)?;
        if !(1..=MAX_PARTITIONS_PER_TOPIC).contains(&partitions) {
            return Err(Error::kafka(
                ErrorCode::InvalidPartitions,
                format!("number of partitions must be between 1 and {MAX_PARTITIONS_PER_TOPIC}, got {partitions}"),
            ));
        }
        self.effective_config(&overrides)?;
        let meta = TopicMeta {
            id,
            partitions,
            overrides,
        };
        if validate_only {
            self.check_name_free(name, &read(&self.topics), &self.creating())?;
            return Ok(Arc::new(Topic {
                name: name.to_string(),
                id: meta.id,
                partitions: RwLock::new(Vec::new()),
                overrides: RwLock::new(meta.overrides),
            }));
        }
        super::descriptors::check_room_for(partitions as u64)?;
        let _reserved = self.reserve(name)?;
        // All or nothing: a partition that fails to open (or a failed metadata write) removes
        // every partition directory this create made.
        self.remove_stray_dirs(name, 0..partitions)?;
        let created = super::parallel::blocking_section(|| {
            self.open_topic(name, &meta).and_then(|topic| {
                write_atomically(&self.meta_path(name), meta.render().as_bytes())?;
                Ok(Arc::new(topic))
            })
        });
        let topic = match created {
            Ok(topic) => topic,
            Err(e) => {
                self.remove_partition_dirs(name, 0..partitions);
                return Err(e);
            }
        };
        let mut topics = write(&self.topics);
        topics.insert(name.to_string(), topic.clone());
        tracing::info!(topic = name, partitions, "created topic");
        Ok(topic)
    }

    /// Deletes a topic and its data.
    pub fn delete(&self, name: &str) -> Result<Arc<Topic>> {
        let topic = write(&self.topics).remove(name).ok_or_else(|| {
            Error::kafka(
                ErrorCode::UnknownTopicOrPartition,
                format!("unknown topic `{name}`"),
            )
        })?;
        std::fs::remove_file(self.meta_path(name))?;
        super::parallel::blocking_section(|| -> Result<()> {
            for p in topic.partitions() {
                p.log()?.delete()?;
                p.wake_for_change();
            }
            Ok(())
        })?;
        tracing::info!(topic = name, "deleted topic");
        Ok(topic)
    }

    /// Grows a topic to `count` partitions.
    pub fn add_partitions(&self, name: &str, count: i32, validate_only: bool) -> Result<()> {
        let topic = self.get(name).ok_or_else(|| {
            Error::kafka(
                ErrorCode::UnknownTopicOrPartition,
                format!("unknown topic `{name}`"),
            )
        })?;
        let current = topic.partition_count();
        if count <= current {
            return Err(Error::kafka(
                ErrorCode::InvalidPartitions,
                format!("topic currently has {current} partitions, which is higher than or equal to the requested {count}"),
            ));
        }
        if count > MAX_PARTITIONS_PER_TOPIC {
            return Err(Error::kafka(
                ErrorCode::InvalidPartitions,
                format!(
                    "a topic may have at most {MAX_PARTITIONS_PER_TOPIC} partitions, got {count}"
                ),
            ));
        }
        if validate_only {
            return Ok(());
        }
        super::descriptors::check_room_for((count - current) as u64)?;
        let config = self.effective_config(&topic.overrides())?;
        let mut parts = write(&topic.partitions);
        self.remove_stray_dirs(name, current..count)?;
        let meta = TopicMeta {
            id: topic.id,
            partitions: count,
            overrides: topic.overrides(),
        };
        // All or nothing, as for a create.
        let opened = super::parallel::blocking_section(|| {
            super::parallel::map_bounded((current..count).collect(), self.threads, |i| {
                Partition::open(&self.data_dir, name, i, config.clone()).map(Arc::new)
            })
            .into_iter()
            .collect::<Result<Vec<_>>>()
            .and_then(|new| {
                write_atomically(&self.meta_path(name), meta.render().as_bytes())?;
                Ok(new)
            })
        });
        match opened {
            Ok(new) => {
                parts.extend(new);
                Ok(())
            }
            Err(e) => {
                self.remove_partition_dirs(name, current..count);
                Err(e)
            }
        }
    }

    /// Replaces a topic's config overrides (after validating them) and applies them live.
    pub fn set_overrides(
        &self,
        name: &str,
        overrides: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<()> {
        let topic = self.get(name).ok_or_else(|| {
            Error::kafka(
                ErrorCode::UnknownTopicOrPartition,
                format!("unknown topic `{name}`"),
            )
        })?;
        let config = self.effective_config(&overrides)?;
        if validate_only {
            return Ok(());
        }
        let meta = TopicMeta {
            id: topic.id,
            partitions: topic.partition_count(),
            overrides: overrides.clone(),
        };
        write_atomically(&self.meta_path(name), meta.render().as_bytes())?;
        let before = std::mem::replace(&mut *write(&topic.overrides), overrides.clone());
        let changed: Vec<&str> = before
            .keys()
            .chain(overrides.keys())
            .filter(|k| before.get(*k) != overrides.get(*k))
            .map(String::as_str)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        tracing::info!(topic = name, ?changed, "topic config overrides changed");
        for p in topic.partitions() {
            p.log()?.set_config(config.clone());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_log_directory_is_never_taken_for_a_deleted_topic() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join(METADATA_LOG_DIR);
        std::fs::create_dir_all(&log).unwrap();
        std::fs::write(log.join("quorum-state"), b"{}").unwrap();
        let stray = dir.path().join("gone-0");
        std::fs::create_dir_all(&stray).unwrap();
        let registry = TopicRegistry::open(dir.path(), LogConfig::default(), 1).unwrap();
        assert!(
            log.join("quorum-state").exists(),
            "the metadata log survives"
        );
        assert!(!stray.exists(), "a deleted topic's directory goes");
        assert!(registry
            .create(METADATA_TOPIC, 1, BTreeMap::new(), false)
            .is_err());
    }

    #[test]
    fn a_create_that_fails_half_way_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let registry = TopicRegistry::open(dir.path(), LogConfig::default(), 2).unwrap();
        // A plain file where partition 3's directory would go: opening partition 3 fails.
        let blocker = dir.path().join("half-3");
        std::fs::write(&blocker, b"in the way").unwrap();
        assert!(registry.create("half", 6, BTreeMap::new(), false).is_err());
        assert!(registry.get("half").is_none());
        for i in [0, 1, 2, 4, 5] {
            assert!(!dir.path().join(format!("half-{i}")).exists(), "half-{i}");
        }
        assert!(!registry.meta_path("half").exists());
        // Growing a topic is all or nothing too.
        registry.create("grow", 2, BTreeMap::new(), false).unwrap();
        std::fs::write(dir.path().join("grow-3"), b"in the way").unwrap();
        assert!(registry.add_partitions("grow", 5, false).is_err());
        assert_eq!(registry.get("grow").unwrap().partition_count(), 2);
        assert!(!dir.path().join("grow-2").exists());
        assert!(!dir.path().join("grow-4").exists());
        // Once the obstacle is gone, the same create succeeds.
        std::fs::remove_file(&blocker).unwrap();
        let topic = registry.create("half", 6, BTreeMap::new(), false).unwrap();
        assert_eq!(topic.partition_count(), 6);
    }
}
