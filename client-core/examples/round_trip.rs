//! A produce/fetch round trip against any Kafka-protocol broker, using Odradek's protocol layer
//! and RecordBatch codec directly (the high-level producer and consumer arrive with the client
//! issues).
//!
//! Usage: `cargo run -p odradek --example round_trip -- [HOST:PORT]` (default 127.0.0.1:9092).

use std::io::{Read, Write};
use std::net::TcpStream;

use bytes::Bytes;
use odradek::protocol::messages::create_topics_request::CreatableTopic;
use odradek::protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use odradek::protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use odradek::protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, CreateTopicsRequest, FetchRequest,
    ProduceRequest, RequestHeader, TopicName,
};
use odradek::protocol::types::{Request, StrBytes};
use odradek::protocol::{decode_response, encode_request, NegotiatedVersions};
use odradek::records::{BatchBuilder, Compression, Header, RecordBatches};

type Error = Box<dyn std::error::Error>;

struct Connection {
    stream: TcpStream,
    correlation_id: i32,
}

impl Connection {
    fn call<R: Request>(&mut self, body: &R, version: i16) -> Result<R::Response, Error> {
        self.correlation_id += 1;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("odradek-round-trip")));
        let frame = encode_request(&header, body)?;
        self.stream.write_all(&(frame.len() as u32).to_be_bytes())?;
        self.stream.write_all(&frame)?;
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size)?;
        let mut buf = vec![0u8; u32::from_be_bytes(size) as usize];
        self.stream.read_exact(&mut buf)?;
        let (header, response) = decode_response::<R::Response>(Bytes::from(buf), version)?;
        if header.correlation_id != self.correlation_id {
            return Err("correlation id mismatch".into());
        }
        Ok(response)
    }
}

fn main() -> Result<(), Error> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9092".into());
    let mut conn = Connection {
        stream: TcpStream::connect(&addr)?,
        correlation_id: 0,
    };
    let versions: ApiVersionsResponse = conn.call(&ApiVersionsRequest::default(), 3)?;
    let negotiated = NegotiatedVersions::from_response(&versions);
    println!(
        "connected to {addr}: {} APIs offered",
        versions.api_keys.len()
    );

    let topic = TopicName(StrBytes::from_static_str("odradek-round-trip"));
    let create = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(topic.clone())
            .with_num_partitions(1)
            .with_replication_factor(1)])
        .with_timeout_ms(10_000);
    let created = conn.call(&create, negotiated.version(ApiKey::CreateTopics)?)?;
    let code = odradek::ErrorCode::from_code(created.topics[0].error_code);
    if !code.is_ok() && code != odradek::ErrorCode::TopicAlreadyExists {
        return Err(format!("create topic: {code}").into());
    }

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis() as i64;
    let mut batch = BatchBuilder::new(Compression::Lz4);
    for i in 0..3 {
        let headers = [Header::new(&b"sent-by"[..], Some(&b"odradek"[..]))];
        let value = format!("hello #{i}");
        batch.append(
            now,
            Some(format!("key-{i}").as_bytes()),
            Some(value.as_bytes()),
            &headers,
        )?;
    }
    // Our Produce handling is written for v9+ (flexible versions and topic names).
    let produce_version = negotiated.version(ApiKey::Produce)?.min(12);
    let produce = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic.clone())
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(batch.build()?))])]);
    let produced = conn.call(&produce, produce_version)?;
    let part = &produced.responses[0].partition_responses[0];
    odradek::ErrorCode::from_code(part.error_code).into_result()?;
    println!("produced 3 records (lz4) at offset {}", part.base_offset);

    let fetch = FetchRequest::default()
        .with_max_wait_ms(1000)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![FetchTopic::default()
            .with_topic(topic)
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(part.base_offset)
                .with_partition_max_bytes(1 << 20)])]);
    let fetch_version = negotiated.version(ApiKey::Fetch)?.min(12);
    let fetched = conn.call(&fetch, fetch_version)?;
    let data = &fetched.responses[0].partitions[0];
    odradek::ErrorCode::from_code(data.error_code).into_result()?;
    let mut seen = 0;
    for batch in RecordBatches::new(data.records.clone().unwrap_or_default()) {
        let batch = batch?;
        batch.validate_crc()?;
        for record in batch.records()? {
            let record = record?;
            let show = |b: &Option<Bytes>| {
                b.as_ref()
                    .map_or("null".into(), |b| String::from_utf8_lossy(b).into_owned())
            };
            println!(
                "fetched offset {} key={} value={} headers={}",
                record.offset,
                show(&record.key),
                show(&record.value),
                record.headers.len()
            );
            seen += 1;
        }
    }
    if seen < 3 {
        return Err(format!("expected 3 records back, got {seen}").into());
    }
    println!("round trip OK");
    Ok(())
}
