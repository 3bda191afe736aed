//! Listener names to security protocols: `listeners`, `listener.security.protocol.map`,
//! `advertised.listeners`, `inter.broker.listener.name` / `security.inter.broker.protocol`, as
//! Kafka resolves them. A listener whose name has no protocol fails at startup; so does a name
//! listed twice, an advertised listener that is not a listener, or one that advertises
//! `0.0.0.0`.

use std::collections::BTreeMap;

use super::principal::SecurityProtocol;
use crate::config::{BrokerConfig, Listener};
use crate::{Error, Result};

/// One configured listener with its security protocol and where clients are told to connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerSpec {
    /// The listener's name (as written in `listeners`, e.g. `SASL_SSL` or `EXTERNAL`).
    pub name: String,
    /// Host to bind (empty = all interfaces).
    pub host: String,
    /// Port to bind (0 = any free port).
    pub port: u16,
    /// Its security protocol.
    pub protocol: SecurityProtocol,
    /// The advertised host, if `advertised.listeners` names this listener with a host.
    pub advertised_host: Option<String>,
    /// The advertised port (0 = the bound port).
    pub advertised_port: u16,
}

/// Parses `listener.security.protocol.map` (`NAME:PROTOCOL,...`).
pub fn protocol_map(config: &BrokerConfig) -> Result<BTreeMap<String, SecurityProtocol>> {
    const KEY: &str = "listener.security.protocol.map";
    let mut map = BTreeMap::new();
    for item in config
        .get(KEY)
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let (name, proto) = item
            .split_once(':')
            .ok_or_else(|| Error::config(KEY, format!("`{item}` is not NAME:PROTOCOL")))?;
        let protocol = SecurityProtocol::from_name(proto).ok_or_else(|| {
            Error::config(
                KEY,
                format!(
                    "`{proto}` (listener {name}) is not a security protocol \
                     (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)"
                ),
            )
        })?;
        if map
            .insert(name.trim().to_ascii_uppercase(), protocol)
            .is_some()
        {
            return Err(Error::config(
                KEY,
                format!("listener {name} is mapped twice"),
            ));
        }
    }
    Ok(map)
}

/// Resolves every listener of `listeners` to its protocol and advertised address.
pub fn resolve(config: &BrokerConfig) -> Result<Vec<ListenerSpec>> {
    let map = protocol_map(config)?;
    let controllers: Vec<String> = config
        .get("controller.listener.names")
        .split(',')
        .map(|s| s.trim().to_ascii_uppercase())
        .filter(|s| !s.is_empty())
        .collect();
    let protocol_of = |l: &Listener| -> Result<SecurityProtocol> {
        let upper = l.name.to_ascii_uppercase();
        match map.get(&upper) {
            Some(p) => Ok(*p),
            // KRaft: an unmapped controller listener is PLAINTEXT.
            None if controllers.contains(&upper) => Ok(SecurityProtocol::Plaintext),
            None => Err(Error::config(
                "listener.security.protocol.map",
                format!(
                    "no security protocol defined for listener {} (add {}:<PLAINTEXT|SSL|SASL_PLAINTEXT|SASL_SSL>)",
                    l.name, l.name
                ),
            )),
        }
    };
    let listeners = config.listeners()?;
    let advertised = if config.get("advertised.listeners").trim().is_empty() {
        Vec::new()
    } else {
        config.advertised_listeners()?
    };
    let mut out: Vec<ListenerSpec> = Vec::with_capacity(listeners.len());
    for l in &listeners {
        if out.iter().any(|o| o.name.eq_ignore_ascii_case(&l.name)) {
            return Err(Error::config(
                "listeners",
                format!("listener {} is listed twice", l.name),
            ));
        }
        let protocol = protocol_of(l)?;
        let adv = advertised
            .iter()
            .find(|a| a.name.eq_ignore_ascii_case(&l.name));
        if let Some(a) = adv {
            if a.host == "0.0.0.0" || a.host == "::" {
                return Err(Error::config(
                    "advertised.listeners",
                    format!(
                        "listener {} advertises {}: clients cannot connect to a wildcard address",
                        a.name, a.host
                    ),
                ));
            }
        }
        out.push(ListenerSpec {
            name: l.name.clone(),
            host: l.host.clone(),
            port: l.port,
            protocol,
            advertised_host: adv.map(|a| a.host.clone()).filter(|h| !h.is_empty()),
            advertised_port: adv.map_or(0, |a| a.port),
        });
    }
    for a in &advertised {
        if !out.iter().any(|o| o.name.eq_ignore_ascii_case(&a.name)) {
            return Err(Error::config(
                "advertised.listeners",
                format!("{} is not one of the listeners", a.name),
            ));
        }
    }
    let inter = config.get("inter.broker.listener.name").trim();
    if !inter.is_empty() {
        if !out.iter().any(|o| o.name.eq_ignore_ascii_case(inter)) {
            return Err(Error::config(
                "inter.broker.listener.name",
                format!("{inter} is not one of the listeners"),
            ));
        }
        if config.is_set("security.inter.broker.protocol") {
            return Err(Error::config(
                "inter.broker.listener.name",
                "only one of inter.broker.listener.name and security.inter.broker.protocol may be set",
            ));
        }
    }
    let ibp = config.get("security.inter.broker.protocol");
    if SecurityProtocol::from_name(ibp).is_none() {
        return Err(Error::config(
            "security.inter.broker.protocol",
            format!("`{ibp}` is not a security protocol"),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(entries: &[(&str, &str)]) -> Result<BrokerConfig> {
        BrokerConfig::from_entries(entries.iter().copied())
    }

    #[test]
    fn names_map_to_protocols() {
        let c = cfg(&[
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0,SSL://:0",
            ),
            (
                "listener.security.protocol.map",
                "PLAINTEXT:PLAINTEXT,EXTERNAL:SASL_SSL,SSL:SSL",
            ),
        ])
        .unwrap();
        let specs = resolve(&c).unwrap();
        assert_eq!(specs[0].protocol, SecurityProtocol::Plaintext);
        assert_eq!(specs[1].protocol, SecurityProtocol::SaslSsl);
        assert_eq!(specs[2].protocol, SecurityProtocol::Ssl);
    }

    #[test]
    fn an_unmapped_listener_fails() {
        let c = cfg(&[("listeners", "PLAINTEXT://127.0.0.1:0,SECURE://127.0.0.1:0")]).unwrap();
        let e = resolve(&c).unwrap_err().to_string();
        assert!(
            e.contains("no security protocol defined for listener SECURE"),
            "{e}"
        );
        let c = cfg(&[("listener.security.protocol.map", "A:TLS")]).unwrap();
        assert!(resolve(&c).unwrap_err().to_string().contains("TLS"));
    }

    #[test]
    fn wildcard_is_never_advertised_and_inter_broker_listener_must_exist() {
        let c = cfg(&[
            ("listeners", "PLAINTEXT://0.0.0.0:0"),
            ("advertised.listeners", "PLAINTEXT://0.0.0.0:9092"),
        ])
        .unwrap();
        assert!(resolve(&c).unwrap_err().to_string().contains("wildcard"));
        let c = cfg(&[("inter.broker.listener.name", "NOPE")]).unwrap();
        assert!(resolve(&c).unwrap_err().to_string().contains("NOPE"));
        let c = cfg(&[
            ("listeners", "PLAINTEXT://127.0.0.1:0"),
            ("advertised.listeners", "OTHER://h:1"),
        ])
        .unwrap();
        assert!(resolve(&c).is_err());
    }
}
