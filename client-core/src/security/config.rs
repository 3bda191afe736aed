//! Security settings from librdkafka's and the Java client's property names:
//! `security.protocol`, `ssl.*`, `sasl.*`, `https.*`.
//!
//! Parsing only checks each value; [`SecurityConfig::prepare`] (run when the client's
//! configuration is validated) reads the certificate and key files, builds the TLS settings and
//! the token source once, and checks the combinations, so a bad file or a missing password
//! fails when the client is created, with the property named, not at the first connection.

use std::path::PathBuf;
use std::sync::Arc;

use super::jaas::JaasConfig;
use super::oauth::{self, TokenSource};
use super::secret::Secret;
use super::settings::{
    OAuthMethod, SaslConfig, SaslMechanism, SecurityProtocol, SslConfig, TlsVersion,
};
use super::tls;
use crate::{Error, Result};

/// What [`SecurityConfig::prepare`] built: the TLS settings and the token source, shared by
/// every connection of the client.
#[derive(Clone)]
pub struct Prepared {
    /// TLS settings, when `security.protocol` uses TLS.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Where OAUTHBEARER tokens come from, when that is the mechanism.
    pub tokens: Option<Arc<TokenSource>>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("tls", &self.tls.is_some())
            .field("tokens", &self.tokens.is_some())
            .finish()
    }
}

/// Every security setting of a client.
#[derive(Debug, Clone)]
pub struct SecurityConfig {
    /// `security.protocol` (PLAINTEXT).
    pub protocol: SecurityProtocol,
    /// `ssl.*`.
    pub ssl: SslConfig,
    /// `sasl.*`.
    pub sasl: SaslConfig,
    /// Built by [`SecurityConfig::prepare`].
    pub prepared: Option<Prepared>,
    /// Java's `sasl.jaas.config`, kept to apply after the other keys (it fills username and
    /// password only where `sasl.username` / `sasl.password` did not).
    jaas: Option<JaasConfig>,
    /// `ssl.truststore.type` / `ssl.keystore.type` (only PEM is supported).
    store_types: Vec<(String, String)>,
}

impl Default for SecurityConfig {
    fn default() -> Self {
        SecurityConfig {
            protocol: SecurityProtocol::Plaintext,
            ssl: SslConfig {
                verify_hostname: true,
                ..SslConfig::default()
            },
            sasl: SaslConfig::default(),
            prepared: None,
            jaas: None,
            store_types: Vec::new(),
        }
    }
}

fn path(value: &str) -> Option<PathBuf> {
    let v = value.trim();
    (!v.is_empty()).then(|| PathBuf::from(v))
}

fn text(value: &str) -> Option<String> {
    (!value.trim().is_empty()).then(|| value.to_string())
}

fn parse_bool(key: &str, v: &str) -> Result<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(Error::config(key, format!("`{v}` is not true or false"))),
    }
}

/// Parses `sasl.mechanism`.
pub fn parse_mechanism(key: &str, value: &str) -> Result<Option<SaslMechanism>> {
    match value.trim().to_ascii_uppercase().as_str() {
        "PLAIN" => Ok(Some(SaslMechanism::Plain)),
        "SCRAM-SHA-256" => Ok(Some(SaslMechanism::ScramSha256)),
        "SCRAM-SHA-512" => Ok(Some(SaslMechanism::ScramSha512)),
        "OAUTHBEARER" => Ok(Some(SaslMechanism::OAuthBearer)),
        "GSSAPI" => Ok(None),
        other => Err(Error::config(
            key,
            format!("`{other}` is not PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER (GSSAPI is not supported)"),
        )),
    }
}

