//! Walks arbitrary bytes as a record set: batch framing, CRC, decompression and records.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use odradek::records::RecordBatches;

fuzz_target!(|data: &[u8]| {
    for batch in RecordBatches::new(Bytes::copy_from_slice(data)).flatten() {
        let _ = batch.validate_crc();
        if let Ok(records) = batch.records_with_limit(1 << 20) {
            for record in records {
                let _ = record;
            }
        }
    }
});
