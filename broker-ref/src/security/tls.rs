//! TLS for SSL and SASL_SSL listeners: a rustls server configuration from Kafka's PEM settings
//! (`ssl.keystore.type=PEM` with `ssl.keystore.location` or `ssl.keystore.certificate.chain` +
//! `ssl.keystore.key`, `ssl.key.password` for an encrypted PKCS#8 key, `ssl.truststore.type=PEM`
//! with `ssl.truststore.location` or `ssl.truststore.certificates`), `ssl.client.auth`,
//! `ssl.enabled.protocols` and `ssl.cipher.suites`. Everything is read per listener (Kafka's
//! `listener.name.<l>.` prefix wins). What rustls cannot do is refused by name at startup.

use std::sync::Arc;

use base64::Engine;
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, SupportedProtocolVersion};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::secret::Secret;
use crate::config::BrokerConfig;
use crate::{Error, Result};

/// `ssl.client.auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No client certificate is asked for.
    None,
    /// A certificate is asked for; a client without one connects as `User:ANONYMOUS`.
    Requested,
    /// A trusted certificate is required.
    Required,
}

/// A listener's TLS settings, ready to accept connections.
#[derive(Debug, Clone)]
pub struct TlsSettings {
    /// The rustls configuration.
    pub config: Arc<ServerConfig>,
    /// What is asked of clients.
    pub client_auth: ClientAuth,
}

/// The crypto provider every TLS object of the broker uses (ring: portable, no build tools).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Reads a PEM setting that may be given inline or as a file.
fn pem_source(
    config: &BrokerConfig,
    listener: &str,
    location_key: &str,
    inline_key: &str,
) -> Result<Option<(String, String)>> {
    let location = config.listener_get(listener, None, location_key).trim();
    let inline = config.listener_get(listener, None, inline_key).trim();
    match (location.is_empty(), inline.is_empty()) {
        (true, true) => Ok(None),
        (false, false) => Err(Error::config(
            inline_key,
            format!("listener {listener}: set {location_key} or {inline_key}, not both"),
        )),
        (false, true) => std::fs::read_to_string(location)
            .map(|t| Some((location_key.to_string(), t)))
            .map_err(|e| {
                Error::config(
                    location_key,
                    format!("listener {listener}: cannot read {location}: {e}"),
                )
            }),
        (true, false) => Ok(Some((inline_key.to_string(), inline.to_string()))),
    }
}

fn certificates(text: &str, key: &str, listener: &str) -> Result<Vec<CertificateDer<'static>>> {
    let certs: Vec<_> = rustls_pemfile::certs(&mut text.as_bytes())
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| Error::config(key, format!("listener {listener}: bad PEM: {e}")))?;
    if certs.is_empty() {
        return Err(Error::config(
            key,
            format!("listener {listener}: no CERTIFICATE in the PEM"),
        ));
    }
    Ok(certs)
}

/// The private key of a PEM text: PKCS#8 (also encrypted, with `password`), PKCS#1 or SEC1.
pub fn private_key(
    text: &str,
    password: Option<&Secret<String>>,
    key: &str,
) -> Result<PrivateKeyDer<'static>> {
    if let Some(der) = pem_block(text, "ENCRYPTED PRIVATE KEY") {
        let password = password.ok_or_else(|| {
            Error::config(
                "ssl.key.password",
                "the private key is encrypted: set ssl.key.password",
            )
        })?;
        let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice())
            .map_err(|e| Error::config(key, format!("not an encrypted PKCS#8 key: {e}")))?;
        let doc = info.decrypt(password.expose().as_bytes()).map_err(|_| {
            Error::config(
                "ssl.key.password",
                "cannot decrypt the private key (wrong ssl.key.password or unsupported cipher)",
            )
        })?;
        return Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            doc.as_bytes().to_vec(),
        )));
    }
    rustls_pemfile::private_key(&mut text.as_bytes())
        .map_err(|e| Error::config(key, format!("bad PEM: {e}")))?
        .ok_or_else(|| Error::config(key, "no PRIVATE KEY in the PEM"))
}

