//! Reads a partition from the beginning with Odradek's consumer and prints one JSON object per
//! record (hex bytes), so other tools can compare what we read with what they wrote.
//!
//! Usage: `consume_dump BOOTSTRAP TOPIC PARTITION COUNT`

use std::time::Duration;

use odradek::producer::TopicPartition;
use odradek::Consumer;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn json_bytes(b: Option<&[u8]>) -> String {
    b.map_or("null".into(), |b| format!("\"{}\"", hex(b)))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, bootstrap, topic, partition, count] = args.as_slice() else {
        return Err("usage: consume_dump BOOTSTRAP TOPIC PARTITION COUNT".into());
    };
    let count: usize = count.parse()?;
    let consumer = Consumer::from_map([
        ("bootstrap.servers", bootstrap.as_str()),
        ("auto.offset.reset", "earliest"),
    ])?;
    consumer.assign(&[TopicPartition {
        topic: topic.as_str().into(),
        partition: partition.parse()?,
    }]);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut seen = 0;
    while seen < count {
        if tokio::time::Instant::now() > deadline {
            return Err(format!("only {seen} of {count} records within 30 s").into());
        }
        for r in consumer.poll(Duration::from_millis(200)).await? {
            let headers: Vec<String> = r
                .headers
                .iter()
                .map(|h| format!("[\"{}\", {}]", hex(&h.key), json_bytes(h.value.as_deref())))
                .collect();
            println!(
                "{{\"offset\": {}, \"timestamp\": {}, \"log_append_time\": {}, \"key\": {}, \"value\": {}, \"headers\": [{}]}}",
                r.offset,
                r.timestamp,
                r.timestamp_type == odradek::records::TimestampType::LogAppendTime,
                json_bytes(r.key.as_deref()),
                json_bytes(r.value.as_deref()),
                headers.join(", ")
            );
            seen += 1;
        }
    }
    consumer.close().await;
    Ok(())
}
