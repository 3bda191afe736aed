//! The LZ4 frame format of Kafka's `lz4` codec, over lz4_flex's block compressor.
//!
//! Writing: independent 64 KiB blocks, no checksums (what Kafka's Java client and librdkafka
//! write too); each block is compressed straight into the output, and a block that would not
//! shrink is stored as it is. lz4_flex's own frame encoder copies every block into a buffer of
//! its own first, about 15% of the codec's time.
//!
//! Reading: frames of independent blocks (any block size, with or without block checksums,
//! content size or content checksum) are decoded block by block straight into the output,
//! never past `limit`. Anything else (linked blocks, a dictionary, several frames in a row) goes
//! to lz4_flex's frame decoder. Checksums are not verified on the fast path: the record batch's
//! CRC32C covers the compressed bytes.

use bytes::BytesMut;

/// The LZ4 frame magic number, little-endian.
const MAGIC: [u8; 4] = 0x184D_2204_u32.to_le_bytes();
/// FLG: version 01, independent blocks, no block checksums, no content size, no content
/// checksum, no dictionary.
const FLG: u8 = 0b0110_0000;
/// BD: blocks of at most 64 KiB.
const BD: u8 = 0b0100_0000;
/// HC: the second byte of xxh32(FLG, BD) (seed 0), fixed because FLG and BD are.
const HC: u8 = 0x82;
/// Uncompressed bytes per block.
const BLOCK: usize = 64 * 1024;
/// The most an LZ4 block expands: each byte of a length field adds at most 255 bytes of output.
const MAX_EXPANSION: usize = 255;
/// The high bit of a block's size: the block is stored uncompressed.
const RAW_BLOCK: u32 = 0x8000_0000;

const FLG_VERSION_MASK: u8 = 0b1100_0000;
const FLG_VERSION_01: u8 = 0b0100_0000;
const FLG_INDEPENDENT: u8 = 0b0010_0000;
const FLG_BLOCK_CHECKSUM: u8 = 0b0001_0000;
const FLG_CONTENT_SIZE: u8 = 0b0000_1000;
const FLG_CONTENT_CHECKSUM: u8 = 0b0000_0100;
const FLG_DICT_ID: u8 = 0b0000_0001;

/// Why a frame could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Lz4Error {
    /// The output would exceed the caller's limit.
    TooLarge,
    /// The bytes are not a valid frame.
    Corrupt(&'static str),
}

/// Appends `input` to `out` as one LZ4 frame.
pub(crate) fn compress(input: &[u8], out: &mut BytesMut) -> Result<(), Lz4Error> {
    let start = out.len();
    let blocks = input.len().div_ceil(BLOCK);
    let bound = 7 + blocks * 4 + lz4_flex::block::get_maximum_output_size(input.len()) + 4;
    // Zeroed once for the whole frame, then cut to what was written.
    out.resize(start + bound, 0);
    let mut at = start;
    out[at..at + 4].copy_from_slice(&MAGIC);
    out[at + 4..at + 7].copy_from_slice(&[FLG, BD, HC]);
    at += 7;
    for block in input.chunks(BLOCK) {
        let body = at + 4;
        let n = lz4_flex::block::compress_into(block, &mut out[body..])
            .map_err(|_| Lz4Error::Corrupt("lz4 block larger than its bound"))?;
        let (size, len) = if n < block.len() {
            (n as u32, n)
        } else {
            out[body..body + block.len()].copy_from_slice(block);
            (block.len() as u32 | RAW_BLOCK, block.len())
        };
        out[at..body].copy_from_slice(&size.to_le_bytes());
        at = body + len;
    }
    out[at..at + 4].copy_from_slice(&0u32.to_le_bytes());
    out.truncate(at + 4);
    Ok(())
}

