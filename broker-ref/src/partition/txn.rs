//! The transactional side of a partition: writes from the coordinators (transaction markers,
//! transactional offset commits) and the aborted-transaction index entries a marker creates.

use bytes::{Bytes, BytesMut};
use odradek::records::{BatchBuilder, Compression, ControlRecordType, EndTxnMarker, RecordBatch};
use odradek::ErrorCode;

use super::markers::{aborted, Marker};
use super::producer_state::{BatchRecord, ProducerSummary};
use super::state::Partition;
use crate::log::AppendOrigin;
use crate::{Error, Result};

impl Partition {
    /// Writes a COMMIT or ABORT marker for `marker.producer_id`, closing its open transaction
    /// here; an abort of a transaction that wrote here is added to the aborted-transaction
    /// index. Returns the marker's offset.
    pub fn write_marker(&self, marker: Marker, now_ms: i64) -> Result<i64> {
        let mut log = self.log()?;
        let mut producers = self.producers()?;
        producers
            .check_marker(
                marker.producer_id,
                marker.producer_epoch,
                marker.coordinator_epoch,
            )
            .map_err(|code| {
                Error::kafka(
                    code,
                    format!(
                        "marker of producer {} (epoch {}, coordinator epoch {}): {}",
                        marker.producer_id,
                        marker.producer_epoch,
                        marker.coordinator_epoch,
                        code.name()
                    ),
                )
            })?;
        let kind = if marker.commit {
            ControlRecordType::Commit
        } else {
            ControlRecordType::Abort
        };
        let value = EndTxnMarker {
            kind,
            coordinator_epoch: marker.coordinator_epoch,
        }
        .encode_value();
        let mut b = BatchBuilder::new(Compression::None)
            .producer(marker.producer_id, marker.producer_epoch, -1)
            .transactional(true)
            .control(true);
        b.append(now_ms, Some(&kind.encode_key()), Some(&value), &[])?;
        let bytes = BytesMut::from(b.build()?.as_ref());
        let info = log.append_from(
            bytes,
            self.leader_epoch(),
            now_ms,
            AppendOrigin::Coordinator,
        )?;
        self.snapshot_if_rolled(&log, &producers, &info);
        let first = producers.complete_txn(
            marker.producer_id,
            marker.producer_epoch,
            marker.coordinator_epoch,
            info.max_timestamp,
        );
        if let (Some(first), false) = (first, marker.commit) {
            let last = info.base_offset;
            let lso = producers.first_unstable_offset().unwrap_or(last + 1);
            log.add_aborted_txn(aborted(marker.producer_id, first, last, lso))?;
        }
        self.publish_offsets(&mut log, &producers);
        Ok(info.base_offset)
    }

    /// Appends one batch written by a coordinator (its records need no sequence numbers; a
    /// transactional one opens its producer's transaction here). Returns its base offset.
    pub fn append_from_coordinator(&self, batch: Bytes, now_ms: i64) -> Result<i64> {
        let view = RecordBatch::new(batch.clone())
            .map_err(|e| Error::kafka(ErrorCode::CorruptMessage, e.to_string()))?;
        let mut log = self.log()?;
        let mut producers = self.producers()?;
        let (pid, epoch) = (view.producer_id(), view.producer_epoch());
        if pid >= 0 && view.is_transactional() {
            producers.check_epoch(pid, epoch).map_err(|code| {
                Error::kafka(code, format!("producer {pid} epoch {epoch} is fenced"))
            })?;
        }
        let info = log.append_from(
            BytesMut::from(batch.as_ref()),
            self.leader_epoch(),
            now_ms,
            AppendOrigin::Coordinator,
        )?;
        self.snapshot_if_rolled(&log, &producers, &info);
        if pid >= 0 && view.is_transactional() {
            producers.record(BatchRecord {
                producer_id: pid,
                epoch,
                first_seq: -1,
                last_seq: -1,
                base_offset: info.base_offset,
                max_timestamp: info.max_timestamp,
                transactional: true,
            });
        }
        self.publish_offsets(&mut log, &producers);
        Ok(info.base_offset)
    }

