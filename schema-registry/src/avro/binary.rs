//! Avro's binary primitives: zig-zag varints, length-prefixed bytes, little-endian floats.

use crate::error::{Error, Result};

/// Appends `v` as a zig-zag varint (Avro `int` and `long`).
#[inline]
pub fn write_long(out: &mut Vec<u8>, v: i64) {
    let mut n = ((v << 1) ^ (v >> 63)) as u64;
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Appends a length-prefixed byte string (Avro `bytes` and `string`).
#[inline]
pub fn write_bytes(out: &mut Vec<u8>, b: &[u8]) {
    write_long(out, b.len() as i64);
    out.extend_from_slice(b);
}

fn eof() -> Error {
    Error::Serialization("unexpected end of Avro data".into())
}

/// Reads a zig-zag varint of at most 10 bytes.
#[inline]
pub fn read_long(buf: &mut &[u8]) -> Result<i64> {
    let mut n: u64 = 0;
    let mut shift = 0u32;
    loop {
        let (&b, rest) = buf.split_first().ok_or_else(eof)?;
        *buf = rest;
        if shift >= 64 {
            return Err(Error::Serialization(
                "Avro varint longer than 10 bytes".into(),
            ));
        }
        n |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    Ok(((n >> 1) as i64) ^ -((n & 1) as i64))
}

/// Reads an Avro `int`, refusing values outside 32 bits.
#[inline]
pub fn read_int(buf: &mut &[u8]) -> Result<i32> {
    let v = read_long(buf)?;
    i32::try_from(v).map_err(|_| Error::Serialization(format!("Avro int {v} out of range")))
}

/// Reads `n` raw bytes.
#[inline]
pub fn read_fixed<'a>(buf: &mut &'a [u8], n: usize) -> Result<&'a [u8]> {
    if buf.len() < n {
        return Err(eof());
    }
    let (head, rest) = buf.split_at(n);
    *buf = rest;
    Ok(head)
}

/// Reads a length-prefixed byte string; the length is checked against the bytes present
/// before anything is allocated.
#[inline]
pub fn read_bytes<'a>(buf: &mut &'a [u8]) -> Result<&'a [u8]> {
    let len = read_long(buf)?;
    let len = usize::try_from(len)
        .map_err(|_| Error::Serialization(format!("negative Avro length {len}")))?;
    read_fixed(buf, len)
}

/// Reads a length-prefixed UTF-8 string.
#[inline]
pub fn read_str<'a>(buf: &mut &'a [u8]) -> Result<&'a str> {
    std::str::from_utf8(read_bytes(buf)?)
        .map_err(|_| Error::Serialization("Avro string is not UTF-8".into()))
}

/// Reads an array or map block count: a negative count is followed by the block's byte size,
/// which is skipped over (we decode every item anyway).
#[inline]
pub fn read_block_count(buf: &mut &[u8]) -> Result<usize> {
    let n = read_long(buf)?;
    let n = if n < 0 {
        let _size = read_long(buf)?;
        n.checked_neg()
            .ok_or_else(|| Error::Serialization("bad Avro block count".into()))?
    } else {
        n
    };
    // Each item takes at least one byte, except null items: bound the count by what a
    // hostile count can make us loop over, not allocate.
    usize::try_from(n).map_err(|_| Error::Serialization("bad Avro block count".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_round_trip() {
        for v in [
            0i64,
            -1,
            1,
            63,
            -64,
            64,
            i32::MAX as i64,
            i64::MIN,
            i64::MAX,
        ] {
            let mut out = Vec::new();
            write_long(&mut out, v);
            let mut b = out.as_slice();
            assert_eq!(read_long(&mut b).unwrap(), v);
            assert!(b.is_empty());
        }
        let mut out = Vec::new();
        write_long(&mut out, -1);
        assert_eq!(out, [1]);
        out.clear();
        write_long(&mut out, 64);
        assert_eq!(out, [0x80, 1]);
    }

    #[test]
    fn hostile_lengths_fail() {
        let mut b: &[u8] = &[0xff; 11];
        assert!(read_long(&mut b).is_err());
        let mut out = Vec::new();
        write_long(&mut out, 1 << 40);
        let mut b = out.as_slice();
        assert!(read_bytes(&mut b).is_err());
    }
}