/// Decodes one LZ4 frame of independent blocks, or `None` when the frame needs lz4_flex's
/// general decoder (linked blocks, a dictionary, bytes after the frame).
pub(crate) fn decompress_independent(
    input: &[u8],
    limit: usize,
) -> Option<Result<Vec<u8>, Lz4Error>> {
    let header = match Header::parse(input)? {
        Ok(h) => h,
        Err(e) => return Some(Err(e)),
    };
    let mut out: Vec<u8> = Vec::new();
    if let Some(size) = header.content_size {
        // A hint from the peer: trusted only as far as the input could plausibly expand.
        out.reserve(size.min(limit).min(input.len().saturating_mul(4)));
    }
    let mut at = header.len;
    loop {
        let Some(word) = input.get(at..at + 4) else {
            return Some(Err(Lz4Error::Corrupt("lz4 frame ends inside a block size")));
        };
        let word = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        at += 4;
        if word == 0 {
            break;
        }
        let len = (word & !RAW_BLOCK) as usize;
        if len > header.block_max {
            return Some(Err(Lz4Error::Corrupt(
                "lz4 block larger than the frame's maximum",
            )));
        }
        let Some(data) = input.get(at..at + len) else {
            return Some(Err(Lz4Error::Corrupt("lz4 frame ends inside a block")));
        };
        at += len + if header.block_checksums { 4 } else { 0 };
        let room = limit.saturating_sub(out.len());
        if word & RAW_BLOCK != 0 {
            if len > room {
                return Some(Err(Lz4Error::TooLarge));
            }
            out.extend_from_slice(data);
            continue;
        }
        let filled = out.len();
        // The room zeroed for the block: never more than its bytes can expand to (an LZ4
        // sequence grows at most ~255x), so many tiny blocks in a frame with a large block
        // maximum cannot make each one zero megabytes.
        let expands_to = len.saturating_mul(MAX_EXPANSION).saturating_add(16);
        let window = header.block_max.min(room).min(expands_to);
        out.resize(filled + window, 0);
        match lz4_flex::block::decompress_into(data, &mut out[filled..]) {
            Ok(n) => out.truncate(filled + n),
            // The block needed more room than the limit left: it is too large, not corrupt.
            Err(_)
                if window == room
                    && window < header.block_max
                    && fits_block(data, header.block_max) =>
            {
                return Some(Err(Lz4Error::TooLarge));
            }
            Err(_) => return Some(Err(Lz4Error::Corrupt("lz4 block does not decode"))),
        }
    }
    if header.content_checksum {
        at += 4;
    }
    match at.cmp(&input.len()) {
        std::cmp::Ordering::Equal => Some(Ok(out)),
        // Another frame follows, or trailing bytes: the general decoder decides.
        std::cmp::Ordering::Less => None,
        std::cmp::Ordering::Greater => {
            Some(Err(Lz4Error::Corrupt("lz4 frame ends inside its checksum")))
        }
    }
}

/// Whether `data` decodes as a block of at most `block_max` bytes.
fn fits_block(data: &[u8], block_max: usize) -> bool {
    lz4_flex::block::decompress(data, block_max).is_ok()
}

/// What the fast path needs from a frame descriptor.
struct Header {
    /// Bytes up to the first block.
    len: usize,
    block_max: usize,
    block_checksums: bool,
    content_checksum: bool,
    content_size: Option<usize>,
}