    /// The producers this partition knows (DescribeProducers).
    pub fn producer_summaries(&self) -> Result<Vec<ProducerSummary>> {
        Ok(self.producers()?.summaries())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::LogConfig;
    use crate::partition::markers::end_offset_of;
    use odradek::records::RecordBatches;

    fn txn_batch(pid: i64, seq: i32, n: usize) -> Bytes {
        let mut b = BatchBuilder::new(Compression::None)
            .producer(pid, 0, seq)
            .transactional(true);
        for i in 0..n {
            b.append(1_000 + i as i64, Some(b"k"), Some(b"v"), &[])
                .unwrap();
        }
        b.build().unwrap()
    }

    fn marker(pid: i64, epoch: i16, commit: bool) -> Marker {
        Marker {
            producer_id: pid,
            producer_epoch: epoch,
            commit,
            coordinator_epoch: 0,
        }
    }

    #[test]
    fn markers_move_the_lso_and_index_aborts_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let p = Partition::open(dir.path(), "t", 0, LogConfig::default()).unwrap();
        p.append_record_set(txn_batch(1, 0, 2), 5).unwrap(); // 0..=1
        p.append_record_set(txn_batch(2, 0, 1), 5).unwrap(); // 2
        assert_eq!((p.high_watermark(), p.last_stable_offset()), (3, 0));
        let abort_at = p.write_marker(marker(1, 0, false), 6).unwrap(); // 3
        assert_eq!(abort_at, 3);
        assert_eq!(p.last_stable_offset(), 2, "producer 2 is still open");
        let read = p.read(0, 1 << 20, true, true).unwrap();
        assert_eq!(end_offset_of(&read.records), Some(2), "bounded by the LSO");
        assert_eq!(read.aborted, Some(vec![aborted(1, 0, 3, 2)]));
        assert_eq!(p.write_marker(marker(2, 0, true), 7).unwrap(), 4);
        assert_eq!(p.last_stable_offset(), 5);
        let read = p.read(0, 1 << 20, true, true).unwrap();
        assert_eq!(read.aborted, Some(vec![aborted(1, 0, 3, 2)]));
        assert_eq!(p.read(0, 1 << 20, true, false).unwrap().aborted, None);
        // An old epoch cannot end the fenced producer's next transaction.
        p.write_marker(marker(2, 3, false), 8).unwrap();
        assert!(p.write_marker(marker(2, 1, true), 9).is_err());
        p.log().unwrap().close().unwrap();
        drop(p);

        // The index file is gone (a crash before it was written): rebuilt from the markers.
        std::fs::remove_file(dir.path().join("t-0/00000000000000000000.txnindex")).unwrap();
        let p = Partition::open(dir.path(), "t", 0, LogConfig::default()).unwrap();
        let read = p.read(0, 1 << 20, true, true).unwrap();
        assert_eq!(read.aborted, Some(vec![aborted(1, 0, 3, 2)]));
        let producers = p.producer_summaries().unwrap();
        assert_eq!(producers.len(), 2);
        assert_eq!(producers[1].epoch, 3, "the fencing marker's epoch survives");
        assert!(dir
            .path()
            .join("t-0/00000000000000000000.txnindex")
            .exists());
    }

    #[test]
    fn an_open_transaction_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let p = Partition::open(dir.path(), "t", 0, LogConfig::default()).unwrap();
        p.append_record_set(txn_batch(1, 0, 1), 5).unwrap();
        p.append_record_set(txn_batch(7, 0, 3), 5).unwrap();
        p.write_marker(marker(1, 0, true), 6).unwrap();
        drop(p);
        let p = Partition::open(dir.path(), "t", 0, LogConfig::default()).unwrap();
        assert_eq!((p.high_watermark(), p.last_stable_offset()), (5, 1));
        assert!(p.read(1, 1 << 20, true, true).unwrap().records.is_empty());
        p.write_marker(marker(7, 0, false), 6).unwrap();
        assert_eq!(p.last_stable_offset(), 6);
    }

    fn keyed(key: &str, value: &str, pid: i64, seq: i32, transactional: bool) -> Bytes {
        let mut b = BatchBuilder::new(Compression::None).transactional(transactional);
        if pid >= 0 {
            b = b.producer(pid, 0, seq);
        }
        b.append(1_000, Some(key.as_bytes()), Some(value.as_bytes()), &[])
            .unwrap();
        b.build().unwrap()
    }

    #[test]
    fn the_cleaner_drops_aborted_records_and_stops_at_open_transactions() {
        use crate::log::cleaner::CleanerOptions;
        use crate::log::CleanupPolicy;
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            cleanup_policy: CleanupPolicy {
                delete: false,
                compact: true,
            },
            segment_bytes: 300,
            min_cleanable_dirty_ratio: 0.01,
            ..LogConfig::default()
        };
        let p = Partition::open(dir.path(), "c", 0, config).unwrap();
        p.append_record_set(keyed("k", "committed", -1, 0, false), 5)
            .unwrap(); // 0
        p.append_record_set(keyed("k", "aborted", 1, 0, true), 5)
            .unwrap(); // 1
        p.write_marker(marker(1, 0, false), 6).unwrap(); // 2
        for i in 0..8 {
            p.append_record_set(keyed(&format!("f{i}"), "x", -1, 0, false), 5)
                .unwrap(); // 3..=10
        }
        p.append_record_set(keyed("j", "open", 2, 0, true), 5)
            .unwrap(); // 11
        for i in 0..8 {
            p.append_record_set(keyed("j", &format!("later{i}"), -1, 0, false), 5)
                .unwrap(); // 12..=19
        }
        assert_eq!(p.last_stable_offset(), 11);
        let outcome = p
            .log()
            .unwrap()
            .clean(10_000, &CleanerOptions::default())
            .unwrap()
            .expect("a pass runs");
        assert!(outcome.end_offset <= 11, "never past the open transaction");
        let read = p.read(0, 1 << 20, true, false).unwrap();
        let mut values = Vec::new();
        let mut markers = 0;
        let mut offset = 0;
        let mut records = read.records;
        loop {
            for batch in RecordBatches::new(records.clone()) {
                let batch = batch.unwrap();
                offset = batch.next_offset();
                if batch.is_control() {
                    markers += 1;
                    continue;
                }
                for r in batch.records().unwrap() {
                    let r = r.unwrap();
                    values.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
                }
            }
            if offset >= p.high_watermark() {
                break;
            }
            records = p.read(offset, 1 << 20, true, false).unwrap().records;
        }
        assert!(values.contains(&"committed".to_string()), "{values:?}");
        assert!(!values.contains(&"aborted".to_string()), "{values:?}");
        assert!(values.contains(&"open".to_string()), "{values:?}");
        assert_eq!(markers, 1, "markers are kept");
        let read = p.read(0, 1 << 20, true, true).unwrap();
        assert_eq!(read.aborted, Some(vec![aborted(1, 1, 2, 3)]));
    }
}
