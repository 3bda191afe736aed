//! Arbitrary bytes as a response to every API the client sends, at every version it may
//! negotiate: the first two bytes choose the API and version (`protocol::client_api_at`), the
//! rest is the frame (response header + body). Decoding must return `Ok` or `Err`, never panic,
//! and never allocate from an unchecked length. This target runs on the *system* allocator, as a
//! Python, Node or C application does (no `UntrustedInputAllocator`), so run it with
//! `-malloc_limit_mb=512 -rss_limit_mb=512`: a decoder that sized a `Vec` from a lying count
//! fails there. What a decoded response carries for further decoding is decoded too: the
//! consumer-protocol encodings of JoinGroup / SyncGroup and the record sets of a Fetch.
#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use odradek::protocol::consumer_protocol::{decode_assignment, decode_subscription};
use odradek::protocol::messages::ResponseKind;
use odradek::protocol::{client_api_at, decode_response_kind, FrameCodec};
use odradek::records::RecordBatches;
use tokio_util::codec::Decoder;

fn decode_nested(body: ResponseKind) {
    match body {
        ResponseKind::JoinGroup(r) => {
            for m in &r.members {
                let _ = decode_subscription(&m.metadata);
            }
        }
        ResponseKind::SyncGroup(r) => {
            let _ = decode_assignment(&r.assignment);
        }
        ResponseKind::Fetch(r) => {
            for p in r.responses.iter().flat_map(|t| &t.partitions) {
                if let Some(records) = &p.records {
                    for batch in RecordBatches::new(records.clone()).flatten() {
                        if let Ok(records) = batch.records_with_limit(1 << 20) {
                            records.for_each(drop);
                        }
                    }
                }
            }
        }
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let [api, version, rest @ ..] = data else {
        return;
    };
    let (key, version) = client_api_at(*api, *version);
    if let Ok((_, body)) = decode_response_kind(key, Bytes::copy_from_slice(rest), version) {
        decode_nested(body);
    }
    // The same bytes as a stream from the broker: split into frames under a small limit (what
    // `receive.message.max.bytes` does), each decoded as a response.
    let mut codec = FrameCodec::new(1 << 16);
    let mut stream = BytesMut::from(rest);
    while let Ok(Some(frame)) = codec.decode(&mut stream) {
        let _ = decode_response_kind(key, frame, version);
    }
});
