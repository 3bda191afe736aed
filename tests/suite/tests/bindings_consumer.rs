//! The language shells' shared consumer (`odradek-bindings`) against a real broker: what the
//! shells' polls rely on beyond the core consumer.

#![allow(clippy::unwrap_used)]

use std::sync::mpsc;
use std::time::{Duration, Instant};

use odradek::producer::TopicPartition;
use odradek::{Producer, ProducerRecord};
use odradek_bindings::consumer::{ConsumerClient, Item, OFFSET_BEGINNING};
use odradek_suite::{create_topic, topic_name, Target};

const RECORDS: usize = 3000;

/// Overlapping fetches (the Kotlin shell's poll returns on a group event while its fetch runs
/// on; a Python or C poll from two threads) must queue the core's batches in offset order.
/// Before fetches took turns, two of them could each take a batch of `max.poll.records` from
/// the core and queue them in whichever order they finished.
#[test]
fn overlapping_fetches_queue_records_in_offset_order() {
    let target = Target::start(&[]);
    let topic = topic_name("bindings-order");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let producer = Producer::new(target.config(&[("linger.ms", "5")])).unwrap();
        create_topic(producer.cluster(), &topic, 1).await;
        let mut acks = Vec::new();
        for i in 0..RECORDS {
            let record = ProducerRecord::new(topic.as_str(), format!("v{i}")).partition(0);
            acks.push(producer.send(record).await.unwrap());
        }
        for ack in acks {
            ack.await.unwrap();
        }
        producer.close().await;
    });

    let consumer = ConsumerClient::new([
        ("bootstrap.servers", target.bootstrap.as_str()),
        ("max.poll.records", "7"),
    ])
    .unwrap();
    let tp = TopicPartition {
        topic: topic.as_str().into(),
        partition: 0,
    };
    consumer.assign(&[(tp, OFFSET_BEGINNING)]).unwrap();

    let mut offsets = Vec::with_capacity(RECORDS);
    let deadline = Instant::now() + Duration::from_secs(60);
    while offsets.len() < RECORDS && Instant::now() < deadline {
        let (done, finished) = mpsc::channel();
        for _ in 0..4 {
            let done = done.clone();
            consumer.fetch_then(Duration::from_millis(200), move |_| {
                let _ = done.send(());
            });
        }
        drop(done);
        for _ in finished.iter() {}
        let mut items = Vec::new();
        consumer.take(usize::MAX, &mut items);
        for item in items {
            match item {
                Item::Record(r) => offsets.push(r.offset),
                Item::Error(e) => panic!("consume error: {e}"),
                Item::Eof { .. } => {}
            }
        }
    }
    let expected: Vec<i64> = (0..RECORDS as i64).collect();
    let first_wrong = offsets.iter().zip(&expected).position(|(a, b)| a != b);
    assert_eq!(
        first_wrong,
        None,
        "records out of order near {:?}",
        first_wrong.map(|i| &offsets[i.saturating_sub(3)..(i + 10).min(offsets.len())])
    );
    assert_eq!(offsets.len(), RECORDS, "every record, once");
}
