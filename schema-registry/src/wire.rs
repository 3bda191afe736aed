//! Confluent's wire format: `0x00`, the schema id as a big-endian `i32`, then for Protobuf the
//! message indexes (a zig-zag varint count and that many zig-zag varint indexes; the common
//! `[0]` is written as the single byte `0x00`), then the payload.

use crate::avro::binary::{read_long, write_long};
use crate::error::{Error, Result};

/// The magic byte.
pub const MAGIC: u8 = 0;

/// Writes the header for `schema_id`.
pub fn write_header(out: &mut Vec<u8>, schema_id: i32) {
    out.push(MAGIC);
    out.extend_from_slice(&schema_id.to_be_bytes());
}

/// Splits a framed value into its schema id and the rest.
pub fn read_header(data: &[u8]) -> Result<(i32, &[u8])> {
    if data.len() < 5 {
        return Err(Error::Serialization(format!(
            "message of {} bytes is too short for the 5-byte schema header",
            data.len()
        )));
    }
    if data[0] != MAGIC {
        return Err(Error::Serialization(format!(
            "unknown magic byte {} (expected 0)",
            data[0]
        )));
    }
    let id = i32::from_be_bytes([data[1], data[2], data[3], data[4]]);
    Ok((id, &data[5..]))
}

/// Writes Protobuf message indexes (the path of the message type in the file).
pub fn write_message_indexes(out: &mut Vec<u8>, indexes: &[i32]) {
    if indexes == [0] {
        out.push(0);
        return;
    }
    write_long(out, indexes.len() as i64);
    for &i in indexes {
        write_long(out, i64::from(i));
    }
}

/// Reads Protobuf message indexes; an empty list means `[0]`.
pub fn read_message_indexes(buf: &mut &[u8]) -> Result<Vec<i32>> {
    let n = read_long(buf)?;
    if n == 0 {
        return Ok(vec![0]);
    }
    if n < 0 || n as usize > buf.len() {
        return Err(Error::Serialization(format!("bad message index count {n}")));
    }
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let i = read_long(buf)?;
        out.push(
            i32::try_from(i).map_err(|_| Error::Serialization(format!("bad message index {i}")))?,
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_indexes() {
        let mut out = Vec::new();
        write_header(&mut out, 258);
        write_message_indexes(&mut out, &[0]);
        write_message_indexes(&mut out, &[1, 2]);
        assert_eq!(out, [0, 0, 0, 1, 2, 0, 4, 2, 4]);
        let (id, mut rest) = read_header(&out).unwrap();
        assert_eq!(id, 258);
        assert_eq!(read_message_indexes(&mut rest).unwrap(), [0]);
        assert_eq!(read_message_indexes(&mut rest).unwrap(), [1, 2]);
        assert!(read_header(&[1, 0, 0, 0, 1]).is_err());
        assert!(read_header(&[0, 0]).is_err());
    }
}
