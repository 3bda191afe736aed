//! The store: a compacted, single-partition Kafka topic (`_schemas` by default) holding
//! Confluent's key/value records. A consumer replays it from the start when the registry
//! starts and then tails it, applying every record to the shared [`State`]; a write produces
//! its records and returns only once the consumer has read the last of them back, so what a
//! caller is told (an id, a version) is what every later read, and every restart, sees.

use std::sync::{Arc, RwLock, RwLockReadGuard};
use std::time::Duration;

use odradek::admin::NewTopic;
use odradek::producer::TopicPartition;
use odradek::{Admin, Consumer, ErrorCode, Producer, ProducerRecord};
use tokio::sync::{watch, Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::state::State;

/// How the store reaches Kafka.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// `bootstrap.servers`.
    pub bootstrap: String,
    /// The topic (`kafkastore.topic`, default `_schemas`).
    pub topic: String,
    /// Extra client properties (security settings, timeouts), Kafka names.
    pub client: Vec<(String, String)>,
    /// How long a write may wait for its record to be read back (`kafkastore.timeout.ms`).
    pub timeout: Duration,
    /// Replication factor of the topic when we create it (`kafkastore.topic.replication.factor`;
    /// `None`: the broker's default).
    pub replication_factor: Option<i16>,
}

impl StoreConfig {
    /// Defaults for a bootstrap list.
    pub fn new(bootstrap: impl Into<String>) -> StoreConfig {
        StoreConfig {
            bootstrap: bootstrap.into(),
            topic: "_schemas".into(),
            client: Vec::new(),
            timeout: Duration::from_secs(10),
            replication_factor: None,
        }
    }
}

/// The Kafka-backed store.
#[derive(Debug)]
pub struct Store {
    producer: Producer,
    state: Arc<RwLock<State>>,
    /// The next offset the reader will apply.
    applied: watch::Receiver<i64>,
    writer: Mutex<()>,
    topic: String,
    timeout: Duration,
    reader: tokio::task::JoinHandle<()>,
}

fn store_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Store(format!("{what}: {e}"))
}

impl Store {
    /// Creates the topic if missing, replays it to its end, and starts tailing it.
    pub async fn open(config: StoreConfig) -> Result<Store> {
        let mut props: Vec<(String, String)> =
            vec![("bootstrap.servers".into(), config.bootstrap.clone())];
        props.extend(config.client.iter().cloned());
        ensure_topic(&props, &config).await?;

        let mut pprops = props.clone();
        pprops.push(("acks".into(), "all".into()));
        pprops.push(("linger.ms".into(), "0".into()));
        let producer = Producer::from_map(pprops).map_err(|e| store_err("producer", e))?;

        let mut cprops = props.clone();
        cprops.push(("auto.offset.reset".into(), "earliest".into()));
        cprops.push(("enable.auto.commit".into(), "false".into()));
        cprops.push(("fetch.max.wait.ms".into(), "100".into()));
        let consumer = Consumer::from_map(cprops).map_err(|e| store_err("consumer", e))?;
        let tp = TopicPartition {
            topic: config.topic.as_str().into(),
            partition: 0,
        };
        consumer.assign(std::slice::from_ref(&tp));
        consumer
            .seek_to_beginning(std::slice::from_ref(&tp))
            .map_err(|e| store_err("seek", e))?;
        let (_, end) = tokio::time::timeout(config.timeout, consumer.fetch_watermarks(&tp))
            .await
            .map_err(|_| Error::Timeout)?
            .map_err(|e| store_err("end offset of the store topic", e))?;

        let state = Arc::new(RwLock::new(State::default()));
        let (tx, applied) = watch::channel(0i64);
        let reader = tokio::spawn(read_loop(consumer, state.clone(), tx));
        let store = Store {
            producer,
            state,
            applied,
            writer: Mutex::new(()),
            topic: config.topic,
            timeout: config.timeout,
            reader,
        };
        // Replay: serve nothing until every record written before we started is applied; then a
        // NOOP marks the end of the topic as we see it (the high watermark may sit past the
        // last record a compacted topic still holds).
        store
            .wait_applied(end, Duration::from_secs(60).max(config.timeout))
            .await
            .ok();
        let noop = crate::records::to_bytes(&crate::records::Key::Noop { magic: 0 });
        store.write(vec![(noop, None)]).await?;
        Ok(store)
    }

