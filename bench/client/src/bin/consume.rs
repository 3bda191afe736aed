//! Consumer benchmark: odradek's consumer against librdkafka's (the `rdkafka` crate, built from
//! its vendored source), reading the same pre-filled topic from the beginning.
//!
//! ```text
//! consume --client odradek|rdkafka|rdkafka-tuned --bootstrap HOST:PORT --topic T
//!         [--check-crcs true|false]
//!         [--property KEY=VALUE]...
//! ```
//!
//! One process per measurement, so `getrusage(RUSAGE_SELF)` covers exactly one client (every
//! thread of the process, librdkafka's included). Before the clock starts the process looks up
//! the topic's partitions and their high watermarks (so the run knows how many records to
//! expect) and creates the client; the clock then runs from `assign` (every partition, from the
//! beginning) until the last record was handed to the application. Each record's value is
//! touched (its length and first byte summed), as an application reading it would. Prints one
//! JSON line.
//!
//! Both clients: no group (`assign`), `check.crcs` as given (librdkafka's default is false,
//! Java's and odradek's true), otherwise their own defaults (odradek: `fetch.max.bytes` 50 MiB,
//! `max.partition.fetch.bytes` 1 MiB, 64 MiB prefetch budget, `max.poll.records` 500;
//! librdkafka: `fetch.max.bytes` 50 MiB, `max.partition.fetch.bytes` 1 MiB,
//! `queued.max.messages.kbytes` 64 MiB). `--property` (repeatable) sets one more property on
//! both clients (librdkafka's name, which both share), e.g. `security.protocol=SSL`.
//!
//! `rdkafka-tuned` is librdkafka in the configuration its documentation gives for throughput
//! ([`RDKAFKA_TUNED`]): with its defaults, a partition whose local queue passes
//! `queued.min.messages` (100,000) is not fetched again for `fetch.queue.backoff.ms` (1 s), so
//! a reader faster than the queue refills idles: 100 B records stall it most. Both rows are
//! reported; the headline ratio uses the tuned one.

use std::error::Error as StdError;
use std::time::{Duration, Instant};

type Error = Box<dyn StdError + Send + Sync>;
type Result<T> = std::result::Result<T, Error>;

/// librdkafka's consumer tuned for throughput, as its CONFIGURATION.md describes the knobs: the
/// next fetch follows 10 ms after the queue thresholds were passed, not 1 s, and the queue keeps
/// up to a million records (its byte budget, `queued.max.messages.kbytes`, stays at 64 MiB, the
/// same as odradek's, so both clients buffer the same bytes).
const RDKAFKA_TUNED: &[(&str, &str)] = &[
    ("fetch.queue.backoff.ms", "10"),
    ("queued.min.messages", "1000000"),
];

/// Gives up when no record arrived for this long.
const STALL: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
struct Args {
    client: String,
    bootstrap: String,
    topic: String,
    check_crcs: bool,
    /// Extra client properties, given to both clients.
    properties: Vec<(String, String)>,
}

fn parse() -> Result<Args> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut client = None;
    let mut bootstrap = None;
    let mut topic = None;
    let mut check_crcs = false;
    let mut properties = Vec::new();
    let mut it = argv.iter();
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--client" => client = Some(value.clone()),
            "--bootstrap" => bootstrap = Some(value.clone()),
            "--topic" => topic = Some(value.clone()),
            "--check-crcs" => check_crcs = value.parse()?,
            "--property" => {
                let (k, v) = value
                    .split_once('=')
                    .ok_or_else(|| format!("--property needs KEY=VALUE, got `{value}`"))?;
                properties.push((k.to_string(), v.to_string()));
            }
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    let client = client.ok_or("--client is required")?;
    if !["odradek", "rdkafka", "rdkafka-tuned"].contains(&client.as_str()) {
        return Err(
            format!("--client must be odradek, rdkafka or rdkafka-tuned, not `{client}`").into(),
        );
    }
    Ok(Args {
        client,
        bootstrap: bootstrap.ok_or("--bootstrap is required")?,
        topic: topic.ok_or("--topic is required")?,
        check_crcs,
        properties,
    })
}

#[derive(Debug, Clone, Copy)]
struct Usage {
    cpu_s: f64,
    max_rss_kb: i64,
}

fn rusage() -> Usage {
    // SAFETY: getrusage only writes the struct we pass; all-zero is a valid `rusage`.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a live, writable `rusage`.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    assert_eq!(rc, 0, "getrusage failed");
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    Usage {
        cpu_s: secs(ru.ru_utime) + secs(ru.ru_stime),
        max_rss_kb: ru.ru_maxrss as i64,
    }
}

/// What one run consumed.
#[derive(Debug, Default)]
struct Consumed {
    msgs: u64,
    value_bytes: u64,
    /// Sum of first bytes, so the values are really read.
    checksum: u64,
}

impl Consumed {
    fn add(&mut self, value: Option<&[u8]>) {
        self.msgs += 1;
        if let Some(v) = value {
            self.value_bytes += v.len() as u64;
            self.checksum += u64::from(v.first().copied().unwrap_or(0));
        }
    }
}

struct Measured {
    seconds: f64,
    before: Usage,
    after: Usage,
    consumed: Consumed,
    partitions: usize,
}

// ---------------------------------------------------------------------------------------------
// odradek

