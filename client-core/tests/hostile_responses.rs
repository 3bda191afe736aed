//! Responses crafted to make the client's decoders allocate without bound, or to trip them up,
//! must fail with a typed error: never a panic, never an aborted process.
//!
//! Unlike `hostile_requests.rs`, this test runs on the system allocator, as a Python, Node or C
//! application does: an array count that sized a `Vec` before its bytes were checked would abort
//! this process (it did before kafka-protocol's decoders were patched; see
//! `vendor/kafka-protocol/ODRADEK.md`).

// Test helpers fail the test by unwrapping; a panic is the assertion.
#![allow(clippy::unwrap_used)]

use bytes::{BufMut, Bytes, BytesMut};
use odradek::protocol::messages::{
    ApiKey, ApiVersionsResponse, FetchResponse, FindCoordinatorResponse, MetadataResponse,
    ResponseKind,
};
use odradek::protocol::types::{Decodable, HeaderVersion, StrBytes};
use odradek::protocol::{
    client_versions, decode_response, decode_response_kind, encode_response, CLIENT_APIS,
};
use odradek::Error;

/// A response header for `key` at `version`: the correlation id, then an empty tagged-field
/// section when the response header is flexible (v1).
fn header(key: ApiKey, version: i16) -> BytesMut {
    let mut buf = BytesMut::new();
    buf.put_i32(7);
    if key.response_header_version(version) >= 1 {
        buf.put_u8(0);
    }
    buf
}

fn flexible(key: ApiKey, version: i16) -> bool {
    // ApiVersions keeps header v0 even when its body is flexible (v3+).
    key.response_header_version(version) >= 1 || (key == ApiKey::ApiVersions && version >= 3)
}

fn assert_malformed(key: ApiKey, version: i16, frame: Bytes) {
    match decode_response_kind(key, frame, version) {
        Err(Error::Malformed { .. }) => {}
        other => panic!("{key:?} v{version}: expected Malformed, got {other:?}"),
    }
}

#[test]
fn huge_array_counts_in_tiny_frames_are_malformed_for_every_client_api_and_version() {
    for &key in CLIENT_APIS {
        for version in client_versions(key) {
            let mut buf = header(key, version);
            if flexible(key, version) {
                // A compact array count of u32::MAX - 1 in every plausible position.
                for _ in 0..4 {
                    buf.put_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
                }
            } else {
                for _ in 0..4 {
                    buf.put_i32(i32::MAX);
                }
            }
            // Whatever the leading fields are, the frame is ~20 bytes: a response with an
            // array in it cannot decode, and must fail without aborting. Only responses made of
            // a few fixed fields (no array at all) can read these bytes as numbers.
            match decode_response_kind(key, buf.freeze(), version) {
                Err(Error::Malformed { .. }) => {}
                Ok(_) => assert!(
                    NO_ARRAY.contains(&key)
                        || (key == ApiKey::FindCoordinator && version < 4)
                        || (key == ApiKey::LeaveGroup && version < 3),
                    "{key:?} v{version} decoded a lying array count"
                ),
                Err(other) => panic!("{key:?} v{version}: expected Malformed, got {other:?}"),
            }
        }
    }
}

/// Responses of fixed fields only, at every version.
const NO_ARRAY: &[ApiKey] = &[
    ApiKey::Heartbeat,
    ApiKey::InitProducerId,
    ApiKey::AddOffsetsToTxn,
    ApiKey::EndTxn,
    ApiKey::SaslAuthenticate,
    ApiKey::SyncGroup,
];

#[test]
fn metadata_with_two_billion_brokers_is_malformed() {
    for version in [1i16, 8, 9, 12] {
        let mut buf = header(ApiKey::Metadata, version);
        if version >= 3 {
            buf.put_i32(0); // throttle_time_ms
        }
        if version >= 9 {
            buf.put_slice(&[0xff, 0xff, 0xff, 0xff, 0x07]); // compact brokers count
        } else {
            buf.put_i32(i32::MAX); // brokers count
        }
        assert_malformed(ApiKey::Metadata, version, buf.freeze());
    }
}

