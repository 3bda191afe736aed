//! Producer benchmark: odradek's async producer against librdkafka (the `rdkafka` crate, built
//! from its vendored source), same broker, same settings.
//!
//! ```text
//! odradek-bench produce --client odradek|rdkafka|rdkafka-tuned --bootstrap HOST:PORT --topic T --count N
//!                       --size BYTES --acks 1|all --compression none|lz4 [--partitions P]
//!                       [--runtime multi|current]
//!                       [--mode plain|idempotent|transactional] [--commit-every N]
//!                       [--property KEY=VALUE]...
//! odradek-bench create-topic --bootstrap HOST:PORT --topic T --partitions P
//! odradek-bench delete-topic --bootstrap HOST:PORT --topic T
//! odradek-bench decode-bound --size BYTES --compression C [--count N]
//! odradek-bench version
//! ```
//!
//! `decode-bound` is the consumer's ceiling for a codec: batches of the same values the
//! producer family writes (about 1 MB each, built with odradek's `BatchBuilder` and that codec),
//! decoded and walked record by record (each value's first byte read, as the consumer benchmark
//! does) on one core with no network, repeated until N records were read. Prints one JSON line
//! with the records per second.
//!
//! `produce` sends N keyless records of SIZE deterministic, text-like bytes as fast as the client
//! accepts them, waits for every delivery, exits non-zero if any failed, and prints one JSON line.
//! Both clients get `linger.ms=5`, `batch.size=1000000`, `enable.idempotence=false` and the given
//! acks and compression. One record is produced and awaited before the clock starts, so
//! connection setup and metadata are not measured. CPU is `getrusage(RUSAGE_SELF)` (every thread
//! of the process, librdkafka's included) over the measured interval.
//!
//! `--mode idempotent` sets `enable.idempotence=true` (needs `--acks all`); `--mode
//! transactional` also sets a `transactional.id`, calls `init_transactions` before the clock
//! starts and wraps every `--commit-every` records (default 1000) in `begin_transaction` …
//! `commit_transaction` (which waits for the transaction's deliveries), as an application doing
//! exactly-once output would.
//!
//! `rdkafka-tuned` is librdkafka with the producer settings its documentation gives for
//! throughput on top ([`RDKAFKA_TUNED`]); `rdkafka` keeps its defaults for them.
//!
//! `--property KEY=VALUE` (repeatable) sets one more client property on both clients, with the
//! name both share (librdkafka's): e.g. `security.protocol=SSL`, `ssl.ca.location=ca.pem` for
//! a run over TLS.

use std::error::Error as StdError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;

type Error = Box<dyn StdError + Send + Sync>;
type Result<T> = std::result::Result<T, Error>;

// ---------------------------------------------------------------------------------------------
// Arguments

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    Odradek,
    Rdkafka,
    /// librdkafka with [`RDKAFKA_TUNED`].
    RdkafkaTuned,
}

/// librdkafka's producer tuned for throughput: batches bounded by `batch.size` alone, as
/// odradek's are (librdkafka also stops a batch at `batch.num.messages`, 10,000 by default,
/// which cuts 100 B batches at about 0.7 MB), and Nagle's algorithm off on its sockets.
/// `linger.ms` stays at the 5 ms both clients get: a longer linger trades latency away.
const RDKAFKA_TUNED: &[(&str, &str)] = &[
    ("batch.num.messages", "1000000"),
    ("socket.nagle.disable", "true"),
];

/// Delivery guarantees of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `enable.idempotence=false`.
    Plain,
    /// `enable.idempotence=true`.
    Idempotent,
    /// A transaction per `commit_every` records.
    Transactional { commit_every: u64 },
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::Idempotent => "idempotent",
            Mode::Transactional { .. } => "transactional",
        }
    }

    fn idempotence(self) -> &'static str {
        if self == Mode::Plain {
            "false"
        } else {
            "true"
        }
    }

    fn commit_every(self) -> Option<u64> {
        match self {
            Mode::Transactional { commit_every } => Some(commit_every),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
struct ProduceArgs {
    client: Client,
    bootstrap: String,
    topic: String,
    count: u64,
    size: usize,
    acks: String,
    compression: String,
    partitions: Option<i32>,
    multi_thread: bool,
    mode: Mode,
    /// Extra client properties (`--property`), given to both clients.
    properties: Vec<(String, String)>,
}

fn usage() -> ! {
    eprintln!(
        "usage:\n  odradek-bench produce --client odradek|rdkafka --bootstrap HOST:PORT --topic T \
         --count N --size BYTES --acks 1|all --compression none|lz4 [--partitions P] \
         [--runtime multi|current]\n  odradek-bench create-topic --bootstrap HOST:PORT --topic T \
         --partitions P\n  odradek-bench delete-topic --bootstrap HOST:PORT --topic T\n  \
         odradek-bench version"
    );
    std::process::exit(2)
}

/// `--name value` pairs after the subcommand.
fn parse_flags(args: &[String]) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let name = flag
            .strip_prefix("--")
            .ok_or_else(|| format!("expected --flag, got `{flag}`"))?;
        let value = it.next().ok_or_else(|| format!("--{name} needs a value"))?;
        out.push((name.to_string(), value.clone()));
    }
    Ok(out)
}

