//! Encoding and decoding whole requests and responses (header + body) for one frame.
//!
//! The header version depends on the API key and version (flexible versions use request header
//! v2 and response header v1), with one special rule: an ApiVersions *response* always uses
//! response header v0, so a client that does not yet know the broker's versions can read it.

use std::sync::OnceLock;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request};

use crate::{Error, Result};

/// The protocol name of an API key (e.g. `"Produce"`), or `"Unknown"`.
pub fn api_name(api_key: i16) -> &'static str {
    static NAMES: OnceLock<Vec<(i16, String)>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        ApiKey::iter()
            .map(|k| (k as i16, format!("{k:?}")))
            .collect()
    });
    names
        .iter()
        .find(|(k, _)| *k == api_key)
        .map(|(_, n)| n.as_str())
        .unwrap_or("Unknown")
}

fn api_key(key: i16) -> Result<ApiKey> {
    ApiKey::try_from(key).map_err(|_| Error::UnknownApiKey(key))
}

/// The versions of `key` our message structs can encode and decode. This is the request
/// struct's own range: for a few APIs the generated `ApiKey::valid_versions` table lists one more
/// (unstable) version than the struct implements, and advertising or negotiating that version
/// would make the codec fail.
pub fn codec_versions(key: ApiKey) -> kafka_protocol::protocol::VersionRange {
    use kafka_protocol::messages::{
        InitProducerIdRequest, OffsetCommitRequest, OffsetFetchRequest,
    };
    use kafka_protocol::protocol::Message;
    match key {
        ApiKey::OffsetCommit => OffsetCommitRequest::VERSIONS,
        ApiKey::OffsetFetch => OffsetFetchRequest::VERSIONS,
        ApiKey::InitProducerId => InitProducerIdRequest::VERSIONS,
        other => other.valid_versions(),
    }
}

/// Checks `version` against the range the message schemas define for `key`.
fn check_version(key: ApiKey, version: i16) -> Result<()> {
    let range = codec_versions(key);
    if version < range.min || version > range.max {
        return Err(Error::UnsupportedVersion {
            api: api_name(key as i16),
            version,
            min: range.min,
            max: range.max,
        });
    }
    Ok(())
}

/// Request header version (1 or 2) for an API key and version.
pub fn request_header_version(api_key: ApiKey, version: i16) -> i16 {
    api_key.request_header_version(version)
}

/// Response header version (0 or 1) for an API key and version; always 0 for ApiVersions.
pub fn response_header_version(api_key: ApiKey, version: i16) -> i16 {
    api_key.response_header_version(version)
}

/// The fixed-layout start of every request header: enough to route or reject a request before
/// decoding anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestPrefix {
    /// Raw API key (may be unknown).
    pub api_key: i16,
    /// Requested API version (may be unsupported).
    pub api_version: i16,
    /// Correlation id to echo in the response.
    pub correlation_id: i32,
}

impl RequestPrefix {
    /// Reads the first eight bytes of a request frame without consuming it.
    pub fn peek(frame: &[u8]) -> Result<RequestPrefix> {
        if frame.len() < 8 {
            return Err(Error::malformed(
                "request header",
                format!("frame of {} bytes is shorter than a header", frame.len()),
            ));
        }
        Ok(RequestPrefix {
            api_key: i16::from_be_bytes([frame[0], frame[1]]),
            api_version: i16::from_be_bytes([frame[2], frame[3]]),
            correlation_id: i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]),
        })
    }
}

/// A decoded request.
#[derive(Debug, Clone)]
pub struct DecodedRequest {
    /// API key of the request.
    pub api_key: ApiKey,
    /// Its header (api key, version, correlation id, client id).
    pub header: RequestHeader,
    /// Its body.
    pub body: RequestKind,
}

/// Decodes a request header from the front of `frame`, leaving the body in `frame`.
///
/// Fails with a typed error for short frames, unknown API keys and versions outside the schemas.
pub fn decode_request_header(frame: &mut Bytes) -> Result<(ApiKey, RequestHeader)> {
    let prefix = RequestPrefix::peek(frame)?;
    let key = api_key(prefix.api_key)?;
    check_version(key, prefix.api_version)?;
    let header_version = key.request_header_version(prefix.api_version);
    let header = RequestHeader::decode(frame, header_version)
        .map_err(|e| Error::malformed("request header", e))?;
    Ok((key, header))
}

