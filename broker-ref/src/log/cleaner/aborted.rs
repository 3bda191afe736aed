//! Which batches belong to aborted transactions, for the cleaner: their records are dropped and
//! never enter the key map (so an aborted write cannot shadow a committed one), as Kafka's
//! cleaner does. Built from the aborted-transaction indexes when a pass is planned.

use std::collections::HashMap;

use odradek::records::RecordBatch;

use super::super::txn_index::AbortedTxn;

/// Offset ranges `[first, last]` of aborted transactions, by producer id.
#[derive(Debug, Default, Clone)]
pub(super) struct AbortedRanges {
    by_producer: HashMap<i64, Vec<(i64, i64)>>,
}

impl AbortedRanges {
    /// The ranges of `entries`.
    pub(super) fn new(entries: &[AbortedTxn]) -> AbortedRanges {
        let mut by_producer: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
        for e in entries {
            by_producer
                .entry(e.producer_id)
                .or_default()
                .push((e.first_offset, e.last_offset));
        }
        AbortedRanges { by_producer }
    }

    /// Whether `batch` holds records of an aborted transaction.
    pub(super) fn contains(&self, batch: &RecordBatch) -> bool {
        if !batch.is_transactional() || batch.is_control() {
            return false;
        }
        let base = batch.base_offset();
        self.by_producer
            .get(&batch.producer_id())
            .is_some_and(|ranges| ranges.iter().any(|&(f, l)| f <= base && base <= l))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use odradek::records::{BatchBuilder, Compression};

    fn batch(pid: i64, base: i64, transactional: bool) -> RecordBatch {
        let mut b = BatchBuilder::new(Compression::None)
            .base_offset(base)
            .producer(pid, 0, 0)
            .transactional(transactional);
        b.append(0, Some(b"k"), Some(b"v"), &[]).unwrap();
        RecordBatch::new(b.build().unwrap()).unwrap()
    }

    #[test]
    fn only_transactional_batches_inside_an_aborted_range_match() {
        let ranges = AbortedRanges::new(&[AbortedTxn {
            producer_id: 4,
            first_offset: 10,
            last_offset: 20,
            last_stable_offset: 21,
        }]);
        assert!(ranges.contains(&batch(4, 10, true)));
        assert!(ranges.contains(&batch(4, 19, true)));
        assert!(!ranges.contains(&batch(4, 21, true)), "after the marker");
        assert!(
            !ranges.contains(&batch(4, 9, true)),
            "before the transaction"
        );
        assert!(!ranges.contains(&batch(5, 12, true)), "another producer");
        assert!(!ranges.contains(&batch(4, 12, false)), "not transactional");
    }
}
