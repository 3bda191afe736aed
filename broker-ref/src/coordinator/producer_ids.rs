//! Producer id allocation for InitProducerId: ids come from blocks reserved in a small file under
//! the data directory, so they never repeat across restarts (a restart skips the rest of the
//! current block, as Kafka skips the rest of a block on controller failover).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::partition::write_meta;
use crate::Result;

const BLOCK: i64 = 1000;

#[derive(Debug)]
struct Range {
    next: i64,
    limit: i64,
}

/// Hands out unique producer ids.
#[derive(Debug)]
pub struct ProducerIdManager {
    path: PathBuf,
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
            path,
            range: Mutex::new(Range { next, limit: next }),
        })
    }

    /// A fresh producer id.
    pub fn next_id(&self) -> Result<i64> {
        let mut r = self.range.lock().unwrap_or_else(|e| e.into_inner());
        if r.next >= r.limit {
            let limit = r.limit.max(r.next) + BLOCK;
            write_meta(&self.path, limit.to_string().as_bytes())?;
            r.limit = limit;
        }
        let id = r.next;
        r.next += 1;
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
}
