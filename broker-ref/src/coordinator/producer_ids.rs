//! Producer id allocation for InitProducerId.
//!
//! On a single node, ids come from blocks reserved in a small file under the data directory,
//! so they never repeat across restarts (a restart skips the rest of the current block, as
//! Kafka skips the rest of a block on controller failover). In cluster mode every broker gets
//! its blocks from the controller (AllocateProducerIds, written to the metadata log), so no
//! two brokers hand out the same id: the cluster layer refills the next block in the
//! background when half of the current one is used, and a broker with none answers
//! COORDINATOR_NOT_AVAILABLE (the client retries).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use odradek::ErrorCode;
use tokio::sync::Notify;

use crate::partition::write_meta;
use crate::{Error, Result};

const BLOCK: i64 = 1000;

#[derive(Debug)]
struct Range {
    next: i64,
    limit: i64,
    /// Cluster mode: blocks fetched ahead, `(start, len)`.
    ahead: VecDeque<(i64, i64)>,
}

/// Where blocks come from.
#[derive(Debug)]
enum Source {
    /// The `producer-ids` file of this node.
    File(PathBuf),
    /// The controller; notified when a block is wanted.
    Controller(Arc<Notify>),
}

/// Hands out unique producer ids.
#[derive(Debug)]
pub struct ProducerIdManager {
    source: Mutex<Source>,
    range: Mutex<Range>,
}

impl ProducerIdManager {
    /// Loads the next free block boundary from `dir/producer-ids`.
    pub fn open(dir: &Path) -> Result<ProducerIdManager> {
        let path = dir.join("producer-ids");
        let next = std::fs::read_to_string(&path)
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
            .unwrap_or(0)
            .max(0);
        Ok(ProducerIdManager {
            source: Mutex::new(Source::File(path)),
            range: Mutex::new(Range {
                next,
                limit: next,
                ahead: VecDeque::new(),
            }),
        })
    }

    /// Switches to blocks from the controller (cluster mode); the returned notify fires when
    /// a block should be fetched and handed over with [`ProducerIdManager::add_block`].
    pub fn from_controller(&self) -> Arc<Notify> {
        let wanted = Arc::new(Notify::new());
        if let Ok(mut s) = self.source.lock() {
            *s = Source::Controller(wanted.clone());
        }
        if let Ok(mut r) = self.range.lock() {
            r.limit = r.next;
            r.ahead.clear();
        }
        wanted.notify_one();
        wanted
    }

    /// A block of `len` ids from `start` that the controller allotted to this broker.
    pub fn add_block(&self, start: i64, len: i64) {
        if let Ok(mut r) = self.range.lock() {
            r.ahead.push_back((start, len.max(0)));
        }
    }

    /// Whether another block should be fetched (none ahead and half of the current used).
    pub fn wants_block(&self) -> bool {
        self.range
            .lock()
            .is_ok_and(|r| r.ahead.is_empty() && (r.limit - r.next) * 2 < BLOCK)
    }

    /// A fresh producer id.
    pub fn next_id(&self) -> Result<i64> {
        let source = self.source.lock().unwrap_or_else(|e| e.into_inner());
        let mut r = self.range.lock().unwrap_or_else(|e| e.into_inner());
        if r.next >= r.limit {
            match &*source {
                Source::File(path) => {
                    let limit = r.limit.max(r.next) + BLOCK;
                    write_meta(path, limit.to_string().as_bytes())?;
                    r.limit = limit;
                }
                Source::Controller(wanted) => match r.ahead.pop_front() {
                    Some((start, len)) => {
                        r.next = start;
                        r.limit = start + len;
                    }
                    None => {
                        wanted.notify_one();
                        return Err(Error::kafka(
                            ErrorCode::CoordinatorNotAvailable,
                            "no producer id block from the controller yet",
                        ));
                    }
                },
            }
        }
        let id = r.next;
        r.next += 1;
        if let Source::Controller(wanted) = &*source {
            if r.ahead.is_empty() && (r.limit - r.next) * 2 < BLOCK {
                wanted.notify_one();
            }
        }
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_across_restarts() {
        let dir = std::env::temp_dir().join(format!("odradek-pids-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let m = ProducerIdManager::open(&dir).unwrap();
        let a: Vec<i64> = (0..3).map(|_| m.next_id().unwrap()).collect();
        assert_eq!(a, [0, 1, 2]);
        drop(m);
        let m = ProducerIdManager::open(&dir).unwrap();
        assert_eq!(m.next_id().unwrap(), 1000, "a restart starts a new block");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn controller_blocks_are_used_in_turn_and_refilled_ahead() {
        let dir = tempfile::tempdir().unwrap();
        let m = ProducerIdManager::open(dir.path()).unwrap();
        let _wanted = m.from_controller();
        assert_eq!(
            m.next_id().unwrap_err().code(),
            ErrorCode::CoordinatorNotAvailable
        );
        m.add_block(5000, 2);
        assert!(!m.wants_block());
        assert_eq!(m.next_id().unwrap(), 5000);
        assert!(m.wants_block(), "half of the block is used");
        m.add_block(9000, 1000);
        assert_eq!(m.next_id().unwrap(), 5001);
        assert_eq!(m.next_id().unwrap(), 9000);
    }
}