/// The DER bytes of the first PEM block labelled `label`.
fn pem_block(text: &str, label: &str) -> Option<Vec<u8>> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin)? + begin.len();
    let stop = start + text[start..].find(&end)?;
    let body: String = text[start..stop]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD.decode(body).ok()
}

/// The trust store of a listener, if configured.
pub fn trust_store(config: &BrokerConfig, listener: &str) -> Result<Option<RootCertStore>> {
    let Some((key, text)) = pem_source(
        config,
        listener,
        "ssl.truststore.location",
        "ssl.truststore.certificates",
    )?
    else {
        return Ok(None);
    };
    let kind = config.listener_get(listener, None, "ssl.truststore.type");
    if !kind.eq_ignore_ascii_case("PEM") {
        return Err(Error::config(
            "ssl.truststore.type",
            format!(
                "listener {listener}: `{kind}` is not supported; only PEM trust stores are (JKS and PKCS12 need a JVM)"
            ),
        ));
    }
    if !config
        .listener_get(listener, None, "ssl.truststore.password")
        .is_empty()
    {
        return Err(Error::config(
            "ssl.truststore.password",
            format!("listener {listener}: a PEM trust store has no password"),
        ));
    }
    let mut roots = RootCertStore::empty();
    for cert in certificates(&text, &key, listener)? {
        roots
            .add(cert)
            .map_err(|e| Error::config(key.clone(), format!("listener {listener}: {e}")))?;
    }
    Ok(Some(roots))
}

fn protocol_versions(
    config: &BrokerConfig,
    listener: &str,
) -> Result<Vec<&'static SupportedProtocolVersion>> {
    const KEY: &str = "ssl.enabled.protocols";
    let mut out = Vec::new();
    for p in config
        .listener_get(listener, None, KEY)
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        match p {
            "TLSv1.3" => out.push(&rustls::version::TLS13),
            "TLSv1.2" => out.push(&rustls::version::TLS12),
            other => {
                return Err(Error::config(
                    KEY,
                    format!("listener {listener}: {other} is not supported (rustls speaks TLSv1.2 and TLSv1.3 only)"),
                ))
            }
        }
    }
    if out.is_empty() {
        return Err(Error::config(
            KEY,
            format!("listener {listener}: no protocol enabled"),
        ));
    }
    let proto = config.listener_get(listener, None, "ssl.protocol");
    if !matches!(proto, "TLS" | "TLSv1.2" | "TLSv1.3") {
        return Err(Error::config(
            "ssl.protocol",
            format!("listener {listener}: {proto} is not supported (TLS, TLSv1.2 or TLSv1.3)"),
        ));
    }
    Ok(out)
}

/// The IANA name of a rustls cipher suite (what Java and `ssl.cipher.suites` use).
fn iana_name(suite: rustls::CipherSuite) -> String {
    let name = suite.as_str().unwrap_or("unknown").to_string();
    match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name,
    }
}

fn provider_for(config: &BrokerConfig, listener: &str) -> Result<CryptoProvider> {
    const KEY: &str = "ssl.cipher.suites";
    let mut provider = rustls::crypto::ring::default_provider();
    let wanted: Vec<&str> = config
        .listener_get(listener, None, KEY)
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if wanted.is_empty() {
        return Ok(provider);
    }
    let mut chosen = Vec::new();
    for w in &wanted {
        match provider
            .cipher_suites
            .iter()
            .find(|s| iana_name(s.suite()) == *w)
        {
            Some(s) => chosen.push(*s),
            None => {
                let known: Vec<String> = provider
                    .cipher_suites
                    .iter()
                    .map(|s| iana_name(s.suite()))
                    .collect();
                return Err(Error::config(
                    KEY,
                    format!(
                        "listener {listener}: {w} is not supported; supported: {}",
                        known.join(", ")
                    ),
                ));
            }
        }
    }
    provider.cipher_suites = chosen;
    Ok(provider)
}

