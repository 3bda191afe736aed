//! Feeds arbitrary bytes, in arbitrary chunks, to the frame splitter.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use odradek::protocol::FrameCodec;
use tokio_util::codec::Decoder;

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let mut codec = FrameCodec::new(1 << 16);
    let mut buf = BytesMut::new();
    for chunk in rest.chunks(usize::from(split).max(1)) {
        buf.extend_from_slice(chunk);
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(frame)) => assert!(frame.len() <= 1 << 16),
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
});
