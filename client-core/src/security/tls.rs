//! TLS for broker connections with rustls and its `ring` provider (one crypto provider on
//! every platform the packages ship for; no OpenSSL linking).
//!
//! Trust: `ssl.ca.location` (a PEM file, or a directory whose files are read as PEM),
//! `ssl.ca.pem`, else the system trust store. Client authentication: `ssl.certificate.*` +
//! `ssl.key.*` (PEM; an encrypted PKCS#8 key with `ssl.key.password`). Host names are checked
//! unless `ssl.endpoint.identification.algorithm=none`, which still verifies the chain.
//! `ssl.cipher.suites` takes OpenSSL or IANA names of the suites rustls implements; as with
//! OpenSSL, the list limits TLS 1.3 suites only if it names one.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::{
    CertificateError, CipherSuite, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};

use super::secret::Secret;
use super::settings::{SslConfig, TlsVersion};
use crate::{Error, Result};

/// The suites rustls's ring provider implements, by OpenSSL and IANA name.
const SUITES: &[(&str, &str, CipherSuite)] = &[
    (
        "TLS_AES_128_GCM_SHA256",
        "TLS_AES_128_GCM_SHA256",
        CipherSuite::TLS13_AES_128_GCM_SHA256,
    ),
    (
        "TLS_AES_256_GCM_SHA384",
        "TLS_AES_256_GCM_SHA384",
        CipherSuite::TLS13_AES_256_GCM_SHA384,
    ),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        "TLS_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
];

fn suite_of(name: &str) -> Option<CipherSuite> {
    SUITES
        .iter()
        .find(|(openssl, iana, _)| name == *openssl || name == *iana)
        .map(|(_, _, s)| *s)
}

fn is_tls13(suite: CipherSuite) -> bool {
    matches!(
        suite,
        CipherSuite::TLS13_AES_128_GCM_SHA256
            | CipherSuite::TLS13_AES_256_GCM_SHA384
            | CipherSuite::TLS13_CHACHA20_POLY1305_SHA256
    )
}

