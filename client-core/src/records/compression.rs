//! The four codecs Kafka uses for the records section of a batch.
//!
//! Formats, as Apache Kafka and librdkafka read and write them:
//! - gzip: a gzip stream (RFC 1952);
//! - snappy: we write raw snappy; we read raw snappy and the xerial-framed form the Java client
//!   writes (an 8-byte magic, two version ints, then length-prefixed raw blocks);
//! - lz4: the LZ4 *frame* format with independent 64 KiB blocks;
//! - zstd: a zstd frame.
//!
//! Decompression is bounded by a caller-supplied limit so a small hostile batch cannot expand
//! into unbounded memory.

use std::io::{Read, Write};

use bytes::{BufMut, BytesMut};

use crate::{Error, Result};

/// A compression codec, with Kafka's numeric ids (the low three bits of batch attributes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Compression {
    /// No compression (id 0).
    #[default]
    None,
    /// gzip (id 1).
    Gzip,
    /// snappy (id 2).
    Snappy,
    /// lz4 frame (id 3).
    Lz4,
    /// zstd (id 4).
    Zstd,
}

impl Compression {
    /// Every codec, in id order.
    pub const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    /// The codec for an attribute id.
    pub fn from_id(id: u8) -> Result<Compression> {
        match id {
            0 => Ok(Compression::None),
            1 => Ok(Compression::Gzip),
            2 => Ok(Compression::Snappy),
            3 => Ok(Compression::Lz4),
            4 => Ok(Compression::Zstd),
            other => Err(Error::UnsupportedCompression(other)),
        }
    }

    /// The attribute id.
    pub fn id(self) -> u8 {
        self as u8
    }

    /// The `compression.type` name.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }

    /// Parses a `compression.type` name (case-insensitive).
    pub fn from_name(name: &str) -> Option<Compression> {
        Compression::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(name))
    }
}

impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

fn codec_err(codec: Compression, detail: impl std::fmt::Display) -> Error {
    Error::Compression {
        codec: codec.name(),
        detail: detail.to_string(),
    }
}

/// Compresses `input` with `codec`, appending to `out`. `level` is the codec's own level
/// (`compression.level`); `None` uses Kafka's default. lz4 has a single (fast) level here.
pub fn compress(
    codec: Compression,
    level: Option<i32>,
    input: &[u8],
    out: &mut BytesMut,
) -> Result<()> {
    match codec {
        Compression::None => out.extend_from_slice(input),
        Compression::Gzip => {
            let level = level.map_or(flate2::Compression::default(), |l| {
                flate2::Compression::new(l.clamp(1, 9) as u32)
            });
            let mut enc = flate2::write::GzEncoder::new(out.writer(), level);
            enc.write_all(input).map_err(|e| codec_err(codec, e))?;
            enc.finish().map_err(|e| codec_err(codec, e))?;
        }
        Compression::Snappy => {
            let start = out.len();
            out.resize(start + snap::raw::max_compress_len(input.len()), 0);
            let n = snap::raw::Encoder::new()
                .compress(input, &mut out[start..])
                .map_err(|e| codec_err(codec, e))?;
            out.truncate(start + n);
        }
        Compression::Lz4 => super::lz4::compress(input, out).map_err(|e| lz4_err(e, usize::MAX))?,
        Compression::Zstd => {
            let level = level.unwrap_or(3);
            let mut enc = zstd::stream::write::Encoder::new(out.writer(), level)
                .map_err(|e| codec_err(codec, e))?;
            enc.set_pledged_src_size(Some(input.len() as u64))
                .map_err(|e| codec_err(codec, e))?;
            enc.include_contentsize(true)
                .map_err(|e| codec_err(codec, e))?;
            enc.write_all(input).map_err(|e| codec_err(codec, e))?;
            enc.finish().map_err(|e| codec_err(codec, e))?;
        }
    }
    Ok(())
}

/// The xerial snappy stream header: magic, then format version and minimum compatible version.
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const XERIAL_HEADER_LEN: usize = 16;

/// Decompresses `input`, failing if the output would exceed `limit` bytes.
pub fn decompress(codec: Compression, input: &[u8], limit: usize) -> Result<Vec<u8>> {
    match codec {
        Compression::None => {
            if input.len() > limit {
                return Err(codec_err(codec, "input exceeds the decompression limit"));
            }
            Ok(input.to_vec())
        }
        Compression::Gzip => read_bounded(codec, flate2::read::MultiGzDecoder::new(input), limit),
        Compression::Snappy => {
            if input.starts_with(&XERIAL_MAGIC) {
                decompress_xerial(input, limit)
            } else {
                let mut out = Vec::new();
                snappy_raw_block(input, limit, &mut out)?;
                Ok(out)
            }
        }
        Compression::Lz4 => match super::lz4::decompress_independent(input, limit) {
            Some(decoded) => decoded.map_err(|e| lz4_err(e, limit)),
            None => read_bounded(codec, lz4_flex::frame::FrameDecoder::new(input), limit),
        },
        Compression::Zstd => {
            let dec =
                zstd::stream::read::Decoder::with_buffer(input).map_err(|e| codec_err(codec, e))?;
            read_bounded(codec, dec, limit)
        }
    }
}

