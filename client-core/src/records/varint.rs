//! Zig-zag variable-length integers, as used inside RecordBatch v2 records.

use bytes::BufMut;

use crate::{Error, Result};

/// Encoded size of a zig-zag varint holding `v`.
#[inline]
pub fn varint_len(v: i32) -> usize {
    varlong_len(v as i64)
}

/// Encoded size of a zig-zag varlong holding `v`.
#[inline]
pub fn varlong_len(v: i64) -> usize {
    let z = ((v << 1) ^ (v >> 63)) as u64;
    // One byte per started group of 7 bits, at least one.
    let bits = 64 - (z | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Appends `v` as a zig-zag varint.
#[inline]
pub fn put_varint<B: BufMut>(buf: &mut B, v: i32) {
    put_varlong(buf, v as i64)
}

/// Appends `v` as a zig-zag varlong.
#[inline]
pub fn put_varlong<B: BufMut>(buf: &mut B, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        buf.put_u8((z as u8) | 0x80);
        z >>= 7;
    }
    buf.put_u8(z as u8);
}

/// Reads a zig-zag varlong of at most `max_bytes` bytes at `*pos`, advancing it.
#[inline]
fn read_zigzag(data: &[u8], pos: &mut usize, max_bytes: usize) -> Result<i64> {
    let mut z: u64 = 0;
    let mut shift = 0;
    for i in 0..max_bytes {
        let Some(&b) = data.get(*pos + i) else {
            return Err(Error::CorruptBatch(
                "varint runs past the end of the data".into(),
            ));
        };
        z |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            *pos += i + 1;
            return Ok(((z >> 1) as i64) ^ -((z & 1) as i64));
        }
        shift += 7;
    }
    Err(Error::CorruptBatch(format!(
        "varint longer than {max_bytes} bytes"
    )))
}

/// Reads a zig-zag varint (at most 5 bytes) at `*pos`, advancing it.
#[inline]
pub fn get_varint(data: &[u8], pos: &mut usize) -> Result<i32> {
    let v = read_zigzag(data, pos, 5)?;
    i32::try_from(v).map_err(|_| Error::CorruptBatch(format!("varint {v} overflows int32")))
}

/// Reads a zig-zag varlong (at most 10 bytes) at `*pos`, advancing it.
#[inline]
pub fn get_varlong(data: &[u8], pos: &mut usize) -> Result<i64> {
    read_zigzag(data, pos, 10)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_encodings() {
        let mut buf = Vec::new();
        put_varint(&mut buf, 0);
        put_varint(&mut buf, -1);
        put_varint(&mut buf, 1);
        put_varint(&mut buf, 300);
        assert_eq!(buf, [0x00, 0x01, 0x02, 0xd8, 0x04]);
    }

    #[test]
    fn rejects_overlong_and_truncated() {
        let mut pos = 0;
        assert!(get_varint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01], &mut pos).is_err());
        let mut pos = 0;
        assert!(get_varlong(&[0x80], &mut pos).is_err());
    }

    proptest! {
        #[test]
        fn varlong_round_trip(v in any::<i64>()) {
            let mut buf = Vec::new();
            put_varlong(&mut buf, v);
            prop_assert_eq!(buf.len(), varlong_len(v));
            let mut pos = 0;
            prop_assert_eq!(get_varlong(&buf, &mut pos).unwrap(), v);
            prop_assert_eq!(pos, buf.len());
        }

        #[test]
        fn varint_round_trip(v in any::<i32>()) {
            let mut buf = Vec::new();
            put_varint(&mut buf, v);
            prop_assert_eq!(buf.len(), varint_len(v));
            let mut pos = 0;
            prop_assert_eq!(get_varint(&buf, &mut pos).unwrap(), v);
        }
    }
}