/// Checks `ssl.cipher.suites`: every name must be a suite rustls implements.
pub fn check_cipher_suites(key: &str, names: &[String]) -> Result<()> {
    for n in names {
        if suite_of(n).is_none() {
            let known: Vec<&str> = SUITES.iter().map(|(o, _, _)| *o).collect();
            return Err(Error::config(
                key,
                format!(
                    "cipher suite `{n}` is not supported (supported: {})",
                    known.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

fn provider(ssl: &SslConfig) -> CryptoProvider {
    let mut provider = rustls::crypto::ring::default_provider();
    if let Some(names) = &ssl.cipher_suites {
        let wanted: Vec<CipherSuite> = names.iter().filter_map(|n| suite_of(n)).collect();
        let limits_tls13 = wanted.iter().any(|s| is_tls13(*s));
        provider.cipher_suites.retain(|s| {
            let suite = s.suite();
            wanted.contains(&suite) || (is_tls13(suite) && !limits_tls13)
        });
    }
    provider
}

fn read_file(key: &str, path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path)
        .map_err(|e| Error::config(key, format!("cannot read {}: {e}", path.display())))
}

/// Every certificate in PEM `bytes`.
fn certificates(key: &str, bytes: &[u8], origin: &str) -> Result<Vec<CertificateDer<'static>>> {
    let certs: std::result::Result<Vec<_>, _> = CertificateDer::pem_slice_iter(bytes).collect();
    certs.map_err(|e| Error::config(key, format!("{origin}: not valid PEM: {e}")))
}

/// The trust anchors: the configured CAs, else the system trust store.
fn roots(ssl: &SslConfig) -> Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    let mut add = |key: &str, certs: Vec<CertificateDer<'static>>, origin: &str| -> Result<()> {
        if certs.is_empty() {
            return Err(Error::config(key, format!("{origin} holds no certificate")));
        }
        for c in certs {
            roots.add(c).map_err(|e| {
                Error::config(key, format!("{origin}: unusable CA certificate: {e}"))
            })?;
        }
        Ok(())
    };
    let mut configured = false;
    if let Some(path) = &ssl.ca_location {
        let key = "ssl.ca.location";
        configured = true;
        if path.is_dir() {
            let entries = std::fs::read_dir(path)
                .map_err(|e| Error::config(key, format!("cannot read {}: {e}", path.display())))?;
            let mut certs = Vec::new();
            for entry in entries.flatten() {
                let p = entry.path();
                if p.is_file() {
                    // A directory may hold other files (OpenSSL's hash links, READMEs): files
                    // that are not PEM certificates are skipped.
                    if let Ok(found) = certificates(key, &read_file(key, &p)?, "") {
                        certs.extend(found);
                    }
                }
            }
            add(key, certs, &path.display().to_string())?;
        } else {
            let bytes = read_file(key, path)?;
            add(
                key,
                certificates(key, &bytes, &path.display().to_string())?,
                &path.display().to_string(),
            )?;
        }
    }
    if let Some(pem) = &ssl.ca_pem {
        configured = true;
        add(
            "ssl.ca.pem",
            certificates("ssl.ca.pem", pem.as_bytes(), "ssl.ca.pem")?,
            "ssl.ca.pem",
        )?;
    }
    if !configured {
        let native = rustls_native_certs::load_native_certs();
        for c in native.certs {
            // The system store may hold certificates rustls cannot use; skip those.
            let _ = roots.add(c);
        }
        if roots.is_empty() {
            return Err(Error::config(
                "ssl.ca.location",
                "no CA given and the system trust store is empty or unreadable",
            ));
        }
    }
    Ok(roots)
}

/// The base64 body of the first `-----BEGIN <label>-----` block of `pem`.
fn pem_block(pem: &str, label: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = pem.find(&begin)? + begin.len();
    let stop = start + pem[start..].find(&end)?;
    let body: String = pem[start..stop]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD.decode(body).ok()
}

/// The client's private key from PEM text: plain PKCS#8 / PKCS#1 / SEC1, or encrypted PKCS#8
/// (PBES2, as `openssl pkcs8 -topk8 -v2 aes-256-cbc` writes it) with `password`.
fn private_key(key: &str, pem: &str, password: Option<&Secret>) -> Result<PrivateKeyDer<'static>> {
    if let Some(der) = pem_block(pem, "ENCRYPTED PRIVATE KEY") {
        let password = password.ok_or_else(|| {
            Error::config(
                "ssl.key.password",
                "is required: the private key is encrypted",
            )
        })?;
        let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice())
            .map_err(|e| Error::config(key, format!("not a valid encrypted PKCS#8 key: {e}")))?;
        let doc = info.decrypt(password.expose().as_bytes()).map_err(|_| {
            Error::config(
                "ssl.key.password",
                "cannot decrypt the private key (wrong password or unsupported cipher)",
            )
        })?;
        return Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            doc.as_bytes().to_vec(),
        )));
    }
    PrivateKeyDer::from_pem_slice(pem.as_bytes())
        .map_err(|e| Error::config(key, format!("no usable private key: {e}")))
}

/// The client certificate chain and key, when both are configured.
fn client_identity(
    ssl: &SslConfig,
) -> Result<Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>> {
    let chain_text = match (&ssl.certificate_pem, &ssl.certificate_location) {
        (Some(pem), _) => Some(("ssl.certificate.pem", pem.clone())),
        (None, Some(path)) => {
            let bytes = read_file("ssl.certificate.location", path)?;
            Some((
                "ssl.certificate.location",
                String::from_utf8_lossy(&bytes).into_owned(),
            ))
        }
        (None, None) => None,
    };
    let key_text = match (&ssl.key_pem, &ssl.key_location) {
        (Some(pem), _) => Some(("ssl.key.pem", pem.expose().to_string())),
        (None, Some(path)) => {
            let bytes = read_file("ssl.key.location", path)?;
            if !bytes.starts_with(b"-----")
                && !String::from_utf8_lossy(&bytes).contains("-----BEGIN")
            {
                return Err(Error::config(
                    "ssl.key.location",
                    format!("{} is not PEM (PKCS#12 keystores are not supported: convert with `openssl pkcs12 -nodes`)", path.display()),
                ));
            }
            Some((
                "ssl.key.location",
                String::from_utf8_lossy(&bytes).into_owned(),
            ))
        }
        (None, None) => None,
    };
    match (chain_text, key_text) {
        (None, None) => Ok(None),
        (Some((key, _)), None) => Err(Error::config(
            key,
            "a client certificate needs its private key (ssl.key.location or ssl.key.pem)",
        )),
        (None, Some((key, _))) => Err(Error::config(
            key,
            "a private key needs its certificate (ssl.certificate.location or ssl.certificate.pem)",
        )),
        (Some((ckey, chain)), Some((kkey, key_pem))) => {
            let certs = certificates(ckey, chain.as_bytes(), ckey)?;
            if certs.is_empty() {
                return Err(Error::config(ckey, "holds no certificate"));
            }
            let key = private_key(kkey, &key_pem, ssl.key_password.as_ref())?;
            Ok(Some((certs, key)))
        }
    }
}