/// Builds the TLS settings of `listener`.
pub fn server_settings(config: &BrokerConfig, listener: &str) -> Result<TlsSettings> {
    let kind = config.listener_get(listener, None, "ssl.keystore.type");
    if !kind.eq_ignore_ascii_case("PEM") {
        return Err(Error::config(
            "ssl.keystore.type",
            format!(
                "listener {listener}: `{kind}` is not supported; set ssl.keystore.type=PEM (JKS and PKCS12 need a JVM)"
            ),
        ));
    }
    if !config
        .listener_get(listener, None, "ssl.keystore.password")
        .is_empty()
    {
        return Err(Error::config(
            "ssl.keystore.password",
            format!("listener {listener}: a PEM key store has no store password, only ssl.key.password for an encrypted key"),
        ));
    }
    let (key_name, text) = pem_source(
        config,
        listener,
        "ssl.keystore.location",
        "ssl.keystore.certificate.chain",
    )?
    .ok_or_else(|| {
        Error::config(
            "ssl.keystore.location",
            format!("listener {listener} uses TLS: set ssl.keystore.location (key + chain in one PEM) or ssl.keystore.certificate.chain + ssl.keystore.key"),
        )
    })?;
    let key_text = if key_name == "ssl.keystore.location" {
        if !config
            .listener_get(listener, None, "ssl.keystore.key")
            .is_empty()
        {
            return Err(Error::config(
                "ssl.keystore.key",
                format!("listener {listener}: ssl.keystore.key goes with ssl.keystore.certificate.chain, not ssl.keystore.location"),
            ));
        }
        text.clone()
    } else {
        let k = config.listener_get(listener, None, "ssl.keystore.key");
        if k.trim().is_empty() {
            return Err(Error::config(
                "ssl.keystore.key",
                format!(
                    "listener {listener}: ssl.keystore.certificate.chain needs ssl.keystore.key"
                ),
            ));
        }
        k.to_string()
    };
    let chain = certificates(&text, &key_name, listener)?;
    let password = config.listener_get(listener, None, "ssl.key.password");
    let password = (!password.is_empty()).then(|| Secret::new(password.to_string()));
    let key = private_key(&key_text, password.as_ref(), &key_name)
        .map_err(|e| prefix_listener(e, listener))?;
    let client_auth = match config
        .listener_get(listener, None, "ssl.client.auth")
        .trim()
        .to_ascii_lowercase()
        .as_str()
    {
        "none" | "" => ClientAuth::None,
        "requested" => ClientAuth::Requested,
        "required" => ClientAuth::Required,
        other => {
            return Err(Error::config(
                "ssl.client.auth",
                format!("listener {listener}: `{other}` is not none, requested or required"),
            ))
        }
    };
    let provider = Arc::new(provider_for(config, listener)?);
    let versions = protocol_versions(config, listener)?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| Error::config("ssl.enabled.protocols", format!("listener {listener}: {e}")))?;
    let roots = trust_store(config, listener)?;
    let builder = match (client_auth, roots) {
        (ClientAuth::None, _) => builder.with_no_client_auth(),
        (_, None) => {
            return Err(Error::config(
                "ssl.client.auth",
                format!("listener {listener}: client authentication needs a trust store (ssl.truststore.location or ssl.truststore.certificates)"),
            ))
        }
        (auth, Some(roots)) => {
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if auth == ClientAuth::Requested {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier.build().map_err(|e| {
                Error::config("ssl.truststore.location", format!("listener {listener}: {e}"))
            })?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|e| Error::config(key_name, format!("listener {listener}: {e}")))?;
    Ok(TlsSettings {
        config: Arc::new(config),
        client_auth,
    })
}

fn prefix_listener(e: Error, listener: &str) -> Error {
    match e {
        Error::Config { key, message } => {
            Error::config(key, format!("listener {listener}: {message}"))
        }
        other => other,
    }
}