fn consume_odradek(a: &Args) -> Result<Measured> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let crcs = a.check_crcs.to_string();
        let mut entries = vec![
            ("bootstrap.servers", a.bootstrap.as_str()),
            ("client.id", "odradek-bench-consume"),
            ("auto.offset.reset", "earliest"),
            ("check.crcs", crcs.as_str()),
        ];
        entries.extend(a.properties.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let consumer = odradek::Consumer::from_map(entries)?;
        let deadline = Instant::now() + Duration::from_secs(30);
        let info = consumer.cluster().topic(&a.topic, deadline).await?;
        let partitions: Vec<odradek::producer::TopicPartition> = info
            .partitions
            .iter()
            .map(|p| odradek::producer::TopicPartition {
                topic: a.topic.as_str().into(),
                partition: p.partition,
            })
            .collect();
        let mut expected = 0u64;
        for tp in &partitions {
            let (low, high) = consumer.fetch_watermarks(tp).await?;
            expected += u64::try_from(high - low)?;
        }
        let before = rusage();
        let started = Instant::now();
        consumer.assign(&partitions);
        let mut consumed = Consumed::default();
        let mut last_progress = Instant::now();
        while consumed.msgs < expected {
            let records = consumer.poll(Duration::from_millis(500)).await?;
            if records.is_empty() {
                if last_progress.elapsed() > STALL {
                    return Err(format!("stalled at {} of {expected}", consumed.msgs).into());
                }
                continue;
            }
            last_progress = Instant::now();
            for r in &records {
                consumed.add(r.value.as_deref());
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        let after = rusage();
        consumer.close().await;
        Ok(Measured {
            seconds,
            before,
            after,
            consumed,
            partitions: partitions.len(),
        })
    })
}

// ---------------------------------------------------------------------------------------------
// librdkafka

fn consume_rdkafka(a: &Args) -> Result<Measured> {
    use rdkafka::config::ClientConfig;
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::message::Message;
    use rdkafka::{Offset, TopicPartitionList};

    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", &a.bootstrap)
        .set("client.id", "rdkafka-bench-consume")
        // No group is joined (assign); librdkafka wants a group.id for a consumer handle.
        .set("group.id", format!("bench-consume-{}", std::process::id()))
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("enable.partition.eof", "false")
        .set("auto.offset.reset", "earliest")
        .set("check.crcs", a.check_crcs.to_string());
    if a.client == "rdkafka-tuned" {
        for (k, v) in RDKAFKA_TUNED {
            config.set(*k, *v);
        }
    }
    for (k, v) in &a.properties {
        config.set(k, v);
    }
    let consumer: BaseConsumer = config.create()?;
    let metadata = consumer.fetch_metadata(Some(&a.topic), Duration::from_secs(30))?;
    let topic = metadata
        .topics()
        .iter()
        .find(|t| t.name() == a.topic)
        .ok_or("topic not in metadata")?;
    let partitions: Vec<i32> = topic.partitions().iter().map(|p| p.id()).collect();
    let mut expected = 0u64;
    for &p in &partitions {
        let (low, high) = consumer.fetch_watermarks(&a.topic, p, Duration::from_secs(30))?;
        expected += u64::try_from(high - low)?;
    }
    let mut list = TopicPartitionList::new();
    for &p in &partitions {
        list.add_partition_offset(&a.topic, p, Offset::Beginning)?;
    }
    let before = rusage();
    let started = Instant::now();
    consumer.assign(&list)?;
    let mut consumed = Consumed::default();
    let mut last_progress = Instant::now();
    while consumed.msgs < expected {
        match consumer.poll(Duration::from_millis(500)) {
            None => {
                if last_progress.elapsed() > STALL {
                    return Err(format!("stalled at {} of {expected}", consumed.msgs).into());
                }
            }
            Some(Err(e)) => return Err(e.into()),
            Some(Ok(m)) => {
                last_progress = Instant::now();
                consumed.add(m.payload());
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let after = rusage();
    Ok(Measured {
        seconds,
        before,
        after,
        consumed,
        partitions: partitions.len(),
    })
}

fn main() {
    let result = parse().and_then(|a| {
        let m = if a.client == "odradek" {
            consume_odradek(&a)?
        } else {
            consume_rdkafka(&a)?
        };
        let msgs = m.consumed.msgs as f64;
        let cpu = m.after.cpu_s - m.before.cpu_s;
        println!(
            concat!(
                "{{\"client\":\"{}\",\"topic\":\"{}\",\"partitions\":{},\"msgs\":{},",
                "\"value_bytes\":{},\"checksum\":{},\"seconds\":{:.4},\"msgs_per_s\":{:.1},",
                "\"mb_per_s\":{:.3},\"cpu_s\":{:.4},\"cpu_us_per_msg\":{:.4},",
                "\"peak_rss_kb\":{},\"check_crcs\":{}}}"
            ),
            a.client,
            a.topic,
            m.partitions,
            m.consumed.msgs,
            m.consumed.value_bytes,
            m.consumed.checksum,
            m.seconds,
            msgs / m.seconds,
            m.consumed.value_bytes as f64 / 1e6 / m.seconds,
            cpu,
            cpu * 1e6 / msgs.max(1.0),
            m.after.max_rss_kb,
            a.check_crcs,
        );
        Ok(())
    });
    if let Err(e) = result {
        eprintln!("consume: {e}");
        std::process::exit(1);
    }
}
