//! The client side of the connections between nodes, as Kafka's nodes make them: followers and
//! broker-to-broker calls connect to the `inter.broker.listener.name` listener, quorum and
//! broker-to-controller calls to the first of `controller.listener.names`, each with that
//! listener's security protocol (`listener.security.protocol.map`), its TLS material (the
//! listener's trust store verifies the peer, its key store is the certificate this node shows
//! when the peer asks for one), and for SASL the mechanism `sasl.mechanism.inter.broker.protocol`
//! / `sasl.mechanism.controller.protocol` with the `username` and `password` of the listener's
//! JAAS configuration for that mechanism (the same entry whose `user_*` options, for PLAIN, the
//! listener checks clients against).

use odradek::security::SecurityConfig;

use super::listeners::protocol_map;
use super::{jaas, SecurityProtocol};
use crate::config::BrokerConfig;
use crate::{Error, Result};

/// TLS keys of a listener that also shape this node's own connections to it, in the names the
/// client's [`SecurityConfig`] takes (Kafka's, PEM stores only).
const TLS_KEYS: &[&str] = &[
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.certificates",
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
    "ssl.enabled.protocols",
    "ssl.cipher.suites",
];

/// The security protocol of `listener`.
pub fn listener_protocol(config: &BrokerConfig, listener: &str) -> Result<SecurityProtocol> {
    protocol_map(config)?
        .get(&listener.to_ascii_uppercase())
        .copied()
        .or_else(|| SecurityProtocol::from_name(listener))
        .ok_or_else(|| {
            Error::config(
                "listener.security.protocol.map",
                format!("listener {listener} has no security protocol"),
            )
        })
}

/// The settings of this node's connections to `listener` on other nodes; `mechanism_key` names
/// the SASL mechanism to use there. Errors name the key to fix and never show a value.
pub fn client_security(
    config: &BrokerConfig,
    listener: &str,
    mechanism_key: &str,
) -> Result<SecurityConfig> {
    let protocol = listener_protocol(config, listener)?;
    let mut security = SecurityConfig::default();
    let mut set = |key: &str, value: &str, shown_key: &str| {
        security
            .set(key, value)
            .map_err(|e| Error::config(shown_key.to_string(), e.to_string()))
    };
    set(
        "security.protocol",
        protocol.name(),
        "listener.security.protocol.map",
    )?;
    if protocol.uses_tls() {
        for key in TLS_KEYS {
            if config.listener_is_set(listener, None, key) {
                let shown = format!("listener.name.{}.{key}", listener.to_ascii_lowercase());
                set(key, config.listener_get(listener, None, key), &shown)?;
            }
        }
    }
    if protocol.uses_sasl() {
        let mechanism = config.get(mechanism_key).trim().to_ascii_uppercase();
        if !matches!(
            mechanism.as_str(),
            "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512"
        ) {
            return Err(Error::config(
                mechanism_key,
                format!(
                    "listener {listener} uses SASL: set {mechanism_key} to PLAIN, SCRAM-SHA-256 \
                     or SCRAM-SHA-512 (this node logs in with the username and password of the \
                     listener's JAAS configuration; `{mechanism}` is not offered between nodes)"
                ),
            ));
        }
        let key = format!(
            "listener.name.{}.{}.sasl.jaas.config",
            listener.to_ascii_lowercase(),
            mechanism.to_ascii_lowercase()
        );
        let text = config.listener_get(listener, Some(&mechanism), "sasl.jaas.config");
        let parsed = jaas::parse(text).map_err(|e| Error::config(key.clone(), e))?;
        let (Some(username), Some(password)) =
            (parsed.option("username"), parsed.option("password"))
        else {
            return Err(Error::config(
                key,
                format!(
                    "needs `username` and `password` options: the login this node uses on \
                     listener {listener} of the other nodes"
                ),
            ));
        };
        set("sasl.mechanism", &mechanism, mechanism_key)?;
        set("sasl.username", username, &key)?;
        set("sasl.password", password, &key)?;
    }
    security
        .prepare()
        .map_err(|e| Error::config(format!("listener {listener}"), e.to_string()))?;
    Ok(security)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(entries: &[(&str, &str)]) -> BrokerConfig {
        let mut all = vec![
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
            ),
            (
                "listener.security.protocol.map",
                "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
            ),
        ];
        all.extend_from_slice(entries);
        BrokerConfig::from_entries(all).unwrap()
    }

    const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                        username=\"admin\" password=\"s3cret-pw\" user_admin=\"s3cret-pw\";";

    #[test]
    fn sasl_logs_in_with_the_listeners_jaas_username_and_password() {
        let c = cfg(&[
            ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
            ("listener.name.internal.plain.sasl.jaas.config", JAAS),
        ]);
        let s = client_security(&c, "INTERNAL", "sasl.mechanism.inter.broker.protocol").unwrap();
        assert_eq!(s.sasl.username.as_deref(), Some("admin"));
        assert!(s.protocol.sasl() && !s.protocol.tls());
        assert!(
            !format!("{s:?}").contains("s3cret-pw"),
            "no secret in Debug"
        );
        let plain =
            client_security(&c, "PLAINTEXT", "sasl.mechanism.inter.broker.protocol").unwrap();
        assert!(!plain.protocol.sasl());
    }

    #[test]
    fn refusals_name_the_key_and_hide_the_values() {
        // Kafka's default mechanism is GSSAPI.
        let e = client_security(
            &cfg(&[("listener.name.internal.plain.sasl.jaas.config", JAAS)]),
            "INTERNAL",
            "sasl.mechanism.controller.protocol",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("sasl.mechanism.controller.protocol"), "{e}");
        let e = client_security(
            &cfg(&[
                ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
                (
                    "listener.name.internal.plain.sasl.jaas.config",
                    "org.apache.kafka.common.security.plain.PlainLoginModule required \
                     user_admin=\"s3cret-pw\";",
                ),
            ]),
            "INTERNAL",
            "sasl.mechanism.inter.broker.protocol",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("listener.name.internal.plain.sasl.jaas.config"),
            "{e}"
        );
        assert!(!e.contains("s3cret-pw"), "{e}");
        let e = client_security(
            &cfg(&[
                ("sasl.mechanism.inter.broker.protocol", "OAUTHBEARER"),
                ("listener.name.internal.plain.sasl.jaas.config", JAAS),
            ]),
            "INTERNAL",
            "sasl.mechanism.inter.broker.protocol",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("not offered between nodes"), "{e}");
    }
}
