//! Writes one RecordBatch per codec, encoded by Odradek, plus a JSON description of the records,
//! so a third-party decoder can check it reads our output (`tests/compat/check_our_batches.py`).
//!
//! Usage: `cargo run -p odradek --example write_batches -- OUT_DIR`

use std::io::Write;

use odradek::records::{BatchBuilder, Compression, Header};

/// Timestamp, key, value and headers of one record.
type RecordSpec<'a> = (i64, Option<&'a [u8]>, Option<&'a [u8]>, &'a [Header]);

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn json_bytes(b: Option<&[u8]>) -> String {
    b.map_or("null".to_string(), |b| format!("\"{}\"", hex(b)))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args()
        .nth(1)
        .ok_or("usage: write_batches OUT_DIR")?;
    std::fs::create_dir_all(&out)?;
    let big: Vec<u8> = (0..20_000u32)
        .map(|i| b"odradek "[i as usize % 8])
        .collect();
    let headers = vec![
        Header::new(&b"dup"[..], Some(&b"1"[..])),
        Header::new(&b"nul"[..], None::<&[u8]>),
        Header::new(&b"dup"[..], Some(&b"2"[..])),
    ];
    let records: Vec<RecordSpec> = vec![
        (1_700_000_000_000, Some(b"k0"), Some(b"v0"), &headers),
        (1_699_999_999_000, None, Some(b"null key"), &[]),
        (1_700_000_000_500, Some(b"tombstone"), None, &[]),
        (1_700_000_000_600, Some(b""), Some(b""), &[]),
        (1_700_000_000_700, Some(b"big"), Some(&big), &[]),
    ];
    let mut manifest = String::from("[");
    for (i, codec) in Compression::ALL.into_iter().enumerate() {
        let mut b = BatchBuilder::new(codec).base_offset(10).producer(77, 2, 5);
        for (ts, k, v, h) in &records {
            b.append(*ts, *k, *v, h)?;
        }
        let file = format!("ours_{codec}.bin");
        std::fs::File::create(format!("{out}/{file}"))?.write_all(&b.build()?)?;
        let recs: Vec<String> = records
            .iter()
            .enumerate()
            .map(|(j, (ts, k, v, h))| {
                let hs: Vec<String> = h
                    .iter()
                    .map(|h| format!("[\"{}\", {}]", hex(&h.key), json_bytes(h.value.as_deref())))
                    .collect();
                format!(
                    "{{\"offset\": {}, \"timestamp\": {ts}, \"key\": {}, \"value\": {}, \"headers\": [{}]}}",
                    10 + j,
                    json_bytes(*k),
                    json_bytes(*v),
                    hs.join(", ")
                )
            })
            .collect();
        if i > 0 {
            manifest.push(',');
        }
        manifest.push_str(&format!(
            "\n{{\"file\": \"{file}\", \"codec\": \"{codec}\", \"records\": [{}]}}",
            recs.join(", ")
        ));
    }
    manifest.push_str("\n]\n");
    std::fs::write(format!("{out}/manifest.json"), manifest)?;
    println!("wrote {} batches to {out}", Compression::ALL.len());
    Ok(())
}
