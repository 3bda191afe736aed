//! `max.connections`, `max.connections.per.ip` and `max.connections.per.ip.overrides`: how many
//! client connections the broker holds at once, in all and from one address.
//!
//! One [`ConnectionLimits`] is shared by every listener, so `max.connections` bounds the broker
//! as in Kafka. A connection beyond a limit is accepted and closed at once (Kafka does this for
//! the per-address limit; for the broker-wide one it stops accepting, which leaves new
//! connections waiting in the kernel's backlog, and we would rather they learn at once).
//! Each admitted connection holds an [`Admission`] that gives its slots back when dropped.

use std::collections::HashMap;
use std::net::{IpAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex, PoisonError};

use crate::config::BrokerConfig;
use crate::{Error, Result};

/// The broker's connection limits and what is in use.
#[derive(Debug)]
pub(crate) struct ConnectionLimits {
    max_total: usize,
    max_per_ip: usize,
    overrides: HashMap<IpAddr, usize>,
    in_use: Mutex<InUse>,
}

#[derive(Debug, Default)]
struct InUse {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
}

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `max.connections` connections are open.
    Broker(usize),
    /// The address has its `max.connections.per.ip` (or override) open.
    Address(usize),
}

/// An admitted connection's slots; given back on drop.
#[derive(Debug)]
pub(crate) struct Admission {
    limits: Arc<ConnectionLimits>,
    ip: IpAddr,
}

impl ConnectionLimits {
    /// The limits `config` sets; host names in the overrides are resolved now (every address
    /// they resolve to gets the override), and one that does not resolve is an error naming it.
    pub(crate) fn from_config(config: &BrokerConfig) -> Result<ConnectionLimits> {
        let mut overrides = HashMap::new();
        for (host, limit) in config.max_connections_per_ip_overrides()? {
            let limit = usize::try_from(limit).unwrap_or(0);
            match host.parse::<IpAddr>() {
                Ok(ip) => {
                    overrides.insert(ip, limit);
                }
                Err(_) => {
                    let addrs = (host.as_str(), 0).to_socket_addrs().map_err(|e| {
                        Error::config(
                            "max.connections.per.ip.overrides",
                            format!("cannot resolve host `{host}`: {e}"),
                        )
                    })?;
                    for addr in addrs {
                        overrides.insert(addr.ip(), limit);
                    }
                }
            }
        }
        Ok(ConnectionLimits {
            max_total: limit_of(config.int("max.connections")),
            max_per_ip: limit_of(config.int("max.connections.per.ip")),
            overrides,
            in_use: Mutex::default(),
        })
    }

    /// Takes a slot for a connection from `ip`, or says which limit it is beyond.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr) -> std::result::Result<Admission, Refusal> {
        let ip = canonical(ip);
        let mut in_use = self.in_use.lock().unwrap_or_else(PoisonError::into_inner);
        let per_ip_limit = self.overrides.get(&ip).copied().unwrap_or(self.max_per_ip);
        let from_ip = in_use.per_ip.get(&ip).copied().unwrap_or(0);
        if from_ip >= per_ip_limit {
            return Err(Refusal::Address(per_ip_limit));
        }
        if in_use.total >= self.max_total {
            return Err(Refusal::Broker(self.max_total));
        }
        in_use.total += 1;
        *in_use.per_ip.entry(ip).or_insert(0) += 1;
        Ok(Admission {
            limits: self.clone(),
            ip,
        })
    }

    /// Connections open now.
    #[cfg(test)]
    pub(crate) fn open(&self) -> usize {
        self.in_use
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .total
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut in_use = self
            .limits
            .in_use
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        in_use.total = in_use.total.saturating_sub(1);
        if let Some(n) = in_use.per_ip.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                in_use.per_ip.remove(&self.ip);
            }
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Broker(n) => write!(f, "max.connections ({n}) reached"),
            Refusal::Address(n) => {
                write!(f, "max.connections.per.ip ({n}) reached for this address")
            }
        }
    }
}

fn limit_of(value: i32) -> usize {
    usize::try_from(value).unwrap_or(0)
}

/// An IPv4 address seen through an IPv6 socket counts as the IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(entries: &[(&str, &str)]) -> Arc<ConnectionLimits> {
        Arc::new(
            ConnectionLimits::from_config(
                &BrokerConfig::from_entries(entries.iter().copied()).unwrap(),
            )
            .unwrap(),
        )
    }

    #[test]
    fn per_address_and_broker_limits_are_kept_and_slots_come_back() {
        let l = limits(&[("max.connections", "3"), ("max.connections.per.ip", "2")]);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let a1 = l.admit(a).unwrap();
        let _a2 = l.admit(a).unwrap();
        assert_eq!(l.admit(a).unwrap_err(), Refusal::Address(2));
        let _b1 = l.admit(b).unwrap();
        assert_eq!(l.admit(b).unwrap_err(), Refusal::Broker(3));
        drop(a1);
        assert_eq!(l.open(), 2);
        assert!(l.admit(b).is_ok());
    }

    #[test]
    fn overrides_name_addresses_and_hosts() {
        let l = limits(&[
            ("max.connections.per.ip", "1"),
            (
                "max.connections.per.ip.overrides",
                "127.0.0.2:3,localhost:0",
            ),
        ]);
        let two: IpAddr = "127.0.0.2".parse().unwrap();
        let _held: Vec<_> = (0..3).map(|_| l.admit(two).unwrap()).collect();
        assert_eq!(l.admit(two).unwrap_err(), Refusal::Address(3));
        // localhost resolves to 127.0.0.1 (and ::1): no connections from it at all.
        assert_eq!(
            l.admit("127.0.0.1".parse().unwrap()).unwrap_err(),
            Refusal::Address(0)
        );
        // A mapped IPv4 address is the IPv4 address.
        let mapped: IpAddr = "::ffff:127.0.0.2".parse().unwrap();
        assert_eq!(l.admit(mapped).unwrap_err(), Refusal::Address(3));
        let other: IpAddr = "10.1.1.1".parse().unwrap();
        assert!(l.admit(other).is_ok());
    }

    #[test]
    fn an_unresolvable_override_host_is_an_error_naming_the_key() {
        let config = BrokerConfig::from_entries([(
            "max.connections.per.ip.overrides",
            "no-such-host.invalid:5",
        )])
        .unwrap();
        let err = ConnectionLimits::from_config(&config).unwrap_err();
        assert!(
            err.to_string().contains("max.connections.per.ip.overrides"),
            "{err}"
        );
    }
}