/// Decodes one request frame (without its size prefix): header, then body.
pub fn decode_request(mut frame: Bytes) -> Result<DecodedRequest> {
    let (api_key, header) = decode_request_header(&mut frame)?;
    let body = RequestKind::decode(api_key, &mut frame, header.request_api_version)
        .map_err(|e| Error::malformed(api_name(api_key as i16), e))?;
    Ok(DecodedRequest {
        api_key,
        header,
        body,
    })
}

/// Encodes a typed request with its header into one frame body (no size prefix).
pub fn encode_request<R: Request>(header: &RequestHeader, body: &R) -> Result<Bytes> {
    let version = header.request_api_version;
    let key = api_key(R::KEY)?;
    check_version(key, version)?;
    let mut buf = BytesMut::new();
    header
        .encode(&mut buf, R::header_version(version))
        .map_err(|e| Error::malformed("request header", e))?;
    body.encode(&mut buf, version)
        .map_err(|e| Error::malformed(api_name(R::KEY), e))?;
    Ok(buf.freeze())
}

/// Encodes a request of any API with its header into one frame body (no size prefix).
pub fn encode_request_kind(header: &RequestHeader, body: &RequestKind) -> Result<Bytes> {
    let key = api_key(header.request_api_key)?;
    let version = header.request_api_version;
    check_version(key, version)?;
    let mut buf = BytesMut::new();
    header
        .encode(&mut buf, key.request_header_version(version))
        .map_err(|e| Error::malformed("request header", e))?;
    body.encode(&mut buf, version)
        .map_err(|e| Error::malformed(api_name(key as i16), e))?;
    Ok(buf.freeze())
}

/// Encodes a response of any API for `version`, as a frame *with* its size prefix, ready to write.
pub fn encode_response_kind(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &ResponseKind,
) -> Result<Bytes> {
    let mut buf = BytesMut::with_capacity(64);
    buf.put_u32(0);
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut buf, api_key.response_header_version(version))
        .map_err(|e| Error::malformed("response header", e))?;
    body.encode(&mut buf, version)
        .map_err(|e| Error::malformed(api_name(api_key as i16), e))?;
    finish_frame(buf)
}

/// Encodes a typed response for `version`, as a frame *with* its size prefix.
pub fn encode_response<R: Encodable + HeaderVersion>(
    version: i16,
    correlation_id: i32,
    body: &R,
) -> Result<Bytes> {
    let mut buf = BytesMut::with_capacity(64);
    buf.put_u32(0);
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut buf, R::header_version(version))
        .map_err(|e| Error::malformed("response header", e))?;
    body.encode(&mut buf, version)
        .map_err(|e| Error::malformed("response", e))?;
    finish_frame(buf)
}

fn finish_frame(mut buf: BytesMut) -> Result<Bytes> {
    let len = i32::try_from(buf.len() - 4).map_err(|_| Error::FrameTooLarge {
        size: buf.len() - 4,
        max: i32::MAX as usize,
    })?;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    Ok(buf.freeze())
}

/// Decodes a typed response frame (no size prefix) for the request version it answers.
pub fn decode_response<R: Decodable + HeaderVersion>(
    mut frame: Bytes,
    version: i16,
) -> Result<(ResponseHeader, R)> {
    let header = ResponseHeader::decode(&mut frame, R::header_version(version))
        .map_err(|e| Error::malformed("response header", e))?;
    let body = R::decode(&mut frame, version).map_err(|e| Error::malformed("response", e))?;
    Ok((header, body))
}

