//! Enforcement: which quota applies to a (user, client id) with Kafka's precedence, one sensor
//! per matched entity (clients that share an entity share its rate, as in Kafka), the throttle
//! time of each recording, and per-entity throttling metrics.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

use super::entity::{self, Entity, Name};
use super::rate::{SampledRate, TokenBucket, WindowConfig};
use super::store::{QuotaMap, QuotaStore};

/// A quota type (Kafka's `QuotaType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuotaKind {
    /// `producer_byte_rate`: Produce request bytes.
    Produce,
    /// `consumer_byte_rate`: Fetch response bytes.
    Fetch,
    /// `request_percentage`: time spent handling requests.
    Request,
    /// `controller_mutation_rate`: partitions created or deleted.
    ControllerMutation,
}

impl QuotaKind {
    /// The quota key configuring it.
    pub fn key(self) -> &'static str {
        match self {
            QuotaKind::Produce => entity::PRODUCER_BYTE_RATE,
            QuotaKind::Fetch => entity::CONSUMER_BYTE_RATE,
            QuotaKind::Request => entity::REQUEST_PERCENTAGE,
            QuotaKind::ControllerMutation => entity::CONTROLLER_MUTATION_RATE,
        }
    }

    /// Kafka's metric group name for it.
    pub fn name(self) -> &'static str {
        match self {
            QuotaKind::Produce => "Produce",
            QuotaKind::Fetch => "Fetch",
            QuotaKind::Request => "Request",
            QuotaKind::ControllerMutation => "ControllerMutation",
        }
    }
}

/// The sensor a client records into: the user and client-id tags of the entity that matched
/// (`""` where the entity does not distinguish).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SensorKey {
    kind: QuotaKind,
    user: String,
    client_id: String,
}

#[derive(Debug, Default)]
struct Sensor {
    rate: SampledRate,
    bucket: TokenBucket,
    throttled: u64,
    throttle_ms_total: u64,
    throttle_ms_max: u64,
    last_used_ms: i64,
}

/// Throttling metrics of one sensor (Kafka's per user / client-id `throttle-time` and rate).
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaMetrics {
    /// The quota type.
    pub kind: QuotaKind,
    /// The user tag (`""`: the quota is not per user).
    pub user: String,
    /// The client-id tag (`""`: the quota is not per client id).
    pub client_id: String,
    /// The configured limit.
    pub limit: f64,
    /// The measured rate now (tokens left, for the controller mutation quota).
    pub rate: f64,
    /// Responses throttled.
    pub throttled: u64,
    /// Sum of the throttle times, milliseconds.
    pub throttle_ms_total: u64,
    /// Longest throttle time, milliseconds.
    pub throttle_ms_max: u64,
}

/// Sensors unused this long are dropped (Kafka's `InactiveSensorExpirationTimeSeconds`).
const SENSOR_EXPIRY_MS: i64 = 3_600_000;

/// The broker's client quotas: the configured values and the sensors enforcing them.
#[derive(Debug)]
pub struct Quotas {
    /// The configured quotas (AlterClientQuotas / DescribeClientQuotas).
    pub store: QuotaStore,
    window: WindowConfig,
    controller_window: WindowConfig,
    sensors: Mutex<HashMap<SensorKey, Sensor>>,
    ips: Mutex<HashMap<IpAddr, (SampledRate, i64)>>,
    last_purge_ms: Mutex<i64>,
}