fn parse_versions(key: &str, value: &str) -> Result<Vec<TlsVersion>> {
    let mut out = Vec::new();
    for v in value.split(',').map(str::trim).filter(|v| !v.is_empty()) {
        let version = match v {
            "TLSv1.2" => TlsVersion::Tls12,
            "TLSv1.3" => TlsVersion::Tls13,
            other => {
                return Err(Error::config(
                    key,
                    format!("`{other}` is not supported: only TLSv1.2 and TLSv1.3"),
                ))
            }
        };
        if !out.contains(&version) {
            out.push(version);
        }
    }
    if out.is_empty() {
        return Err(Error::config(key, "no protocol given"));
    }
    Ok(out)
}

fn parse_extensions(key: &str, value: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for pair in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| Error::config(key, format!("`{pair}` is not KEY=VALUE")))?;
        oauth::check_extension(key, k, v)?;
        out.push((k.to_string(), v.to_string()));
    }
    Ok(out)
}

impl SecurityConfig {
    /// Whether `key` is a security property this module sets.
    pub fn handles(key: &str) -> bool {
        key == "security.protocol"
            || key.starts_with("ssl.")
            || key.starts_with("sasl.")
            || key.starts_with("https.")
            || key == "enable.sasl.oauthbearer.unsecure.jwt"
            || key == "enable.ssl.certificate.verification"
    }