/// Decodes a response frame of any API (no size prefix) for the request version it answers.
pub fn decode_response_kind(
    api_key: ApiKey,
    mut frame: Bytes,
    version: i16,
) -> Result<(ResponseHeader, ResponseKind)> {
    check_version(api_key, version)?;
    let header = ResponseHeader::decode(&mut frame, api_key.response_header_version(version))
        .map_err(|e| Error::malformed("response header", e))?;
    let body = ResponseKind::decode(api_key, &mut frame, version)
        .map_err(|e| Error::malformed(api_name(api_key as i16), e))?;
    Ok((header, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{
        ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, ProduceRequest,
    };
    use kafka_protocol::protocol::StrBytes;

    fn header(key: i16, version: i16) -> RequestHeader {
        RequestHeader::default()
            .with_request_api_key(key)
            .with_request_api_version(version)
            .with_correlation_id(42)
            .with_client_id(Some(StrBytes::from_static_str("odradek-test")))
    }

    #[test]
    fn header_versions_follow_flexible_versions() {
        assert_eq!(request_header_version(ApiKey::Produce, 8), 1);
        assert_eq!(request_header_version(ApiKey::Produce, 9), 2);
        assert_eq!(request_header_version(ApiKey::Metadata, 8), 1);
        assert_eq!(request_header_version(ApiKey::Metadata, 9), 2);
        assert_eq!(response_header_version(ApiKey::Produce, 9), 1);
        assert_eq!(response_header_version(ApiKey::Produce, 8), 0);
        // The special rule: ApiVersions responses never use a flexible header.
        assert_eq!(response_header_version(ApiKey::ApiVersions, 3), 0);
        assert_eq!(request_header_version(ApiKey::ApiVersions, 3), 2);
    }

    #[test]
    fn request_round_trip_flexible_and_not() {
        for version in [0i16, 4, 9, 12] {
            let body = MetadataRequest::default().with_allow_auto_topic_creation(true);
            let frame = encode_request(&header(3, version), &body).unwrap();
            let decoded = decode_request(frame).unwrap();
            assert_eq!(decoded.api_key, ApiKey::Metadata);
            assert_eq!(decoded.header.correlation_id, 42);
            assert_eq!(decoded.header.request_api_version, version);
            assert_eq!(
                decoded.header.client_id.as_deref(),
                Some("odradek-test"),
                "v{version}"
            );
            assert!(matches!(decoded.body, RequestKind::Metadata(_)));
        }
    }

    #[test]
    fn api_versions_response_header_is_v0_even_when_flexible() {
        let body = ApiVersionsResponse::default();
        let frame = encode_response(3, 7, &body).unwrap();
        // size(4) + correlation id(4), then immediately the body's error code (no tag buffer).
        assert_eq!(&frame[4..8], &7i32.to_be_bytes());
        assert_eq!(&frame[8..10], &0i16.to_be_bytes());
        let (hdr, _) = decode_response::<ApiVersionsResponse>(frame.slice(4..), 3).unwrap();
        assert_eq!(hdr.correlation_id, 7);
        let req = encode_request(&header(18, 3), &ApiVersionsRequest::default()).unwrap();
        assert!(decode_request(req).is_ok());
    }

    #[test]
    fn rejects_unknown_keys_versions_and_short_frames() {
        let mut frame = BytesMut::new();
        frame.put_i16(999);
        frame.put_i16(0);
        frame.put_i32(1);
        assert!(matches!(
            decode_request(frame.freeze()),
            Err(Error::UnknownApiKey(999))
        ));
        let mut frame = BytesMut::new();
        frame.put_i16(0);
        frame.put_i16(99);
        frame.put_i32(1);
        let err = decode_request(frame.freeze()).unwrap_err();
        assert!(matches!(err, Error::UnsupportedVersion { version: 99, .. }));
        assert_eq!(err.kafka_code(), crate::ErrorCode::UnsupportedVersion);
        assert!(decode_request(Bytes::from_static(&[0, 1])).is_err());
        let body = ProduceRequest::default();
        assert!(encode_request(&header(0, 1), &body).is_err());
    }

    #[test]
    fn truncated_body_is_malformed_not_panic() {
        let body = MetadataRequest::default().with_topics(Some(vec![Default::default()]));
        let frame = encode_request(&header(3, 12), &body).unwrap();
        for cut in 0..frame.len() {
            let _ = decode_request(frame.slice(..cut));
        }
    }

    #[test]
    fn codec_versions_match_the_request_structs() {
        use kafka_protocol::messages::*;
        use kafka_protocol::protocol::Message;
        fn same<R: Message + Request>() {
            let key = ApiKey::try_from(R::KEY).unwrap();
            assert_eq!(codec_versions(key), R::VERSIONS, "{key:?}");
        }
        same::<ProduceRequest>();
        same::<FetchRequest>();
        same::<ListOffsetsRequest>();
        same::<MetadataRequest>();
        same::<OffsetCommitRequest>();
        same::<OffsetFetchRequest>();
        same::<FindCoordinatorRequest>();
        same::<JoinGroupRequest>();
        same::<SyncGroupRequest>();
        same::<HeartbeatRequest>();
        same::<LeaveGroupRequest>();
        same::<InitProducerIdRequest>();
        same::<ApiVersionsRequest>();
        same::<CreateTopicsRequest>();
        same::<DescribeConfigsRequest>();
        same::<TxnOffsetCommitRequest>();
        same::<EndTxnRequest>();
    }

    #[test]
    fn names() {
        assert_eq!(api_name(0), "Produce");
        assert_eq!(api_name(18), "ApiVersions");
        assert_eq!(api_name(-5), "Unknown");
    }
}
