//! Client security: `security.protocol`, TLS (rustls) and SASL (PLAIN, SCRAM-SHA-256/512,
//! OAUTHBEARER with token callbacks, OIDC and unsecured JWTs), configured with librdkafka's and
//! the Java client's property names.
//!
//! This module knows the settings, builds the TLS client configuration and the token source
//! once per client ([`SecurityConfig::prepare`]), and implements the SASL mechanisms as message
//! exchanges. The connection (`net::connection`) runs the TLS handshake and carries the SASL
//! messages in SaslHandshake / SaslAuthenticate requests, re-authenticating before the session
//! the broker granted ends (KIP-368).

pub mod config;
mod jaas;
pub mod oauth;
pub mod sasl;
mod secret;
mod settings;
pub mod tls;
mod token;

pub use config::{Prepared, SecurityConfig};
pub use secret::Secret;
pub use settings::{
    OAuthMethod, SaslConfig, SaslMechanism, SecurityProtocol, SslConfig, TlsVersion,
};
pub use token::{OAuthToken, TokenFuture, TokenProvider};

use crate::{Error, Result};

/// A new SASL exchange for the configured mechanism (an OAUTHBEARER one with the current
/// token, fetched or refreshed as needed).
pub async fn new_exchange(security: &SecurityConfig) -> Result<Box<dyn sasl::Exchange>> {
    let s = &security.sasl;
    let missing = |what: &str| Error::config(what, "is not set");
    match s.mechanism {
        Some(SaslMechanism::Plain) => Ok(Box::new(sasl::Plain::new(
            s.username
                .as_deref()
                .ok_or_else(|| missing("sasl.username"))?,
            s.password
                .as_ref()
                .ok_or_else(|| missing("sasl.password"))?,
        ))),
        Some(m @ (SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512)) => {
            let hash = if m == SaslMechanism::ScramSha256 {
                sasl::ScramHash::Sha256
            } else {
                sasl::ScramHash::Sha512
            };
            Ok(Box::new(sasl::Scram::new(
                hash,
                s.username
                    .as_deref()
                    .ok_or_else(|| missing("sasl.username"))?,
                s.password
                    .as_ref()
                    .ok_or_else(|| missing("sasl.password"))?,
            )))
        }
        Some(SaslMechanism::OAuthBearer) => {
            let source = security
                .prepared
                .as_ref()
                .and_then(|p| p.tokens.clone())
                .ok_or_else(|| missing("sasl.oauthbearer.method"))?;
            Ok(Box::new(sasl::OAuthBearer::new(source.token().await?)))
        }
        None => Err(Error::config(
            "sasl.mechanism",
            "GSSAPI (Kerberos) is not supported",
        )),
    }
}