fn lz4_err(e: super::lz4::Lz4Error, limit: usize) -> Error {
    match e {
        super::lz4::Lz4Error::TooLarge => codec_err(
            Compression::Lz4,
            format!("decompressed data exceeds the limit of {limit} bytes"),
        ),
        super::lz4::Lz4Error::Corrupt(detail) => codec_err(Compression::Lz4, detail),
    }
}

/// Reads a decoder to its end, never holding more than `limit + 1` bytes.
fn read_bounded<R: Read>(codec: Compression, reader: R, limit: usize) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| codec_err(codec, e))?;
    if out.len() > limit {
        return Err(codec_err(
            codec,
            format!("decompressed data exceeds the limit of {limit} bytes"),
        ));
    }
    Ok(out)
}

/// Appends one raw snappy block to `out`, checking its declared length against the limit first.
fn snappy_raw_block(block: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<()> {
    let codec = Compression::Snappy;
    let n = snap::raw::decompress_len(block).map_err(|e| codec_err(codec, e))?;
    if out.len() + n > limit {
        return Err(codec_err(
            codec,
            format!("decompressed data exceeds the limit of {limit} bytes"),
        ));
    }
    let start = out.len();
    out.resize(start + n, 0);
    let written = snap::raw::Decoder::new()
        .decompress(block, &mut out[start..])
        .map_err(|e| codec_err(codec, e))?;
    out.truncate(start + written);
    Ok(())
}

fn decompress_xerial(input: &[u8], limit: usize) -> Result<Vec<u8>> {
    let codec = Compression::Snappy;
    if input.len() < XERIAL_HEADER_LEN {
        return Err(codec_err(codec, "truncated xerial header"));
    }
    let mut pos = XERIAL_HEADER_LEN;
    let mut out = Vec::new();
    while pos < input.len() {
        let Some(len_bytes) = input.get(pos..pos + 4) else {
            return Err(codec_err(codec, "truncated xerial block length"));
        };
        let len =
            u32::from_be_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]) as usize;
        pos += 4;
        let Some(block) = input.get(pos..pos.saturating_add(len)) else {
            return Err(codec_err(codec, "xerial block runs past the end"));
        };
        snappy_raw_block(block, limit, &mut out)?;
        pos += len;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        (0..20_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect()
    }

    #[test]
    fn every_codec_round_trips() {
        let input = sample();
        for codec in Compression::ALL {
            let mut out = BytesMut::new();
            compress(codec, None, &input, &mut out).unwrap();
            if codec != Compression::None {
                assert!(out.len() < input.len(), "{codec} did not compress");
            }
            assert_eq!(
                decompress(codec, &out, input.len()).unwrap(),
                input,
                "{codec}"
            );
        }
    }

    #[test]
    fn limit_is_enforced_for_every_codec() {
        let input = vec![0u8; 1 << 20];
        for codec in Compression::ALL {
            let mut out = BytesMut::new();
            compress(codec, None, &input, &mut out).unwrap();
            let err = decompress(codec, &out, 1000).unwrap_err();
            assert!(matches!(err, Error::Compression { .. }), "{codec}: {err}");
        }
    }

    #[test]
    fn reads_xerial_framed_snappy() {
        let input = sample();
        let mut framed = XERIAL_MAGIC.to_vec();
        framed.extend_from_slice(&1u32.to_be_bytes());
        framed.extend_from_slice(&1u32.to_be_bytes());
        for chunk in input.chunks(32 * 1024) {
            let block = snap::raw::Encoder::new().compress_vec(chunk).unwrap();
            framed.extend_from_slice(&(block.len() as u32).to_be_bytes());
            framed.extend_from_slice(&block);
        }
        assert_eq!(
            decompress(Compression::Snappy, &framed, usize::MAX >> 1).unwrap(),
            input
        );
        assert!(decompress(Compression::Snappy, &framed[..framed.len() - 3], 1 << 30).is_err());
    }

    #[test]
    fn garbage_is_an_error_for_every_codec() {
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            assert!(
                decompress(codec, b"definitely not compressed", 1 << 20).is_err(),
                "{codec}"
            );
        }
    }

    #[test]
    fn names_and_ids() {
        for c in Compression::ALL {
            assert_eq!(Compression::from_id(c.id()).unwrap(), c);
            assert_eq!(Compression::from_name(c.name()), Some(c));
        }
        assert!(Compression::from_id(5).is_err());
        assert_eq!(Compression::from_name("LZ4"), Some(Compression::Lz4));
    }
}