fn flag<'a>(flags: &'a [(String, String)], name: &str) -> Option<&'a str> {
    flags
        .iter()
        .rev()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

fn required<'a>(flags: &'a [(String, String)], name: &str) -> Result<&'a str> {
    flag(flags, name).ok_or_else(|| format!("--{name} is required").into())
}

/// Every `--property KEY=VALUE`, in order.
fn properties(flags: &[(String, String)]) -> Result<Vec<(String, String)>> {
    flags
        .iter()
        .filter(|(n, _)| n == "property")
        .map(|(_, kv)| {
            kv.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| format!("--property needs KEY=VALUE, got `{kv}`").into())
        })
        .collect()
}

fn parse_produce(flags: &[(String, String)]) -> Result<ProduceArgs> {
    for (name, _) in flags {
        if ![
            "client",
            "bootstrap",
            "topic",
            "count",
            "size",
            "acks",
            "compression",
            "partitions",
            "runtime",
            "mode",
            "commit-every",
            "property",
        ]
        .contains(&name.as_str())
        {
            return Err(format!("unknown flag --{name}").into());
        }
    }
    let client = match required(flags, "client")? {
        "odradek" => Client::Odradek,
        "rdkafka" | "librdkafka" => Client::Rdkafka,
        "rdkafka-tuned" => Client::RdkafkaTuned,
        other => {
            return Err(format!(
                "--client must be odradek, rdkafka or rdkafka-tuned, not `{other}`"
            )
            .into())
        }
    };
    let acks = match required(flags, "acks")? {
        "1" => "1",
        "all" | "-1" => "all",
        other => return Err(format!("--acks must be 1 or all, not `{other}`").into()),
    };
    let compression = match required(flags, "compression")? {
        c @ ("none" | "lz4" | "gzip" | "snappy" | "zstd") => c,
        other => return Err(format!("unsupported --compression `{other}`").into()),
    };
    let multi_thread = match flag(flags, "runtime").unwrap_or("multi") {
        "multi" => true,
        "current" => false,
        other => return Err(format!("--runtime must be multi or current, not `{other}`").into()),
    };
    let commit_every: u64 = flag(flags, "commit-every").unwrap_or("1000").parse()?;
    let mode = match flag(flags, "mode").unwrap_or("plain") {
        "plain" => Mode::Plain,
        "idempotent" => Mode::Idempotent,
        "transactional" if commit_every > 0 => Mode::Transactional { commit_every },
        other => {
            return Err(format!(
                "--mode must be plain, idempotent or transactional (with --commit-every > 0), \
                 not `{other}`"
            )
            .into())
        }
    };
    if mode != Mode::Plain && acks != "all" {
        return Err("--mode idempotent and transactional need --acks all".into());
    }
    Ok(ProduceArgs {
        mode,
        client,
        bootstrap: required(flags, "bootstrap")?.to_string(),
        topic: required(flags, "topic")?.to_string(),
        count: required(flags, "count")?.parse()?,
        size: required(flags, "size")?.parse()?,
        acks: acks.to_string(),
        compression: compression.to_string(),
        partitions: flag(flags, "partitions").map(str::parse).transpose()?,
        multi_thread,
        properties: properties(flags)?,
    })
}

// ---------------------------------------------------------------------------------------------
// Payloads

/// Deterministic, text-like bytes: pseudo-words from a 512-word vocabulary, chosen by a seeded
/// generator. LZ4 compresses them roughly 2x, like typical JSON/log payloads, unlike random
/// bytes (incompressible) or repeated bytes (unrealistically compressible).
struct Payloads {
    pool: Bytes,
    size: usize,
    span: usize,
}