impl Header {
    /// `None`: not a frame the fast path reads (left to the general decoder).
    fn parse(input: &[u8]) -> Option<Result<Header, Lz4Error>> {
        if input.get(..4)? != MAGIC {
            return None;
        }
        let (flg, bd) = (*input.get(4)?, *input.get(5)?);
        if flg & FLG_VERSION_MASK != FLG_VERSION_01
            || flg & FLG_INDEPENDENT == 0
            || flg & FLG_DICT_ID != 0
        {
            return None;
        }
        let block_max = match (bd >> 4) & 0b111 {
            4 => 64 << 10,
            5 => 256 << 10,
            6 => 1 << 20,
            7 => 4 << 20,
            _ => {
                return Some(Err(Lz4Error::Corrupt(
                    "lz4 frame has an invalid block size",
                )))
            }
        };
        let mut len = 6;
        let content_size = if flg & FLG_CONTENT_SIZE != 0 {
            let bytes = input.get(6..14)?;
            len += 8;
            let mut size = [0u8; 8];
            size.copy_from_slice(bytes);
            Some(usize::try_from(u64::from_le_bytes(size)).unwrap_or(usize::MAX))
        } else {
            None
        };
        // The header checksum byte.
        len += 1;
        Some(Ok(Header {
            len,
            block_max,
            block_checksums: flg & FLG_BLOCK_CHECKSUM != 0,
            content_checksum: flg & FLG_CONTENT_CHECKSUM != 0,
            content_size,
        }))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::{Read, Write};

    use super::*;

    /// Text-like bytes that compress about 2x, and random bytes that do not compress.
    fn samples() -> Vec<Vec<u8>> {
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let words = [
            "kafka", "record", "batch", "offset", "lz4", "frame", "block",
        ];
        let mut text = Vec::new();
        while text.len() < 300_000 {
            text.extend_from_slice(words[(next() % 7) as usize].as_bytes());
            text.push(b' ');
        }
        let random: Vec<u8> = (0..200_000).map(|_| next() as u8).collect();
        let mut out = vec![Vec::new(), b"x".to_vec(), random.clone()];
        for n in [100, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK, text.len()] {
            out.push(text[..n].to_vec());
        }
        out
    }

    fn ours(input: &[u8]) -> Vec<u8> {
        let mut out = BytesMut::new();
        compress(input, &mut out).unwrap();
        out.to_vec()
    }

    fn flex_encoded(input: &[u8], info: lz4_flex::frame::FrameInfo) -> Vec<u8> {
        let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
        enc.write_all(input).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn our_frames_are_read_by_the_reference_decoder() {
        for input in samples() {
            let frame = ours(&input);
            let mut back = Vec::new();
            lz4_flex::frame::FrameDecoder::new(&frame[..])
                .read_to_end(&mut back)
                .unwrap();
            assert_eq!(back, input, "{} bytes", input.len());
            assert_eq!(decompress_independent(&frame, usize::MAX), Some(Ok(input)));
        }
    }

    #[test]
    fn the_fixed_header_matches_the_reference_encoders() {
        let info = lz4_flex::frame::FrameInfo::new()
            .block_size(lz4_flex::frame::BlockSize::Max64KB)
            .block_mode(lz4_flex::frame::BlockMode::Independent);
        assert_eq!(flex_encoded(b"", info)[..7], ours(b"")[..7]);
    }

    #[test]
    fn reference_frames_of_every_shape_are_read() {
        use lz4_flex::frame::{BlockMode, BlockSize, FrameInfo};
        for input in samples() {
            for (mode, size, block_sums, content_sum, content_size) in [
                (
                    BlockMode::Independent,
                    BlockSize::Max64KB,
                    false,
                    false,
                    false,
                ),
                (
                    BlockMode::Independent,
                    BlockSize::Max256KB,
                    true,
                    true,
                    true,
                ),
                (
                    BlockMode::Independent,
                    BlockSize::Max4MB,
                    false,
                    true,
                    false,
                ),
                (BlockMode::Linked, BlockSize::Max64KB, false, false, false),
                (BlockMode::Linked, BlockSize::Max64KB, true, true, true),
            ] {
                let info = FrameInfo::new()
                    .block_mode(mode)
                    .block_size(size)
                    .block_checksums(block_sums)
                    .content_checksum(content_sum)
                    .content_size(content_size.then_some(input.len() as u64));
                let frame = flex_encoded(&input, info);
                let fast = decompress_independent(&frame, usize::MAX);
                match mode {
                    BlockMode::Independent => assert_eq!(fast, Some(Ok(input.clone()))),
                    BlockMode::Linked => assert_eq!(fast, None, "linked blocks go to lz4_flex"),
                }
            }
        }
    }

    #[test]
    fn the_limit_is_never_exceeded() {
        for input in samples().into_iter().filter(|i| i.len() > 1) {
            let frame = ours(&input);
            for limit in [0, 1, input.len() / 2, input.len() - 1] {
                assert_eq!(
                    decompress_independent(&frame, limit),
                    Some(Err(Lz4Error::TooLarge)),
                    "{} bytes, limit {limit}",
                    input.len()
                );
            }
            assert_eq!(decompress_independent(&frame, input.len()), Some(Ok(input)));
        }
    }

    #[test]
    fn many_tiny_blocks_cost_in_proportion_to_their_bytes() {
        // A frame declaring 4 MiB blocks, made of 100,000 one-literal blocks: each zeroes a few
        // hundred bytes, not 4 MiB (which would be 400 GB of writes). The time bound only
        // catches that runaway; it measures nothing.
        let mut frame = MAGIC.to_vec();
        frame.extend_from_slice(&[FLG, 0b0111_0000, 0]);
        for _ in 0..100_000 {
            frame.extend_from_slice(&2u32.to_le_bytes());
            frame.extend_from_slice(&[0x10, b'x']); // one literal, no match
        }
        frame.extend_from_slice(&0u32.to_le_bytes());
        let started = std::time::Instant::now();
        let out = decompress_independent(&frame, 1 << 20).unwrap().unwrap();
        assert_eq!(out.len(), 100_000);
        assert!(out.iter().all(|b| *b == b'x'));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn truncated_and_damaged_frames_fail_without_panicking() {
        let input = samples().pop().unwrap();
        let frame = ours(&input);
        for cut in (0..frame.len()).step_by(97) {
            let result = decompress_independent(&frame[..cut], usize::MAX);
            assert!(!matches!(result, Some(Ok(_))), "cut at {cut}");
        }
        let mut state = 7u32;
        for _ in 0..2000 {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let mut damaged = frame.clone();
            let at = (state as usize) % damaged.len();
            damaged[at] ^= (state >> 16) as u8 | 1;
            // Any outcome but a panic or an output beyond the limit.
            if let Some(Ok(out)) = decompress_independent(&damaged, 1 << 20) {
                assert!(out.len() <= 1 << 20);
            }
        }
    }
}