#[test]
fn huge_string_lengths_are_malformed() {
    // FindCoordinator v1: throttle_time_ms, error_code, error_message (nullable string).
    let mut buf = header(ApiKey::FindCoordinator, 1);
    buf.put_i32(0);
    buf.put_i16(0);
    buf.put_i16(i16::MAX);
    buf.put_slice(b"short");
    assert_malformed(ApiKey::FindCoordinator, 1, buf.freeze());
    // FindCoordinator v3 (flexible): the same with a compact string length near u32::MAX.
    let mut buf = header(ApiKey::FindCoordinator, 3);
    buf.put_i32(0);
    buf.put_i16(0);
    buf.put_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
    buf.put_slice(b"short");
    assert_malformed(ApiKey::FindCoordinator, 3, buf.freeze());
}

#[test]
fn huge_bytes_length_in_sasl_authenticate_is_malformed() {
    // SaslAuthenticate v1: error_code, error_message, auth_bytes (bytes, i32 length).
    let mut buf = header(ApiKey::SaslAuthenticate, 1);
    buf.put_i16(0);
    buf.put_i16(-1);
    buf.put_i32(i32::MAX);
    buf.put_slice(&[1, 2, 3]);
    assert_malformed(ApiKey::SaslAuthenticate, 1, buf.freeze());
}

#[test]
fn negative_lengths_are_malformed() {
    // Metadata v1 with brokers count -2 (only -1, null, is special; brokers is not nullable).
    let mut buf = header(ApiKey::Metadata, 1);
    buf.put_i32(-2);
    assert_malformed(ApiKey::Metadata, 1, buf.freeze());
    // Metadata v1 with a null (-1) non-nullable array.
    let mut buf = header(ApiKey::Metadata, 1);
    buf.put_i32(-1);
    assert_malformed(ApiKey::Metadata, 1, buf.freeze());
    // FindCoordinator v1 with an error message of length -5.
    let mut buf = header(ApiKey::FindCoordinator, 1);
    buf.put_i32(0);
    buf.put_i16(0);
    buf.put_i16(-5);
    assert_malformed(ApiKey::FindCoordinator, 1, buf.freeze());
    // SaslAuthenticate v1 with auth_bytes of length -7.
    let mut buf = header(ApiKey::SaslAuthenticate, 1);
    buf.put_i16(0);
    buf.put_i16(-1);
    buf.put_i32(-7);
    assert_malformed(ApiKey::SaslAuthenticate, 1, buf.freeze());
}

/// Every strict prefix of a valid response fails to decode; none panics.
fn every_cut_fails<R: Decodable + HeaderVersion + std::fmt::Debug>(frame: Bytes, version: i16) {
    assert!(decode_response::<R>(frame.clone(), version).is_ok());
    for cut in 0..frame.len() {
        let result = decode_response::<R>(frame.slice(..cut), version);
        assert!(result.is_err(), "v{version} cut at {cut}: {result:?}");
    }
}

#[test]
fn truncated_responses_are_errors_at_every_cut() {
    use odradek::protocol::messages::metadata_response::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };
    use odradek::protocol::messages::TopicName;
    let topic = MetadataResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_static_str("t"))))
        .with_partitions(vec![MetadataResponsePartition::default()
            .with_replica_nodes(vec![1.into()])
            .with_isr_nodes(vec![1.into()])]);
    let body = MetadataResponse::default()
        .with_brokers(vec![MetadataResponseBroker::default()
            .with_host(StrBytes::from_static_str("localhost"))
            .with_port(9092)])
        .with_topics(vec![topic]);
    for version in [1i16, 9, 12] {
        let frame = encode_response(version, 7, &body).unwrap().slice(4..);
        every_cut_fails::<MetadataResponse>(frame, version);
    }
    let body = FindCoordinatorResponse::default().with_host(StrBytes::from_static_str("h"));
    for version in [1i16, 3] {
        let frame = encode_response(version, 7, &body).unwrap().slice(4..);
        every_cut_fails::<FindCoordinatorResponse>(frame, version);
    }
    let body = ApiVersionsResponse::default();
    let frame = encode_response(3, 7, &body).unwrap().slice(4..);
    every_cut_fails::<ApiVersionsResponse>(frame, 3);
}

#[test]
fn an_empty_fetch_response_still_decodes() {
    // The count check must not refuse what is legal: zero-length arrays at the very end.
    let frame = encode_response(12, 7, &FetchResponse::default())
        .unwrap()
        .slice(4..);
    let (header, body) = decode_response_kind(ApiKey::Fetch, frame, 12).unwrap();
    assert_eq!(header.correlation_id, 7);
    assert!(matches!(body, ResponseKind::Fetch(f) if f.responses.is_empty()));
}