/// SplitMix64.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl Payloads {
    const SPAN: usize = 4 << 20;

    fn new(size: usize) -> Payloads {
        let mut rng = Rng(0x0DDA_DEC0_FFEE_0001);
        let words: Vec<Vec<u8>> = (0..512)
            .map(|_| {
                let len = 2 + (rng.next() % 9) as usize;
                (0..len).map(|_| b'a' + (rng.next() % 26) as u8).collect()
            })
            .collect();
        let total = Self::SPAN + size;
        let mut pool = Vec::with_capacity(total + 16);
        while pool.len() < total {
            let r = rng.next();
            pool.extend_from_slice(&words[(r % 512) as usize]);
            pool.push(if r >> 60 == 0 { b',' } else { b' ' });
            if r >> 58 == 1 {
                // a number now and then
                pool.extend_from_slice((r >> 20 & 0xFFFFF).to_string().as_bytes());
                pool.push(b' ');
            }
        }
        pool.truncate(total);
        Payloads {
            pool: Bytes::from(pool),
            size,
            span: Self::SPAN,
        }
    }

    fn offset(&self, i: u64) -> usize {
        // Consecutive records take consecutive slices, as values an application just produced
        // would be streamed (cache- and prefetcher-friendly); the 4 MiB span is far larger
        // than LZ4's 64 KiB window, so no record repeats an earlier one within a block.
        ((i.wrapping_mul(self.size as u64)) % self.span as u64) as usize
    }

    /// Record `i`'s value as a shared slice (no copy).
    fn bytes(&self, i: u64) -> Bytes {
        let o = self.offset(i);
        self.pool.slice(o..o + self.size)
    }

    /// Record `i`'s value as a borrowed slice.
    fn slice(&self, i: u64) -> &[u8] {
        let o = self.offset(i);
        &self.pool[o..o + self.size]
    }
}

// ---------------------------------------------------------------------------------------------
// Measurement

#[derive(Debug, Clone, Copy)]
struct Usage {
    user_s: f64,
    sys_s: f64,
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
        user_s: secs(ru.ru_utime),
        sys_s: secs(ru.ru_stime),
        max_rss_kb: ru.ru_maxrss as i64,
    }
}

struct Measured {
    seconds: f64,
    before: Usage,
    after: Usage,
}

fn report(a: &ProduceArgs, m: &Measured) -> String {
    let msgs = a.count as f64;
    let bytes = a.count * a.size as u64;
    let user = m.after.user_s - m.before.user_s;
    let sys = m.after.sys_s - m.before.sys_s;
    let client = match a.client {
        Client::Odradek => "odradek",
        Client::Rdkafka => "rdkafka",
        Client::RdkafkaTuned => "rdkafka-tuned",
    };
    format!(
        concat!(
            "{{\"client\":\"{}\",\"msgs\":{},\"bytes\":{},\"seconds\":{:.4},",
            "\"msgs_per_s\":{:.1},\"mb_per_s\":{:.3},\"cpu_user_s\":{:.4},\"cpu_sys_s\":{:.4},",
            "\"cpu_us_per_msg\":{:.4},\"peak_rss_kb\":{},",
            "\"size\":{},\"acks\":\"{}\",\"compression\":\"{}\",\"partitions\":{},",
            "\"topic\":\"{}\",\"runtime\":\"{}\",\"mode\":\"{}\",\"commit_every\":{}}}"
        ),
        client,
        a.count,
        bytes,
        m.seconds,
        msgs / m.seconds,
        bytes as f64 / 1e6 / m.seconds,
        user,
        sys,
        (user + sys) * 1e6 / msgs,
        m.after.max_rss_kb,
        a.size,
        a.acks,
        a.compression,
        a.partitions.map_or("null".to_string(), |p| p.to_string()),
        a.topic,
        match (a.client, a.multi_thread) {
            (Client::Rdkafka | Client::RdkafkaTuned, _) => "librdkafka-threads",
            (Client::Odradek, true) => "tokio-multi-thread",
            (Client::Odradek, false) => "tokio-current-thread",
        },
        a.mode.name(),
        a.mode
            .commit_every()
            .map_or("null".to_string(), |n| n.to_string()),
    )
}

// ---------------------------------------------------------------------------------------------
// odradek

/// Delivery futures are handed to the waiting task in chunks, so the channel costs nothing per
/// record; the bounded channel keeps memory bounded (the producer's `buffer.memory` bounds the
/// records themselves).
const CHUNK: usize = 1024;
const CHUNKS_IN_FLIGHT: usize = 512;

