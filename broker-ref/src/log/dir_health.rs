//! Whether a log directory can still be trusted, shared by every log in it.
//!
//! As in Kafka, a storage error on a log's write path (a failed write, fsync or roll) takes the
//! whole directory offline: after it, every log under the directory refuses appends and reads
//! with KAFKA_STORAGE_ERROR, so a producer's retry of a batch whose write succeeded but whose
//! fsync failed can never be appended a second time, and nothing that may not be on disk is
//! served. This broker has one log directory, so that is all of its data; the broker binary
//! then halts (exit code 1), as Kafka halts when its last log directory fails. A broker opening
//! the directory again starts with a healthy one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

/// The health of one log directory.
#[derive(Debug, Default)]
pub struct DirHealth {
    failure: OnceLock<String>,
    failed: tokio::sync::Notify,
}

static REGISTRY: Mutex<Option<HashMap<PathBuf, Weak<DirHealth>>>> = Mutex::new(None);

/// The health of `dir` (the directory holding the partition directories).
pub fn for_dir(dir: &Path) -> Arc<DirHealth> {
    let mut registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    let map = registry.get_or_insert_with(HashMap::new);
    if let Some(health) = map.get(dir).and_then(Weak::upgrade) {
        return health;
    }
    map.retain(|_, w| w.strong_count() > 0);
    let health = Arc::new(DirHealth::default());
    map.insert(dir.to_path_buf(), Arc::downgrade(&health));
    health
}

/// A healthy start for `dir`: a broker opening it after a failure (the disk was fixed).
pub fn fresh(dir: &Path) -> Arc<DirHealth> {
    let health = Arc::new(DirHealth::default());
    let mut registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    let map = registry.get_or_insert_with(HashMap::new);
    map.retain(|_, w| w.strong_count() > 0);
    map.insert(dir.to_path_buf(), Arc::downgrade(&health));
    health
}

impl Drop for DirHealth {
    /// Forgets the registry entries of directories no longer open (this one's among them), so
    /// a process that opens many brokers one after another (tests, test clusters) keeps no
    /// memory for the ones it closed. No strong reference is ever dropped under the registry
    /// lock, so taking it here cannot deadlock.
    fn drop(&mut self) {
        let mut registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(map) = registry.as_mut() {
            map.retain(|_, w| w.strong_count() > 0);
            if map.is_empty() {
                // The table itself goes too: nothing stays allocated once no directory is open.
                *registry = None;
            }
        }
    }
}

impl DirHealth {
    /// Takes the directory offline (the first reason is kept) and wakes [`DirHealth::failed`].
    pub fn fail(&self, reason: String) {
        if self.failure.set(reason.clone()).is_ok() {
            tracing::error!(%reason, "log directory failed: its logs refuse appends and reads from now on");
        }
        self.failed.notify_waiters();
    }

    /// Why the directory went offline, if it did.
    pub fn failure(&self) -> Option<&str> {
        self.failure.get().map(String::as_str)
    }

    /// Waits until the directory goes offline.
    pub async fn failed(&self) {
        loop {
            let notified = self.failed.notified();
            if self.failure().is_some() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_of_one_directory_share_its_health_and_a_reopen_starts_fresh() {
        let dir = std::env::temp_dir().join(format!("odradek-health-{}", std::process::id()));
        let a = for_dir(&dir);
        let b = for_dir(&dir);
        a.fail("fsync: EIO".into());
        assert_eq!(b.failure(), Some("fsync: EIO"));
        a.fail("second".into());
        assert_eq!(b.failure(), Some("fsync: EIO"), "the first reason is kept");
        let reopened = fresh(&dir);
        assert_eq!(reopened.failure(), None);
        assert_eq!(for_dir(&dir).failure(), None);
    }

    #[test]
    fn a_directory_no_longer_open_leaves_nothing_in_the_registry() {
        let dir = std::env::temp_dir().join(format!("odradek-health-gone-{}", std::process::id()));
        let health = fresh(&dir);
        let log = for_dir(&dir);
        drop(health);
        drop(log);
        let registry = REGISTRY.lock().unwrap();
        assert!(!registry.as_ref().is_some_and(|m| m.contains_key(&dir)));
        // (Other tests may hold directories open; with none, the table itself is freed.)
        assert!(registry.as_ref().is_none_or(|m| !m.is_empty()));
    }
}