/// Checks the chain of trust but not the host name (`ssl.endpoint.identification.algorithm=
/// none`).
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The TLS settings of a client from its `ssl.*` properties.
pub fn client_config(ssl: &SslConfig) -> Result<rustls::ClientConfig> {
    let provider = Arc::new(provider(ssl));
    let versions: Vec<&'static rustls::SupportedProtocolVersion> = ssl
        .protocols
        .as_deref()
        .unwrap_or(&[TlsVersion::Tls12, TlsVersion::Tls13])
        .iter()
        .map(|v| match v {
            TlsVersion::Tls12 => &rustls::version::TLS12,
            TlsVersion::Tls13 => &rustls::version::TLS13,
        })
        .collect();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| {
            Error::config(
                "ssl.cipher.suites",
                format!("no cipher suite left for ssl.enabled.protocols: {e}"),
            )
        })?;
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots(ssl)?), provider)
        .build()
        .map_err(|e| Error::config("ssl.ca.location", format!("unusable trust store: {e}")))?;
    let builder = if ssl.verify_hostname {
        builder.with_webpki_verifier(verifier)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnly(verifier)))
    };
    let mut config = match client_identity(ssl)? {
        Some((chain, key)) => builder.with_client_auth_cert(chain, key).map_err(|e| {
            Error::config(
                "ssl.key.location",
                format!("unusable key or certificate: {e}"),
            )
        })?,
        None => builder.with_no_client_auth(),
    };
    // Kafka speaks no ALPN; leave it empty. Session resumption stays on (rustls's default).
    config.alpn_protocols.clear();
    Ok(config)
}

/// The TLS server name for `host` (a DNS name or an IP address).
pub fn server_name(host: &str) -> Result<ServerName<'static>> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_string()).map_err(|_| Error::Connection {
        broker: host.to_string(),
        detail: "not a valid TLS server name".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cipher_names_are_openssl_or_iana() {
        assert!(check_cipher_suites("k", &["ECDHE-RSA-AES128-GCM-SHA256".into()]).is_ok());
        assert!(
            check_cipher_suites("k", &["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".into()]).is_ok()
        );
        assert!(check_cipher_suites("k", &["AES128-SHA".into()]).is_err());
        let ssl = SslConfig {
            cipher_suites: Some(vec!["ECDHE-RSA-AES256-GCM-SHA384".into()]),
            ..SslConfig::default()
        };
        let p = provider(&ssl);
        let names: Vec<CipherSuite> = p.cipher_suites.iter().map(|s| s.suite()).collect();
        assert!(names.contains(&CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384));
        assert!(!names.contains(&CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256));
        assert!(
            names.contains(&CipherSuite::TLS13_AES_128_GCM_SHA256),
            "TLS 1.3 suites stay"
        );
    }

    #[test]
    fn pem_blocks_are_found_among_others() {
        let pem = "junk\n-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAEC\n-----END ENCRYPTED PRIVATE KEY-----\n";
        assert_eq!(pem_block(pem, "ENCRYPTED PRIVATE KEY"), Some(vec![0, 1, 2]));
        assert_eq!(pem_block(pem, "CERTIFICATE"), None);
    }
}