fn produce_odradek(a: &ProduceArgs, payloads: &Payloads) -> Result<Measured> {
    let runtime = if a.multi_thread {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    };
    runtime.block_on(async {
        let txn_id = transactional_id(a);
        let mut entries = vec![
            ("bootstrap.servers", a.bootstrap.as_str()),
            ("client.id", "odradek-bench"),
            ("linger.ms", "5"),
            ("batch.size", "1000000"),
            ("enable.idempotence", a.mode.idempotence()),
            ("acks", a.acks.as_str()),
            ("compression.type", a.compression.as_str()),
        ];
        if let Some(id) = &txn_id {
            entries.push(("transactional.id", id.as_str()));
        }
        entries.extend(a.properties.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let config = odradek::ClientConfig::from_map(entries)?;
        let producer = odradek::Producer::new(config)?;
        let commit_every = a.mode.commit_every();
        let txn_timeout = Duration::from_secs(60);
        // Prime: connection, metadata, producer id, first batch (in a transaction of its own).
        if commit_every.is_some() {
            producer.init_transactions(txn_timeout).await?;
            producer.begin_transaction()?;
        }
        let prime = producer
            .send(odradek::ProducerRecord::new(
                a.topic.clone(),
                payloads.bytes(0),
            ))
            .await?;
        if commit_every.is_some() {
            producer.commit_transaction(txn_timeout).await?;
        }
        prime.await?;

        let before = rusage();
        let started = Instant::now();
        let (tx, mut rx) =
            tokio::sync::mpsc::channel::<Vec<odradek::producer::DeliveryFuture>>(CHUNKS_IN_FLIGHT);
        let waiter = tokio::spawn(async move {
            let mut ok = 0u64;
            let mut failed = 0u64;
            let mut first_error: Option<String> = None;
            while let Some(chunk) = rx.recv().await {
                for f in chunk {
                    match f.await {
                        Ok(_) => ok += 1,
                        Err(e) => {
                            failed += 1;
                            first_error.get_or_insert_with(|| e.to_string());
                        }
                    }
                }
            }
            (ok, failed, first_error)
        });
        let mut chunk = Vec::with_capacity(CHUNK);
        for i in 0..a.count {
            if commit_every.is_some_and(|n| i % n == 0) {
                producer.begin_transaction()?;
            }
            let record = odradek::ProducerRecord::new(a.topic.clone(), payloads.bytes(i));
            chunk.push(producer.send(record).await?);
            if commit_every.is_some_and(|n| (i + 1) % n == 0 || i + 1 == a.count) {
                producer.commit_transaction(txn_timeout).await?;
            }
            if chunk.len() == CHUNK {
                let full = std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK));
                tx.send(full).await.map_err(|_| "delivery waiter stopped")?;
            }
        }
        if !chunk.is_empty() {
            tx.send(chunk)
                .await
                .map_err(|_| "delivery waiter stopped")?;
        }
        drop(tx);
        let (ok, failed, first_error) = waiter.await?;
        let seconds = started.elapsed().as_secs_f64();
        let after = rusage();
        producer.close().await;
        if failed > 0 || ok != a.count {
            return Err(format!(
                "odradek: {failed} of {} deliveries failed (acknowledged {ok}); first error: {}",
                a.count,
                first_error.unwrap_or_default()
            )
            .into());
        }
        Ok(Measured {
            seconds,
            before,
            after,
        })
    })
}

