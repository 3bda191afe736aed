//! `produce`: one record per stdin line, optionally split into key and value.

use bytes::Bytes;
use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, StreamExt};
use odradek::{ClientConfig, Error, Producer, ProducerRecord, RecordMetadata};
use tokio::io::AsyncBufReadExt;

use crate::args::ProduceArgs;
use crate::failure::Failure;
use crate::format::unescape;
use crate::out;

/// Splits `line` at the first `delimiter` into key and value; a line without it is all value
/// with a null key.
pub fn split_key(line: &[u8], delimiter: &[u8]) -> (Option<Bytes>, Bytes) {
    if !delimiter.is_empty() {
        if let Some(at) = line.windows(delimiter.len()).position(|w| w == delimiter) {
            return (
                Some(Bytes::copy_from_slice(&line[..at])),
                Bytes::copy_from_slice(&line[at + delimiter.len()..]),
            );
        }
    }
    (None, Bytes::copy_from_slice(line))
}

/// Delivery counts.
#[derive(Debug, Default)]
struct Tally {
    sent: u64,
    delivered: u64,
    failed: u64,
    first_error: Option<String>,
}

impl Tally {
    fn record(&mut self, outcome: odradek::Result<RecordMetadata>) {
        match outcome {
            Ok(_) => self.delivered += 1,
            Err(e) => self.fail(&e),
        }
    }

    fn fail(&mut self, e: &Error) {
        self.failed += 1;
        if self.first_error.is_none() {
            self.first_error = Some(e.to_string());
        }
    }
}

/// Records awaiting acknowledgement beyond which reading stdin pauses.
const MAX_PENDING: usize = 100_000;

/// Reads stdin to the end, producing each line; prints one summary line.
pub async fn run(config: ClientConfig, args: &ProduceArgs) -> Result<(), Failure> {
    let delimiter = args.key_delimiter.as_deref().map(unescape);
    let partition = args.partition.filter(|&p| p >= 0);
    let producer = Producer::new(config)?;
    let mut stdin = tokio::io::BufReader::with_capacity(1 << 16, tokio::io::stdin());
    let mut pending = FuturesUnordered::new();
    let mut tally = Tally::default();
    let mut fatal: Option<Error> = None;
    let mut line = Vec::new();
    loop {
        line.clear();
        if stdin.read_until(b'\n', &mut line).await? == 0 {
            break;
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let (key, value) = match &delimiter {
            Some(d) => split_key(&line, d),
            None => (None, Bytes::copy_from_slice(&line)),
        };
        let record = ProducerRecord {
            topic: args.topic.clone(),
            partition,
            key,
            value: Some(value),
            ..Default::default()
        };
        tally.sent += 1;
        match producer.send(record).await {
            Ok(delivery) => pending.push(delivery),
            // Only this record is at fault; carry on with the next line.
            Err(e @ Error::RecordTooLarge { .. }) => tally.fail(&e),
            Err(e) => {
                tally.fail(&e);
                fatal = Some(e);
                break;
            }
        }
        while let Some(Some(outcome)) = pending.next().now_or_never() {
            tally.record(outcome);
        }
        while pending.len() >= MAX_PENDING {
            match pending.next().await {
                Some(outcome) => tally.record(outcome),
                None => break,
            }
        }
    }
    producer.flush().await;
    while let Some(outcome) = pending.next().await {
        tally.record(outcome);
    }
    producer.close().await;
    let summary = format!(
        "produced {} records to {}: {} delivered, {} failed",
        tally.sent, args.topic, tally.delivered, tally.failed
    );
    match (fatal, tally.first_error) {
        (Some(e), _) => Err(Failure::new(format!("{summary}; stopped at: {e}"))),
        (None, Some(first)) => Err(Failure::new(format!("{summary}; first error: {first}"))),
        (None, None) => {
            out::tell!("{summary}");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_the_first_delimiter_only() {
        assert_eq!(
            split_key(b"k:v:w", b":"),
            (Some(Bytes::from_static(b"k")), Bytes::from_static(b"v:w"))
        );
        assert_eq!(
            split_key(b"key::value", b"::"),
            (
                Some(Bytes::from_static(b"key")),
                Bytes::from_static(b"value")
            )
        );
        assert_eq!(
            split_key(b"novalue", b":"),
            (None, Bytes::from_static(b"novalue"))
        );
        assert_eq!(
            split_key(b":v", b":"),
            (Some(Bytes::new()), Bytes::from_static(b"v"))
        );
    }
}
