//! Encoding a Fetch response without copying its record data into the frame.
//!
//! The response is encoded with kafka-protocol's generated encoder into [`ChunkedBuf`]: every
//! byte goes into a growing buffer, except a record set read from the log (a `Bytes` the
//! response holds, recognised by address and length when the encoder hands it over), which
//! becomes a chunk of its own. The connection writes the chunks back to back, so record bytes go
//! from the buffer the log read them into straight to the socket.

use std::ops::Range;

use bytes::buf::UninitSlice;
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, FetchResponse, ResponseHeader};
use kafka_protocol::protocol::buf::ByteBufMut;
use kafka_protocol::protocol::Encodable;

use crate::{Error, Result};

/// Record sets smaller than this are copied: a separate write costs more than the copy.
const MIN_SHARED: usize = 16 * 1024;

/// A `ByteBufMut` that keeps known large `Bytes` as separate chunks instead of copying them.
#[derive(Debug, Default)]
pub(crate) struct ChunkedBuf {
    done: Vec<Bytes>,
    done_len: usize,
    current: BytesMut,
    shared: Vec<Bytes>,
}

impl ChunkedBuf {
    /// A buffer that shares (does not copy) the given byte strings when they are put whole.
    pub(crate) fn new(shared: Vec<Bytes>, capacity: usize) -> ChunkedBuf {
        ChunkedBuf {
            shared,
            current: BytesMut::with_capacity(capacity),
            ..ChunkedBuf::default()
        }
    }

    /// Joins everything into `current` (only if the encoder revisits bytes already handed
    /// over as chunks, which the message encoders do not do).
    fn materialize(&mut self) {
        if self.done.is_empty() {
            return;
        }
        let mut all = BytesMut::with_capacity(self.done_len + self.current.len());
        for chunk in self.done.drain(..) {
            all.extend_from_slice(&chunk);
        }
        all.extend_from_slice(&self.current);
        self.current = all;
        self.done_len = 0;
    }

    /// The chunks, in order.
    pub(crate) fn into_chunks(mut self) -> Vec<Bytes> {
        if !self.current.is_empty() {
            self.done.push(self.current.freeze());
        }
        self.done
    }
}

// SAFETY: every method delegates to the inner `BytesMut`, which upholds `BufMut`'s contract;
// `put_slice` only appends chunks or delegates.
unsafe impl BufMut for ChunkedBuf {
    fn remaining_mut(&self) -> usize {
        self.current.remaining_mut()
    }

    unsafe fn advance_mut(&mut self, cnt: usize) {
        // SAFETY: the caller initialised `cnt` bytes of the chunk `chunk_mut` returned, which
        // is the inner buffer's.
        unsafe { self.current.advance_mut(cnt) }
    }

    fn chunk_mut(&mut self) -> &mut UninitSlice {
        self.current.chunk_mut()
    }

    fn put_slice(&mut self, src: &[u8]) {
        let known = (src.len() >= MIN_SHARED)
            .then(|| {
                self.shared
                    .iter()
                    .find(|b| b.as_ptr() == src.as_ptr() && b.len() == src.len())
            })
            .flatten()
            .cloned();
        match known {
            Some(chunk) => {
                let head = self.current.split().freeze();
                if !head.is_empty() {
                    self.done_len += head.len();
                    self.done.push(head);
                }
                self.done_len += chunk.len();
                self.done.push(chunk);
            }
            None => self.current.extend_from_slice(src),
        }
    }
}

impl ByteBufMut for ChunkedBuf {
    fn offset(&self) -> usize {
        self.done_len + self.current.len()
    }

    fn seek(&mut self, offset: usize) {
        if offset < self.done_len {
            self.materialize();
        }
        let at = offset - self.done_len;
        ByteBufMut::seek(&mut self.current, at);
    }

    fn range(&mut self, r: Range<usize>) -> &mut [u8] {
        if r.start < self.done_len {
            self.materialize();
        }
        let base = self.done_len;
        self.current.range(r.start - base..r.end - base)
    }
}

/// Encodes a Fetch response frame (size prefix, header, body) as chunks, sharing the record
/// sets of at least 16 KiB with the response instead of copying them.
pub(crate) fn encode_fetch(
    version: i16,
    correlation_id: i32,
    body: &FetchResponse,
) -> Result<Vec<Bytes>> {
    let bad = |m: String| Error::kafka(odradek::ErrorCode::UnknownServerError, m);
    let shared: Vec<Bytes> = body
        .responses
        .iter()
        .flat_map(|t| t.partitions.iter())
        .filter_map(|p| p.records.clone())
        .filter(|r| r.len() >= MIN_SHARED)
        .collect();
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    let header_version = ApiKey::Fetch.response_header_version(version);
    let size = header
        .compute_size(header_version)
        .and_then(|h| Ok(h + body.compute_size(version)?))
        .map_err(|e| bad(e.to_string()))?;
    let size = i32::try_from(size).map_err(|_| bad("response too large".into()))?;
    let mut buf = ChunkedBuf::new(shared, 4096);
    buf.put_i32(size);
    header
        .encode(&mut buf, header_version)
        .and_then(|()| body.encode(&mut buf, version))
        .map_err(|e| bad(e.to_string()))?;
    if buf.offset() != size as usize + 4 {
        return Err(bad(format!(
            "encoded {} bytes, computed {size}",
            buf.offset() - 4
        )));
    }
    Ok(buf.into_chunks())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
    use kafka_protocol::messages::ResponseKind;

    fn response(records: Vec<Bytes>) -> FetchResponse {
        let partitions = records
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                PartitionData::default()
                    .with_partition_index(i as i32)
                    .with_high_watermark(42)
                    .with_records(Some(r))
            })
            .collect();
        FetchResponse::default().with_responses(vec![FetchableTopicResponse::default()
            .with_topic(kafka_protocol::messages::TopicName(
                kafka_protocol::protocol::StrBytes::from_static_str("t"),
            ))
            .with_partitions(partitions)])
    }

    #[test]
    fn same_bytes_as_the_plain_encoder_and_records_are_shared() {
        let big = Bytes::from(vec![7u8; 100_000]);
        let small = Bytes::from(vec![8u8; 100]);
        let body = response(vec![big.clone(), small, big.clone()]);
        for version in [4, 11, 12, 16] {
            let chunks = encode_fetch(version, 99, &body).unwrap();
            let joined: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
            let plain = odradek::protocol::encode_response_kind(
                ApiKey::Fetch,
                version,
                99,
                &ResponseKind::Fetch(body.clone()),
            )
            .unwrap();
            assert_eq!(joined, plain.to_vec(), "version {version}");
            let shared = chunks.iter().filter(|c| c.as_ptr() == big.as_ptr()).count();
            assert_eq!(
                shared, 2,
                "both large record sets are shared, version {version}"
            );
        }
    }

    #[test]
    fn revisiting_written_bytes_joins_the_chunks() {
        let big = Bytes::from(vec![1u8; MIN_SHARED]);
        let mut buf = ChunkedBuf::new(vec![big.clone()], 16);
        buf.put_slice(b"ab");
        buf.put_slice(&big);
        buf.put_slice(b"cd");
        assert_eq!(buf.offset(), MIN_SHARED + 4);
        buf.range(0..2).copy_from_slice(b"xy");
        let joined: Vec<u8> = buf.into_chunks().concat();
        assert_eq!(&joined[..2], b"xy");
        assert_eq!(&joined[MIN_SHARED + 2..], b"cd");
    }
}