/// `decode-bound`: see the module documentation.
fn decode_bound(flags: &[(String, String)]) -> Result<()> {
    let size: usize = required(flags, "size")?.parse()?;
    let codec = required(flags, "compression")?;
    let compression = odradek::records::Compression::from_name(codec)
        .ok_or_else(|| format!("unsupported --compression `{codec}`"))?;
    let count: u64 = flag(flags, "count").unwrap_or("2000000").parse()?;
    let payloads = Payloads::new(size);
    let per_batch = (1_000_000 / size.max(1)).max(1) as u64;
    // Enough distinct batches that the decoder does not read one batch from cache.
    let mut batches = Vec::new();
    for b in 0..16u64 {
        let mut builder = odradek::records::BatchBuilder::with_capacity(compression, 1 << 20);
        for i in 0..per_batch {
            builder.append(0, None, Some(payloads.slice(b * per_batch + i)), &[])?;
        }
        batches.push(builder.build()?);
    }
    let started = Instant::now();
    let (mut read, mut checksum) = (0u64, 0u64);
    'outer: loop {
        for bytes in &batches {
            let batch = odradek::records::RecordBatch::new(bytes.clone())?;
            for record in batch.records()? {
                let record = record?;
                checksum += u64::from(
                    record
                        .value
                        .as_deref()
                        .and_then(|v| v.first())
                        .copied()
                        .unwrap_or(0),
                );
                read += 1;
                if read == count {
                    break 'outer;
                }
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{{\"decode_bound\":true,\"size\":{size},\"compression\":\"{codec}\",\"msgs\":{read},\"seconds\":{seconds:.4},\"msgs_per_s\":{:.1},\"checksum\":{checksum}}}",
        read as f64 / seconds
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// librdkafka

use rdkafka::config::ClientConfig as RdConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::ClientContext;

#[derive(Default)]
struct Deliveries {
    ok: AtomicU64,
    failed: AtomicU64,
    first_error: Mutex<Option<String>>,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => {
                self.ok.fetch_add(1, Ordering::Relaxed);
            }
            Err((e, _)) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                if let Ok(mut first) = self.first_error.lock() {
                    first.get_or_insert_with(|| e.to_string());
                }
            }
        }
    }
}

fn rd_config(bootstrap: &str) -> RdConfig {
    let mut c = RdConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("client.id", "rdkafka-bench")
        .set("log_level", "3");
    c
}

/// How often the send loop serves delivery reports.
const POLL_EVERY: u64 = 256;

fn produce_rdkafka(a: &ProduceArgs, payloads: &Payloads) -> Result<Measured> {
    let mut config = rd_config(&a.bootstrap);
    config
        .set("linger.ms", "5")
        .set("batch.size", "1000000")
        .set("enable.idempotence", a.mode.idempotence())
        .set("acks", a.acks.as_str())
        .set("compression.codec", a.compression.as_str())
        // Large enough that the queue never limits a run (librdkafka's own defaults are 100k
        // messages / 1 GiB); message.max.bytes matches odradek's max.request.size default.
        .set("queue.buffering.max.messages", "1000000")
        .set("queue.buffering.max.kbytes", "1048576")
        .set("message.max.bytes", "1048576");
    if let Some(id) = transactional_id(a) {
        config.set("transactional.id", id);
    }
    if a.client == Client::RdkafkaTuned {
        for (k, v) in RDKAFKA_TUNED {
            config.set(*k, *v);
        }
    }
    for (k, v) in &a.properties {
        config.set(k, v);
    }
    let producer: BaseProducer<Deliveries> = config.create_with_context(Deliveries::default())?;
    let commit_every = a.mode.commit_every();
    let txn_timeout = Duration::from_secs(60);
    // Prime: connection, metadata, producer id, first batch (in a transaction of its own).
    if commit_every.is_some() {
        producer.init_transactions(txn_timeout)?;
        producer.begin_transaction()?;
    }
    send_rd(&producer, &a.topic, payloads.slice(0))?;
    if commit_every.is_some() {
        producer.commit_transaction(txn_timeout)?;
    }
    producer.flush(Duration::from_secs(60))?;
    let ctx = producer.context();
    if ctx.failed.load(Ordering::Relaxed) > 0 {
        return Err(format!(
            "rdkafka: priming record failed: {}",
            ctx.first_error
                .lock()
                .ok()
                .and_then(|e| e.clone())
                .unwrap_or_default()
        )
        .into());
    }
    ctx.ok.store(0, Ordering::Relaxed);

    let before = rusage();
    let started = Instant::now();
    for i in 0..a.count {
        if commit_every.is_some_and(|n| i % n == 0) {
            producer.begin_transaction()?;
        }
        send_rd(&producer, &a.topic, payloads.slice(i))?;
        if i % POLL_EVERY == 0 {
            producer.poll(Duration::ZERO);
        }
        if commit_every.is_some_and(|n| (i + 1) % n == 0 || i + 1 == a.count) {
            // Flushes the transaction's records (serving their delivery reports) first.
            producer.commit_transaction(txn_timeout)?;
        }
    }
    producer.flush(Duration::from_secs(600))?;
    let seconds = started.elapsed().as_secs_f64();
    let after = rusage();
    let ok = ctx.ok.load(Ordering::Relaxed);
    let failed = ctx.failed.load(Ordering::Relaxed);
    if failed > 0 || ok != a.count {
        return Err(format!(
            "rdkafka: {failed} of {} deliveries failed (acknowledged {ok}); first error: {}",
            a.count,
            ctx.first_error
                .lock()
                .ok()
                .and_then(|e| e.clone())
                .unwrap_or_default()
        )
        .into());
    }
    Ok(Measured {
        seconds,
        before,
        after,
    })
}

/// A `transactional.id` unique to this run (transactional mode only).
fn transactional_id(a: &ProduceArgs) -> Option<String> {
    a.mode
        .commit_every()
        .map(|_| format!("bench-{}-{}", a.topic, std::process::id()))
}

/// Enqueues one keyless record, serving delivery reports while the local queue is full.
fn send_rd(producer: &BaseProducer<Deliveries>, topic: &str, value: &[u8]) -> Result<()> {
    let mut record: BaseRecord<'_, (), [u8]> = BaseRecord::to(topic).payload(value);
    loop {
        match producer.send(record) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                record = back;
                producer.poll(Duration::from_millis(1));
            }
            Err((e, _)) => return Err(format!("rdkafka: send failed: {e}").into()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Admin

fn create_topic(bootstrap: &str, topic: &str, partitions: i32) -> Result<()> {
    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    use rdkafka::client::DefaultClientContext;
    let admin: AdminClient<DefaultClientContext> = rd_config(bootstrap).create()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let results = runtime.block_on(admin.create_topics(
        [&NewTopic::new(
            topic,
            partitions,
            TopicReplication::Fixed(1),
        )],
        &AdminOptions::new().operation_timeout(Some(Duration::from_secs(30))),
    ))?;
    for r in results {
        match r {
            Ok(_) => {}
            Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((name, code)) => return Err(format!("create topic {name}: {code}").into()),
        }
    }
    // Wait until the topic's metadata shows every partition with a leader.
    let probe: BaseProducer = rd_config(bootstrap).create()?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let md = probe
            .client()
            .fetch_metadata(Some(topic), Duration::from_secs(5))?;
        let ready = md.topics().iter().any(|t| {
            t.name() == topic
                && t.error().is_none()
                && t.partitions().len() == partitions as usize
                && t.partitions().iter().all(|p| p.leader() >= 0)
        });
        if ready {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("topic {topic} not ready with {partitions} partitions").into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn delete_topic(bootstrap: &str, topic: &str) -> Result<()> {
    use rdkafka::admin::{AdminClient, AdminOptions};
    use rdkafka::client::DefaultClientContext;
    let admin: AdminClient<DefaultClientContext> = rd_config(bootstrap).create()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let results = runtime.block_on(admin.delete_topics(
        &[topic],
        &AdminOptions::new().operation_timeout(Some(Duration::from_secs(30))),
    ))?;
    for r in results {
        match r {
            Ok(_) | Err((_, RDKafkaErrorCode::UnknownTopicOrPartition)) => {}
            Err((name, code)) => return Err(format!("delete topic {name}: {code}").into()),
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(command) = args.first() else { usage() };
    let result = match command.as_str() {
        "produce" => parse_flags(&args[1..])
            .and_then(|f| parse_produce(&f))
            .and_then(|a| {
                if let Some(p) = a.partitions {
                    create_topic(&a.bootstrap, &a.topic, p)?;
                }
                let payloads = Payloads::new(a.size);
                let measured = match a.client {
                    Client::Odradek => produce_odradek(&a, &payloads)?,
                    Client::Rdkafka | Client::RdkafkaTuned => produce_rdkafka(&a, &payloads)?,
                };
                println!("{}", report(&a, &measured));
                Ok(())
            }),
        "create-topic" => parse_flags(&args[1..]).and_then(|f| {
            create_topic(
                required(&f, "bootstrap")?,
                required(&f, "topic")?,
                required(&f, "partitions")?.parse()?,
            )
        }),
        "delete-topic" => parse_flags(&args[1..])
            .and_then(|f| delete_topic(required(&f, "bootstrap")?, required(&f, "topic")?)),
        "decode-bound" => parse_flags(&args[1..]).and_then(|f| decode_bound(&f)),
        "version" => {
            let (n, s) = rdkafka::util::get_rdkafka_version();
            println!("{{\"librdkafka\":\"{s}\",\"librdkafka_hex\":\"0x{n:08x}\",\"rdkafka_crate\":\"0.39\"}}");
            Ok(())
        }
        "-h" | "--help" | "help" => usage(),
        other => Err(format!("unknown command `{other}`").into()),
    };
    if let Err(e) = result {
        eprintln!("odradek-bench: {e}");
        std::process::exit(1);
    }
}