/// The entity whose `key` quota applies to (`user`, `client_id`) and its value, with the
/// sensor tags Kafka's default callback uses (`ClientQuotaManager.DefaultQuotaCallback`).
fn resolve(
    quotas: &QuotaMap,
    key: &str,
    user: &str,
    client_id: &str,
) -> Option<(String, String, f64)> {
    let named = |s: &str| Some(Name::Named(s.to_string()));
    let get = |u: Option<Name>, c: Option<Name>| {
        quotas
            .get(&Entity::user_client(u, c))
            .and_then(|v| v.get(key))
            .copied()
    };
    let both = || (user.to_string(), client_id.to_string());
    let user_only = || (user.to_string(), String::new());
    let candidates: [(Option<Name>, Option<Name>, bool); 8] = [
        (named(user), named(client_id), true),
        (named(user), Some(Name::Default), true),
        (named(user), None, false),
        (Some(Name::Default), named(client_id), true),
        (Some(Name::Default), Some(Name::Default), true),
        (Some(Name::Default), None, false),
        (None, named(client_id), false),
        (None, Some(Name::Default), false),
    ];
    for (i, (u, c, with_client)) in candidates.into_iter().enumerate() {
        if let Some(v) = get(u, c) {
            let (ut, ct) = match (i, with_client) {
                (0..=5, true) => both(),
                (0..=5, false) => user_only(),
                _ => (String::new(), client_id.to_string()),
            };
            return Some((ut, ct, v));
        }
    }
    None
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Quotas {
    /// Quotas over `store`, sampled per `window` (`quota.window.*`) and, for the controller
    /// mutation quota, `controller_window` (`controller.quota.window.*`).
    pub fn new(store: QuotaStore, window: WindowConfig, controller_window: WindowConfig) -> Quotas {
        Quotas {
            store,
            window,
            controller_window,
            sensors: Mutex::new(HashMap::new()),
            ips: Mutex::new(HashMap::new()),
            last_purge_ms: Mutex::new(0),
        }
    }

    fn window_of(&self, kind: QuotaKind) -> WindowConfig {
        match kind {
            QuotaKind::ControllerMutation => self.controller_window,
            _ => self.window,
        }
    }

    /// Whether any entity has a `kind` quota (nothing is measured otherwise).
    pub fn enabled(&self, kind: QuotaKind) -> bool {
        let key = kind.key();
        self.store.snapshot().values().any(|v| v.contains_key(key))
    }

    fn with_sensor<R>(
        &self,
        kind: QuotaKind,
        user: &str,
        client_id: &str,
        now: i64,
        f: impl FnOnce(&mut Sensor, f64, WindowConfig) -> R,
    ) -> Option<R> {
        let quotas = self.store.snapshot();
        let (u, c, limit) = resolve(&quotas, kind.key(), user, client_id)?;
        self.maybe_purge(now);
        let key = SensorKey {
            kind,
            user: u,
            client_id: c,
        };
        let mut sensors = lock(&self.sensors);
        let sensor = sensors.entry(key).or_default();
        sensor.last_used_ms = now;
        Some(f(sensor, limit, self.window_of(kind)))
    }

    fn maybe_purge(&self, now: i64) {
        let mut last = lock(&self.last_purge_ms);
        if now - *last < 30_000 {
            return;
        }
        *last = now;
        drop(last);
        lock(&self.sensors).retain(|_, s| now - s.last_used_ms < SENSOR_EXPIRY_MS);
        lock(&self.ips).retain(|_, (_, used)| now - *used < SENSOR_EXPIRY_MS);
    }

    /// Records `value` for the client and returns how long it must be throttled (ms), 0 when
    /// it is within its quota or has none. The request quota's throttle is capped at one
    /// window, as Kafka caps it; the byte rates' are not.
    pub fn record(
        &self,
        kind: QuotaKind,
        user: &str,
        client_id: &str,
        value: f64,
        now: i64,
    ) -> i64 {
        self.with_sensor(kind, user, client_id, now, |s, limit, w| {
            s.rate.record(w, value, now);
            let t = s.rate.throttle_ms(w, limit, now);
            if kind == QuotaKind::Request {
                t.min(w.window_ms)
            } else {
                t
            }
        })
        .unwrap_or(0)
    }

    /// How long the client would be throttled now, recording nothing.
    pub fn throttle_now(&self, kind: QuotaKind, user: &str, client_id: &str, now: i64) -> i64 {
        self.with_sensor(kind, user, client_id, now, |s, limit, w| match kind {
            QuotaKind::ControllerMutation => s.bucket.throttle_ms(w, limit, now),
            _ => s.rate.throttle_ms(w, limit, now),
        })
        .unwrap_or(0)
    }

    /// The most a single Fetch may return without being sure to be throttled (Kafka's
    /// `getMaxValueInQuotaWindow`: the limit × (samples - 1) windows), if a quota applies.
    pub fn max_value_in_window(&self, kind: QuotaKind, user: &str, client_id: &str) -> Option<f64> {
        let quotas = self.store.snapshot();
        let (_, _, limit) = resolve(&quotas, kind.key(), user, client_id)?;
        let w = self.window_of(kind);
        Some(limit * (w.samples.saturating_sub(1)) as f64 * (w.window_ms as f64 / 1000.0))
    }

    /// The controller mutation quota, strict mode (CreateTopics v6+, DeleteTopics v5+,
    /// CreatePartitions v3+): refused with the throttle time if the bucket is already
    /// negative, else the mutations are taken (the bucket may go negative).
    pub fn take_mutations_strict(
        &self,
        user: &str,
        client_id: &str,
        partitions: f64,
        now: i64,
    ) -> Result<(), i64> {
        self.with_sensor(
            QuotaKind::ControllerMutation,
            user,
            client_id,
            now,
            |s, limit, w| {
                let t = s.bucket.throttle_ms(w, limit, now);
                if t > 0 {
                    return Err(t);
                }
                s.rate.record(w, partitions, now);
                s.bucket.record(w, limit, partitions, now);
                Ok(())
            },
        )
        .unwrap_or(Ok(()))
    }

    /// The controller mutation quota, permissive mode (older versions): the mutations are
    /// taken and the throttle time they cause returned.
    pub fn take_mutations_permissive(
        &self,
        user: &str,
        client_id: &str,
        partitions: f64,
        now: i64,
    ) -> i64 {
        self.with_sensor(
            QuotaKind::ControllerMutation,
            user,
            client_id,
            now,
            |s, limit, w| {
                s.rate.record(w, partitions, now);
                s.bucket.record(w, limit, partitions, now);
                s.bucket.throttle_ms(w, limit, now)
            },
        )
        .unwrap_or(0)
    }

    /// Counts a throttled response in the client's sensor metrics.
    pub fn note_throttle(&self, kind: QuotaKind, user: &str, client_id: &str, ms: i64, now: i64) {
        if ms <= 0 {
            return;
        }
        let ms = ms as u64;
        self.with_sensor(kind, user, client_id, now, |s, _, _| {
            s.throttled += 1;
            s.throttle_ms_total += ms;
            s.throttle_ms_max = s.throttle_ms_max.max(ms);
        });
    }

    /// A new connection from `ip`: `Err(ms)` when `connection_creation_rate` for the IP (or the
    /// default IP quota) is exceeded, and the connection should be closed after `ms`, as Kafka
    /// closes it. A refused connection is not counted.
    pub fn admit_connection(&self, ip: IpAddr, now: i64) -> Result<(), i64> {
        let quotas = self.store.snapshot();
        let key = entity::CONNECTION_CREATION_RATE;
        let get = |name: Name| {
            quotas
                .get(&Entity {
                    ip: Some(name),
                    ..Entity::default()
                })
                .and_then(|v| v.get(key))
                .copied()
        };
        let Some(limit) = get(Name::Named(ip.to_string())).or_else(|| get(Name::Default)) else {
            return Ok(());
        };
        self.maybe_purge(now);
        let mut ips = lock(&self.ips);
        let (rate, used) = ips.entry(ip).or_default();
        *used = now;
        rate.record(self.window, 1.0, now);
        let t = rate.throttle_ms(self.window, limit, now);
        if t > 0 {
            rate.record(self.window, -1.0, now);
            return Err(t);
        }
        Ok(())
    }

    /// The metrics of every live sensor, sorted by type, user and client id.
    pub fn metrics(&self, now: i64) -> Vec<QuotaMetrics> {
        let quotas = self.store.snapshot();
        let mut sensors = lock(&self.sensors);
        let mut out: Vec<QuotaMetrics> = sensors
            .iter_mut()
            .map(|(k, s)| {
                let w = self.window_of(k.kind);
                let limit = resolve(&quotas, k.kind.key(), &k.user, &k.client_id)
                    .map_or(f64::INFINITY, |r| r.2);
                let rate = if k.kind == QuotaKind::ControllerMutation && limit.is_finite() {
                    s.bucket.tokens(w, limit, now)
                } else {
                    s.rate.measure(w, now)
                };
                QuotaMetrics {
                    kind: k.kind,
                    user: k.user.clone(),
                    client_id: k.client_id.clone(),
                    limit,
                    rate,
                    throttled: s.throttled,
                    throttle_ms_total: s.throttle_ms_total,
                    throttle_ms_max: s.throttle_ms_max,
                }
            })
            .collect();
        out.sort_by(|a, b| (a.kind, &a.user, &a.client_id).cmp(&(b.kind, &b.user, &b.client_id)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::store::Alteration;

    /// (entity components, producer_byte_rate).
    type Row<'a> = (&'a [(&'a str, Option<&'a str>)], f64);

    fn quotas(entries: &[Row<'_>]) -> Quotas {
        let store = QuotaStore::open(None).unwrap();
        let alterations: Vec<Alteration> = entries
            .iter()
            .map(|(c, v)| Alteration {
                components: c
                    .iter()
                    .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
                    .collect(),
                ops: vec![("producer_byte_rate".into(), Some(*v))],
            })
            .collect();
        for r in store.alter(&alterations, false).unwrap() {
            r.unwrap();
        }
        Quotas::new(store, WindowConfig::DEFAULT, WindowConfig::DEFAULT)
    }

    const U: &str = entity::USER;
    const C: &str = entity::CLIENT_ID;

    #[test]
    fn precedence_is_kafkas() {
        let all: Vec<Row<'_>> = vec![
            (&[(U, Some("u")), (C, Some("c"))], 1.0),
            (&[(U, Some("u")), (C, None)], 2.0),
            (&[(U, Some("u"))], 3.0),
            (&[(U, None), (C, Some("c"))], 4.0),
            (&[(U, None), (C, None)], 5.0),
            (&[(U, None)], 6.0),
            (&[(C, Some("c"))], 7.0),
            (&[(C, None)], 8.0),
        ];
        // Dropping the most specific entry each time exposes the next one.
        for skip in 0..all.len() {
            let q = quotas(&all[skip..]);
            let snapshot = q.store.snapshot();
            let (_, _, v) = resolve(&snapshot, "producer_byte_rate", "u", "c").unwrap();
            assert_eq!(
                v,
                (skip + 1) as f64,
                "with the first {skip} entries removed"
            );
        }
        // Sensor tags: a user-level quota is shared by every client id of the user.
        let q = quotas(&[(&[(U, Some("u"))], 3.0)]);
        let snapshot = q.store.snapshot();
        assert_eq!(
            resolve(&snapshot, "producer_byte_rate", "u", "c1")
                .unwrap()
                .1,
            ""
        );
        let q = quotas(&[(&[(C, None)], 8.0)]);
        let snapshot = q.store.snapshot();
        let (u, c, _) = resolve(&snapshot, "producer_byte_rate", "u", "c1").unwrap();
        assert_eq!((u.as_str(), c.as_str()), ("", "c1"));
        assert!(resolve(&snapshot, "consumer_byte_rate", "u", "c1").is_none());
    }

    #[test]
    fn recording_over_the_limit_throttles_and_is_counted() {
        let q = quotas(&[(&[(C, Some("c"))], 1000.0)]);
        assert!(q.enabled(QuotaKind::Produce));
        assert!(!q.enabled(QuotaKind::Fetch));
        assert_eq!(q.record(QuotaKind::Produce, "u", "c", 5_000.0, 0), 0);
        let t = q.record(QuotaKind::Produce, "u", "c", 10_000.0, 0);
        assert_eq!(t, 5_000);
        // Another client id has no quota.
        assert_eq!(q.record(QuotaKind::Produce, "u", "other", 1e9, 0), 0);
        q.note_throttle(QuotaKind::Produce, "u", "c", t, 0);
        let m = q.metrics(0);
        assert_eq!(m.len(), 1);
        assert_eq!((m[0].throttled, m[0].throttle_ms_max), (1, 5_000));
        assert_eq!(
            q.max_value_in_window(QuotaKind::Produce, "u", "c"),
            Some(10_000.0)
        );
    }
}