    /// Sets one security property (the name is known to be one: [`SecurityConfig::handles`]).
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let ssl = &mut self.ssl;
        let sasl = &mut self.sasl;
        match key {
            "security.protocol" => {
                self.protocol = match value.trim().to_ascii_uppercase().as_str() {
                    "PLAINTEXT" => SecurityProtocol::Plaintext,
                    "SSL" => SecurityProtocol::Ssl,
                    "SASL_PLAINTEXT" => SecurityProtocol::SaslPlaintext,
                    "SASL_SSL" => SecurityProtocol::SaslSsl,
                    other => {
                        return Err(Error::config(
                            key,
                            format!("`{other}` is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"),
                        ))
                    }
                }
            }
            "ssl.ca.location" | "ssl.truststore.location" => {
                if value.trim() == "probe" {
                    // librdkafka's "probe": the system's trust store, which is also the
                    // default when no CA is given.
                    ssl.ca_location = None;
                } else {
                    ssl.ca_location = path(value);
                }
            }
            "ssl.ca.pem" | "ssl.truststore.certificates" => ssl.ca_pem = text(value),
            "ssl.certificate.location" => ssl.certificate_location = path(value),
            "ssl.certificate.pem" | "ssl.keystore.certificate.chain" => {
                ssl.certificate_pem = text(value)
            }
            "ssl.key.location" => ssl.key_location = path(value),
            "ssl.keystore.location" => {
                // Java's PEM keystore (key and chain in one file); librdkafka's PKCS#12
                // keystore is refused in `prepare` once the file is read.
                ssl.key_location = path(value);
                ssl.certificate_location = path(value);
            }
            "ssl.key.pem" | "ssl.keystore.key" => ssl.key_pem = text(value).map(Secret::new),
            "ssl.key.password" | "ssl.keystore.password" => {
                ssl.key_password = text(value).map(Secret::new)
            }
            "ssl.truststore.type" | "ssl.keystore.type" => {
                if !value.trim().eq_ignore_ascii_case("PEM") {
                    return Err(Error::config(
                        key,
                        format!("`{}` is not supported: only PEM (convert JKS / PKCS12 stores to PEM files)", value.trim()),
                    ));
                }
                self.store_types.push((key.to_string(), value.to_string()));
            }
            "ssl.endpoint.identification.algorithm" => {
                ssl.verify_hostname = match value.trim().to_ascii_lowercase().as_str() {
                    "https" => true,
                    "none" | "" => false,
                    other => {
                        return Err(Error::config(
                            key,
                            format!("`{other}` is not https or none"),
                        ))
                    }
                }
            }
            "enable.ssl.certificate.verification" => {
                if !parse_bool(key, value)? {
                    return Err(Error::config(
                        key,
                        "false is not supported: broker certificates are always verified (trust a CA with ssl.ca.location, or turn off the host name check with ssl.endpoint.identification.algorithm=none)",
                    ));
                }
            }
            "ssl.cipher.suites" => {
                let names: Vec<String> = value
                    .split([',', ':'])
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
                tls::check_cipher_suites(key, &names)?;
                ssl.cipher_suites = (!names.is_empty()).then_some(names);
            }
            "ssl.enabled.protocols" => ssl.protocols = Some(parse_versions(key, value)?),
            "ssl.protocol" => match value.trim() {
                // Java's SSLContext protocol: both versions stay enabled unless
                // ssl.enabled.protocols limits them (what the Java client does).
                "TLS" | "TLSv1.2" | "TLSv1.3" => {}
                other => {
                    return Err(Error::config(
                        key,
                        format!("`{other}` is not supported: only TLS, TLSv1.2 and TLSv1.3"),
                    ))
                }
            },
            "sasl.mechanism" | "sasl.mechanisms" => sasl.mechanism = parse_mechanism(key, value)?,
            "sasl.username" => sasl.username = text(value),
            "sasl.password" => sasl.password = Some(Secret::new(value)),
            "sasl.jaas.config" => self.jaas = Some(JaasConfig::parse(key, value)?),
            "sasl.oauthbearer.method" => {
                sasl.oauth_method = match value.trim().to_ascii_lowercase().as_str() {
                    "default" => OAuthMethod::Default,
                    "oidc" => OAuthMethod::Oidc,
                    other => {
                        return Err(Error::config(
                            key,
                            format!("`{other}` is not default or oidc"),
                        ))
                    }
                }
            }
            "enable.sasl.oauthbearer.unsecure.jwt" => sasl.unsecure_jwt = parse_bool(key, value)?,
            "sasl.oauthbearer.config" => {
                oauth::UnsecuredJwt::parse_config(key, value)?;
                sasl.oauth_config = text(value);
            }
            "sasl.oauthbearer.client.id" => sasl.oauth_client_id = text(value),
            "sasl.oauthbearer.client.secret" => {
                sasl.oauth_client_secret = text(value).map(Secret::new)
            }
            "sasl.oauthbearer.scope" => sasl.oauth_scope = text(value),
            "sasl.oauthbearer.extensions" => sasl.oauth_extensions = parse_extensions(key, value)?,
            "sasl.oauthbearer.token.endpoint.url" => {
                let url = value.trim();
                if !(url.is_empty() || url.starts_with("https://") || url.starts_with("http://")) {
                    return Err(Error::config(key, "must be an http:// or https:// URL"));
                }
                sasl.oauth_token_endpoint = text(url);
            }
            "https.ca.location" => sasl.https_ca_location = path(value),
            "https.ca.pem" => sasl.https_ca_pem = text(value),
            "sasl.kerberos.service.name"
            | "sasl.kerberos.principal"
            | "sasl.kerberos.kinit.cmd"
            | "sasl.kerberos.keytab"
            | "sasl.kerberos.min.time.before.relogin" => {
                // Kerberos settings matter only to GSSAPI, which is refused when selected.
            }
            _ => {
                return Err(Error::config(
                    key,
                    "unknown or unsupported security property",
                ))
            }
        }
        Ok(())
    }

    /// Checks the combinations and builds what connections share (see [`Prepared`]). Called
    /// when the client's configuration is validated, and again if the token provider changes.
    pub fn prepare(&mut self) -> Result<()> {
        if let Some(jaas) = self.jaas.take() {
            jaas.apply(&mut self.sasl)?;
            self.jaas = Some(jaas);
        }
        let tls = if self.protocol.tls() {
            Some(Arc::new(tls::client_config(&self.ssl)?))
        } else {
            None
        };
        let tokens = if self.protocol.sasl() {
            let mechanism = self.sasl.mechanism.ok_or_else(|| {
                Error::config(
                    "sasl.mechanism",
                    format!(
                        "GSSAPI (Kerberos, the default) is not supported: set sasl.mechanism to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER for {}",
                        self.protocol.name()
                    ),
                )
            })?;
            match mechanism {
                SaslMechanism::Plain | SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => {
                    if self.sasl.username.is_none() {
                        return Err(Error::config(
                            "sasl.username",
                            format!("is required with sasl.mechanism={}", mechanism.name()),
                        ));
                    }
                    if self.sasl.password.is_none() {
                        return Err(Error::config(
                            "sasl.password",
                            format!("is required with sasl.mechanism={}", mechanism.name()),
                        ));
                    }
                    None
                }
                SaslMechanism::OAuthBearer => Some(Arc::new(TokenSource::new(&self.sasl)?)),
            }
        } else {
            None
        };
        self.prepared = Some(Prepared { tls, tokens });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn set(pairs: &[(&str, &str)]) -> Result<SecurityConfig> {
        let mut c = SecurityConfig::default();
        for (k, v) in pairs {
            assert!(SecurityConfig::handles(k), "{k}");
            c.set(k, v)?;
        }
        c.prepare()?;
        Ok(c)
    }

    #[test]
    fn errors_name_the_property() {
        for (pairs, key) in [
            (vec![("security.protocol", "TLS")], "security.protocol"),
            (vec![("sasl.mechanism", "KERBEROS")], "sasl.mechanism"),
            (
                vec![("ssl.enabled.protocols", "TLSv1.1")],
                "ssl.enabled.protocols",
            ),
            (vec![("ssl.truststore.type", "JKS")], "ssl.truststore.type"),
            (vec![("ssl.cipher.suites", "RC4-MD5")], "ssl.cipher.suites"),
            (
                vec![("security.protocol", "SASL_PLAINTEXT")],
                "sasl.mechanism",
            ),
            (
                vec![
                    ("security.protocol", "SASL_PLAINTEXT"),
                    ("sasl.mechanism", "GSSAPI"),
                ],
                "sasl.mechanism",
            ),
            (
                vec![
                    ("security.protocol", "SASL_SSL"),
                    ("sasl.mechanism", "SCRAM-SHA-512"),
                    ("sasl.username", "u"),
                ],
                "sasl.password",
            ),
            (
                vec![
                    ("ssl.ca.location", "/no/such/ca.pem"),
                    ("security.protocol", "SSL"),
                ],
                "ssl.ca.location",
            ),
            (
                vec![("enable.ssl.certificate.verification", "false")],
                "enable.ssl.certificate.verification",
            ),
            (
                vec![("sasl.oauthbearer.token.endpoint.url", "ftp://x")],
                "sasl.oauthbearer.token.endpoint.url",
            ),
            (vec![("ssl.no.such", "1")], "ssl.no.such"),
        ] {
            let err = set(&pairs).unwrap_err();
            assert!(err.to_string().contains(key), "{pairs:?}: {err}");
        }
    }

    #[test]
    fn plain_sasl_needs_no_tls_and_hides_its_password() {
        let c = set(&[
            ("security.protocol", "sasl_plaintext"),
            ("sasl.mechanisms", "PLAIN"),
            ("sasl.username", "alice"),
            ("sasl.password", "alice-secret"),
        ])
        .unwrap();
        assert_eq!(c.protocol, SecurityProtocol::SaslPlaintext);
        assert_eq!(c.sasl.mechanism, Some(SaslMechanism::Plain));
        let prepared = c.prepared.as_ref().unwrap();
        assert!(prepared.tls.is_none() && prepared.tokens.is_none());
        assert!(!format!("{c:?}").contains("alice-secret"));
    }

    #[test]
    fn jaas_config_fills_user_and_password() {
        let c = set(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "SCRAM-SHA-256"),
            (
                "sasl.jaas.config",
                r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="b\"ob-secret";"#,
            ),
        ])
        .unwrap();
        assert_eq!(c.sasl.username.as_deref(), Some("bob"));
        assert_eq!(
            c.sasl.password.as_ref().map(Secret::expose),
            Some("b\"ob-secret")
        );
    }
}