    /// The current state, for reading.
    pub fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Serializes writers: the holder decides ids and versions from a state no other write of
    /// this process can change under it.
    pub async fn lock(&self) -> MutexGuard<'_, ()> {
        self.writer.lock().await
    }

    /// Produces `records` (key, value or tombstone) in order and waits until the last one has
    /// been read back and applied.
    pub async fn write(&self, records: Vec<(Vec<u8>, Option<Vec<u8>>)>) -> Result<()> {
        let mut last = -1;
        let mut pending = Vec::with_capacity(records.len());
        for (k, v) in records {
            let rec = ProducerRecord {
                topic: self.topic.clone(),
                partition: Some(0),
                key: Some(k.into()),
                value: v.map(Into::into),
                ..Default::default()
            };
            let fut = tokio::time::timeout(self.timeout, self.producer.send(rec))
                .await
                .map_err(|_| Error::Timeout)?
                .map_err(|e| store_err("produce", e))?;
            pending.push(fut);
        }
        for fut in pending {
            let md = tokio::time::timeout(self.timeout, fut)
                .await
                .map_err(|_| Error::Timeout)?
                .map_err(|e| store_err("produce", e))?;
            last = last.max(md.offset);
        }
        self.wait_applied(last + 1, self.timeout).await
    }

    async fn wait_applied(&self, next: i64, timeout: Duration) -> Result<()> {
        let mut rx = self.applied.clone();
        let waited = tokio::time::timeout(timeout, rx.wait_for(|&applied| applied >= next)).await;
        match waited {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) => Err(Error::Store("the store reader stopped".into())),
            Err(_) => Err(Error::Timeout),
        }
    }

    /// Stops the reader and closes the clients.
    pub async fn close(&self) {
        self.reader.abort();
        self.producer.close().await;
    }
}

async fn ensure_topic(props: &[(String, String)], config: &StoreConfig) -> Result<()> {
    let admin = Admin::from_map(props.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(|e| store_err("admin", e))?;
    let mut topic = NewTopic::new(config.topic.clone())
        .partitions(1)
        .config("cleanup.policy", "compact");
    if let Some(rf) = config.replication_factor {
        topic = topic.replication_factor(rf);
    }
    let created = tokio::time::timeout(config.timeout, admin.create_topics(&[topic], false)).await;
    admin.close();
    let results = created
        .map_err(|_| Error::Timeout)?
        .map_err(|e| store_err("create the store topic", e))?;
    for (name, r) in results {
        match r {
            Ok(_) => tracing::info!(topic = %name, "created the schema store topic"),
            Err(e) if e.kafka_code() == ErrorCode::TopicAlreadyExists => {}
            Err(e) => return Err(store_err(&format!("create topic {name}"), e)),
        }
    }
    Ok(())
}

async fn read_loop(consumer: Consumer, state: Arc<RwLock<State>>, applied: watch::Sender<i64>) {
    let mut backoff = Duration::from_millis(50);
    loop {
        match consumer.poll(Duration::from_millis(500)).await {
            Ok(records) => {
                backoff = Duration::from_millis(50);
                let Some(last) = records.last().map(|r| r.offset) else {
                    continue;
                };
                {
                    let mut st = state.write().unwrap_or_else(|e| e.into_inner());
                    for r in &records {
                        match &r.key {
                            Some(k) => st.apply(k, r.value.as_deref()),
                            None => st.skipped += 1,
                        }
                    }
                }
                applied.send_replace(last + 1);
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading the schema store topic failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(2));
            }
        }
    }
}
