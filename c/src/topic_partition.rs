//! `odk_topic_partition_t`: a plain struct the application fills (assign, commit, seek lists)
//! or the library fills (committed offsets, positions, the assignment, rebalance events).

#![allow(non_camel_case_types)]

use std::ffi::{c_char, CString};
use std::sync::Arc;

use odk_core::producer::TopicPartition;
use odradek_bindings::ClientError;

use crate::ffi::{self, guard, str_arg};

/// A topic, a partition and an offset, with a per-item error code.
///
/// In arrays the application passes in, only `topic`, `partition` and (where the function
/// says so) `offset` are read; `topic` is borrowed for the call. In arrays the library returns
/// or fills, `err` holds an `odk_err_t` value for that item.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct odk_topic_partition_t {
    /// Topic name, NUL-terminated.
    pub topic: *const c_char,
    /// Partition index.
    pub partition: i32,
    /// An offset, or one of `ODK_OFFSET_BEGINNING`, `ODK_OFFSET_END`, `ODK_OFFSET_STORED`,
    /// `ODK_OFFSET_INVALID`.
    pub offset: i64,
    /// An `odk_err_t` value for this item (`ODK_ERR_NO_ERROR` when it succeeded).
    pub err: i32,
}

/// Reads an application array into partitions with their offsets.
///
/// # Safety
/// `parts` is NULL (with `cnt` 0) or points to `cnt` items whose topics are NULL or
/// NUL-terminated.
pub unsafe fn read_list(
    parts: *const odk_topic_partition_t,
    cnt: usize,
) -> Result<Vec<(TopicPartition, i64)>, ClientError> {
    // SAFETY: per the contract.
    let items = unsafe { ffi::slice_arg(parts, cnt, "partitions") }?;
    items
        .iter()
        .map(|p| {
            // SAFETY: per the contract.
            let topic = unsafe { str_arg(p.topic, "partition topic") }?;
            if topic.is_empty() || p.partition < 0 {
                return Err(ClientError::invalid_arg(format!(
                    "invalid partition `{topic}`-{}",
                    p.partition
                )));
            }
            Ok((
                TopicPartition {
                    topic: Arc::from(topic),
                    partition: p.partition,
                },
                p.offset,
            ))
        })
        .collect()
}

/// Topic strings that live as long as a borrowed array handed to a callback.
pub struct Borrowed {
    _topics: Vec<CString>,
    items: Vec<odk_topic_partition_t>,
}

impl Borrowed {
    /// An array of `tps` (offsets `ODK_OFFSET_INVALID`, no errors).
    pub fn new(tps: &[TopicPartition]) -> Borrowed {
        Borrowed::with_offsets(
            tps.iter()
                .map(|tp| (tp, odradek_bindings::consumer::OFFSET_INVALID, 0)),
        )
    }

    /// An array of `(partition, offset, err)` items.
    pub fn with_offsets<'a>(
        items: impl IntoIterator<Item = (&'a TopicPartition, i64, i32)>,
    ) -> Borrowed {
        let mut topics = Vec::new();
        let mut list = Vec::new();
        for (tp, offset, err) in items {
            let t = c_string(&tp.topic);
            list.push(odk_topic_partition_t {
                // The CString's heap buffer does not move when the CString is moved.
                topic: t.as_ptr(),
                partition: tp.partition,
                offset,
                err,
            });
            topics.push(t);
        }
        Borrowed {
            _topics: topics,
            items: list,
        }
    }

    /// The items.
    pub fn as_slice(&self) -> &[odk_topic_partition_t] {
        &self.items
    }
}

/// A C string of `s`, with any interior NUL replaced (Kafka topic names cannot contain one).
pub fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', "?")).unwrap_or_default()
}

/// Hands an owned array to the application: `(pointer, count)`, freed by
/// `odk_topic_partitions_destroy`.
pub fn into_owned(items: Vec<(TopicPartition, i64, i32)>) -> (*mut odk_topic_partition_t, usize) {
    let list: Box<[odk_topic_partition_t]> = items
        .into_iter()
        .map(|(tp, offset, err)| odk_topic_partition_t {
            topic: c_string(&tp.topic).into_raw(),
            partition: tp.partition,
            offset,
            err,
        })
        .collect();
    let n = list.len();
    if n == 0 {
        return (std::ptr::null_mut(), 0);
    }
    (Box::into_raw(list).cast::<odk_topic_partition_t>(), n)
}

/// Frees an array the library returned (from `odk_consumer_assignment`), with its topic
/// strings. NULL is a no-op.
///
/// Ownership: `parts` and `cnt` must be exactly what the library returned; the array must not
/// have been modified (in particular its `topic` pointers). Thread safety: any thread, once.
///
/// # Safety
/// As stated: `parts` is NULL or an array of `cnt` items returned by libodradek.
#[no_mangle]
pub unsafe extern "C" fn odk_topic_partitions_destroy(
    parts: *mut odk_topic_partition_t,
    cnt: usize,
) {
    guard((), || {
        if parts.is_null() || cnt == 0 {
            return;
        }
        // SAFETY: per the contract this is the boxed slice `into_owned` leaked.
        let list = unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(parts, cnt)) };
        for p in list.iter() {
            if !p.topic.is_null() {
                // SAFETY: every topic came from CString::into_raw in `into_owned`.
                drop(unsafe { CString::from_raw(p.topic.cast_mut()) });
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owned_round_trip_and_reading() {
        let tp = TopicPartition {
            topic: Arc::from("t"),
            partition: 2,
        };
        let (p, n) = into_owned(vec![(tp.clone(), 5, 0)]);
        assert_eq!(n, 1);
        let read = unsafe { read_list(p, n) }.unwrap();
        assert_eq!(read, vec![(tp, 5)]);
        unsafe { odk_topic_partitions_destroy(p, n) };
        assert!(unsafe { read_list(std::ptr::null(), 1) }.is_err());
        assert!(unsafe { read_list(std::ptr::null(), 0) }
            .unwrap()
            .is_empty());
    }
}
