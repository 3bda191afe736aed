//! Per-partition idempotent-producer state: for each producer id, its epoch and the sequence
//! ranges and offsets of its last five batches, so a retried batch is acknowledged with its
//! original offset instead of being written twice, and gaps are refused.
//!
//! The state is rebuilt from the batch headers of the log when a partition opens (the log is the
//! snapshot), so it survives restarts.

use std::collections::{HashMap, VecDeque};

use odradek::ErrorCode;

/// How many recent batches per producer are remembered for duplicate detection (Kafka's value,
/// and the reason clients allow at most five in-flight requests with idempotence).
pub const BATCHES_PER_PRODUCER: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BatchMeta {
    first_seq: i32,
    last_seq: i32,
    base_offset: i64,
}

#[derive(Debug, Clone, Default)]
struct ProducerEntry {
    epoch: i16,
    batches: VecDeque<BatchMeta>,
}

/// What to do with an idempotent batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceCheck {
    /// Write it.
    Append,
    /// Already written at this base offset: acknowledge without writing.
    Duplicate {
        /// Offset of the original write.
        base_offset: i64,
    },
}

/// The producer state of one partition.
#[derive(Debug, Clone, Default)]
pub struct ProducerState {
    producers: HashMap<i64, ProducerEntry>,
}

/// The sequence after `seq`, wrapping at `i32::MAX` as Kafka does.
fn next_seq(seq: i32) -> i32 {
    if seq == i32::MAX {
        0
    } else {
        seq + 1
    }
}

impl ProducerState {
    /// Checks a batch from `producer_id`/`epoch` covering sequences `first_seq..=last_seq`.
    pub fn check(
        &self,
        producer_id: i64,
        epoch: i16,
        first_seq: i32,
        last_seq: i32,
    ) -> Result<SequenceCheck, ErrorCode> {
        let Some(entry) = self.producers.get(&producer_id) else {
            // Unknown producer (new, or its state aged out): accept any starting sequence.
            return Ok(SequenceCheck::Append);
        };
        if epoch < entry.epoch {
            return Err(ErrorCode::InvalidProducerEpoch);
        }
        if epoch > entry.epoch {
            return if first_seq == 0 {
                Ok(SequenceCheck::Append)
            } else {
                Err(ErrorCode::OutOfOrderSequenceNumber)
            };
        }
        if let Some(b) = entry
            .batches
            .iter()
            .find(|b| b.first_seq == first_seq && b.last_seq == last_seq)
        {
            return Ok(SequenceCheck::Duplicate {
                base_offset: b.base_offset,
            });
        }
        match entry.batches.back() {
            Some(last) if first_seq != next_seq(last.last_seq) => {
                Err(ErrorCode::OutOfOrderSequenceNumber)
            }
            _ => Ok(SequenceCheck::Append),
        }
    }

    /// Records a written batch.
    pub fn record(
        &mut self,
        producer_id: i64,
        epoch: i16,
        first_seq: i32,
        last_seq: i32,
        base_offset: i64,
    ) {
        let entry = self.producers.entry(producer_id).or_default();
        if epoch != entry.epoch {
            entry.batches.clear();
            entry.epoch = epoch;
        }
        entry.batches.push_back(BatchMeta {
            first_seq,
            last_seq,
            base_offset,
        });
        while entry.batches.len() > BATCHES_PER_PRODUCER {
            entry.batches.pop_front();
        }
    }

    /// Producers tracked.
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    /// Whether no producer is tracked.
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_gaps_and_epochs() {
        let mut s = ProducerState::default();
        assert_eq!(s.check(7, 0, 0, 4), Ok(SequenceCheck::Append));
        s.record(7, 0, 0, 4, 100);
        assert_eq!(
            s.check(7, 0, 0, 4),
            Ok(SequenceCheck::Duplicate { base_offset: 100 })
        );
        assert_eq!(
            s.check(7, 0, 6, 9),
            Err(ErrorCode::OutOfOrderSequenceNumber),
            "gap"
        );
        assert_eq!(s.check(7, 0, 5, 9), Ok(SequenceCheck::Append));
        s.record(7, 0, 5, 9, 105);
        assert_eq!(
            s.check(7, 1, 3, 3),
            Err(ErrorCode::OutOfOrderSequenceNumber),
            "new epoch starts at 0"
        );
        assert_eq!(s.check(7, 1, 0, 0), Ok(SequenceCheck::Append));
        s.record(7, 1, 0, 0, 110);
        assert_eq!(
            s.check(7, 0, 10, 10),
            Err(ErrorCode::InvalidProducerEpoch),
            "fenced epoch"
        );
        assert_eq!(
            s.check(8, 3, 42, 50),
            Ok(SequenceCheck::Append),
            "unknown producers may start anywhere"
        );
    }

    #[test]
    fn only_the_last_five_batches_are_remembered() {
        let mut s = ProducerState::default();
        for i in 0..7 {
            s.record(1, 0, i, i, i64::from(i) * 10);
        }
        assert_eq!(
            s.check(1, 0, 6, 6),
            Ok(SequenceCheck::Duplicate { base_offset: 60 })
        );
        assert_eq!(
            s.check(1, 0, 2, 2),
            Ok(SequenceCheck::Duplicate { base_offset: 20 })
        );
        assert_eq!(
            s.check(1, 0, 1, 1),
            Err(ErrorCode::OutOfOrderSequenceNumber)
        );
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn sequences_wrap() {
        let mut s = ProducerState::default();
        s.record(1, 0, i32::MAX - 1, i32::MAX, 0);
        assert_eq!(s.check(1, 0, 0, 3), Ok(SequenceCheck::Append));
    }
}
