//! Length-prefixed framing: every Kafka request and response is a big-endian `int32` size
//! followed by that many bytes.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::Error;

/// Apache Kafka's default `socket.request.max.bytes` (100 MiB).
pub const DEFAULT_MAX_FRAME_SIZE: usize = 104_857_600;

/// Splits a byte stream into frames and prefixes outgoing frames with their size.
///
/// The declared size is checked against `max_frame_size` *before* any buffer is grown for it, so
/// a peer cannot make us allocate by announcing a huge frame.
#[derive(Debug, Clone, Copy)]
pub struct FrameCodec {
    max_frame_size: usize,
}

impl FrameCodec {
    /// A codec accepting frames up to `max_frame_size` bytes (not counting the size prefix).
    pub fn new(max_frame_size: usize) -> Self {
        FrameCodec { max_frame_size }
    }

    /// The configured limit.
    pub fn max_frame_size(&self) -> usize {
        self.max_frame_size
    }
}

impl Default for FrameCodec {
    fn default() -> Self {
        FrameCodec::new(DEFAULT_MAX_FRAME_SIZE)
    }
}

impl Decoder for FrameCodec {
    type Item = Bytes;
    type Error = Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, Error> {
        if src.len() < 4 {
            return Ok(None);
        }
        let declared = i32::from_be_bytes([src[0], src[1], src[2], src[3]]);
        let size = usize::try_from(declared).map_err(|_| Error::InvalidFrameLength(declared))?;
        if size > self.max_frame_size {
            return Err(Error::FrameTooLarge {
                size,
                max: self.max_frame_size,
            });
        }
        if src.len() < 4 + size {
            // Size is bounded by the check above, so this reservation is too.
            src.reserve(4 + size - src.len());
            return Ok(None);
        }
        src.advance(4);
        Ok(Some(src.split_to(size).freeze()))
    }
}

impl Encoder<Bytes> for FrameCodec {
    type Error = Error;

    /// Writes `item` as one frame; `item` must not already carry a size prefix.
    fn encode(&mut self, item: Bytes, dst: &mut BytesMut) -> Result<(), Error> {
        if item.len() > self.max_frame_size {
            return Err(Error::FrameTooLarge {
                size: item.len(),
                max: self.max_frame_size,
            });
        }
        dst.reserve(4 + item.len());
        dst.put_u32(item.len() as u32);
        dst.put_slice(&item);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_frames_across_partial_reads() {
        let mut codec = FrameCodec::new(16);
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&[0, 0, 0, 3, b'a']);
        assert!(codec.decode(&mut buf).unwrap().is_none());
        buf.extend_from_slice(b"bc\0\0\0\x01z");
        assert_eq!(
            codec.decode(&mut buf).unwrap().unwrap(),
            Bytes::from_static(b"abc")
        );
        assert_eq!(
            codec.decode(&mut buf).unwrap().unwrap(),
            Bytes::from_static(b"z")
        );
        assert!(codec.decode(&mut buf).unwrap().is_none());
    }

    #[test]
    fn rejects_oversize_before_allocating() {
        let mut codec = FrameCodec::new(16);
        let mut buf = BytesMut::from(&[0x7f, 0xff, 0xff, 0xff][..]);
        let cap = buf.capacity();
        assert!(matches!(
            codec.decode(&mut buf),
            Err(Error::FrameTooLarge { .. })
        ));
        assert_eq!(buf.capacity(), cap);
    }

    #[test]
    fn rejects_negative_length() {
        let mut codec = FrameCodec::new(16);
        let mut buf = BytesMut::from(&[0xff, 0xff, 0xff, 0xfe][..]);
        assert!(matches!(
            codec.decode(&mut buf),
            Err(Error::InvalidFrameLength(-2))
        ));
    }

    #[test]
    fn encodes_with_prefix() {
        let mut codec = FrameCodec::new(16);
        let mut dst = BytesMut::new();
        codec.encode(Bytes::from_static(b"hi"), &mut dst).unwrap();
        assert_eq!(&dst[..], b"\0\0\0\x02hi");
        assert!(codec.encode(Bytes::from(vec![0; 17]), &mut dst).is_err());
    }
}
