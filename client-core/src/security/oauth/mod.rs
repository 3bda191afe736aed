//! Where OAUTHBEARER tokens come from, and when they are refreshed.
//!
//! In order of precedence: the application's token callback ([`TokenProvider`]), the OIDC
//! client-credentials grant (`sasl.oauthbearer.method=oidc`), or librdkafka's unsecured JWT
//! (`enable.sasl.oauthbearer.unsecure.jwt=true`, development only). [`TokenSource`] caches the
//! token for every connection of a client and fetches a new one when 80% of its lifetime has
//! passed (librdkafka's rule), so connections made or re-authenticated later present a fresh
//! token.

mod oidc;
mod unsecured;

use std::sync::Arc;

pub use unsecured::UnsecuredJwt;

pub use super::token::{check_extension, OAuthToken, TokenFuture, TokenProvider};

use super::token::now_ms;

use super::settings::{OAuthMethod, SaslConfig};
use crate::{Error, Result};

#[derive(Debug)]
enum Origin {
    Callback(Arc<dyn TokenProvider>),
    Oidc(oidc::Oidc),
    Unsecured(UnsecuredJwt),
}

#[derive(Debug, Clone)]
struct Cached {
    token: OAuthToken,
    refresh_at_ms: i64,
}

/// The token source of one client (see the module documentation).
#[derive(Debug)]
pub struct TokenSource {
    origin: Origin,
    extensions: Vec<(String, String)>,
    cached: tokio::sync::Mutex<Option<Cached>>,
}

impl TokenSource {
    /// The source the settings call for; fails, naming the property, when none is configured.
    pub fn new(sasl: &SaslConfig) -> Result<TokenSource> {
        let origin = if let Some(p) = &sasl.token_provider {
            Origin::Callback(p.clone())
        } else if sasl.oauth_method == OAuthMethod::Oidc {
            Origin::Oidc(oidc::Oidc::new(sasl)?)
        } else if sasl.unsecure_jwt {
            Origin::Unsecured(UnsecuredJwt::parse_config(
                "sasl.oauthbearer.config",
                sasl.oauth_config.as_deref().unwrap_or_default(),
            )?)
        } else {
            return Err(Error::config(
                "sasl.oauthbearer.method",
                "OAUTHBEARER needs a token: give a token callback, set sasl.oauthbearer.method=oidc with sasl.oauthbearer.token.endpoint.url, client id and secret, or (development only) enable.sasl.oauthbearer.unsecure.jwt=true",
            ));
        };
        Ok(TokenSource {
            origin,
            extensions: sasl.oauth_extensions.clone(),
            cached: tokio::sync::Mutex::new(None),
        })
    }

    /// The current token, fetching a new one when none is cached or 80% of its lifetime has
    /// passed. Concurrent callers share one fetch.
    pub async fn token(&self) -> Result<OAuthToken> {
        let mut cached = self.cached.lock().await;
        let now = now_ms();
        if let Some(c) = cached.as_ref().filter(|c| now < c.refresh_at_ms) {
            return Ok(c.token.clone());
        }
        let mut token = match &self.origin {
            Origin::Callback(p) => p.token().await?,
            Origin::Oidc(o) => o.fetch().await?,
            Origin::Unsecured(u) => u.token(now)?,
        };
        if token.expires_at_ms <= now {
            return Err(Error::SaslAuthentication {
                broker: String::new(),
                detail: format!(
                    "the OAUTHBEARER token for `{}` has already expired",
                    token.principal
                ),
            });
        }
        for (k, v) in &self.extensions {
            if !token.extensions.iter().any(|(tk, _)| tk == k) {
                token.extensions.push((k.clone(), v.clone()));
            }
        }
        let refresh_at_ms = now + (token.expires_at_ms - now) * 8 / 10;
        tracing::debug!(principal = %token.principal, expires_at_ms = token.expires_at_ms, "OAUTHBEARER token obtained");
        *cached = Some(Cached {
            token: token.clone(),
            refresh_at_ms,
        });
        Ok(token)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::security::Secret;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Debug)]
    struct Counting(AtomicUsize, i64);

    impl TokenProvider for Arc<Counting> {
        fn token(&self) -> TokenFuture {
            let n = self.0.fetch_add(1, Ordering::SeqCst);
            let life = self.1;
            Box::pin(async move {
                Ok(OAuthToken {
                    value: Secret::new(format!("t{n}")),
                    expires_at_ms: now_ms() + life,
                    principal: "p".into(),
                    extensions: vec![],
                })
            })
        }
    }

    #[tokio::test]
    async fn tokens_are_cached_until_80_percent_of_their_lifetime() {
        let provider = Arc::new(Counting(AtomicUsize::new(0), 60_000));
        let sasl = SaslConfig {
            token_provider: Some(Arc::new(provider.clone())),
            oauth_extensions: vec![("traceId".into(), "1".into())],
            ..SaslConfig::default()
        };
        let source = TokenSource::new(&sasl).unwrap();
        let a = source.token().await.unwrap();
        let b = source.token().await.unwrap();
        assert_eq!(a.value.expose(), "t0");
        assert_eq!(b.value.expose(), "t0");
        assert_eq!(a.extensions, vec![("traceId".to_string(), "1".to_string())]);
        // A token whose lifetime is short is fetched again each time it is due.
        let quick = Arc::new(Counting(AtomicUsize::new(0), 5));
        let sasl = SaslConfig {
            token_provider: Some(Arc::new(quick.clone())),
            ..SaslConfig::default()
        };
        let source = TokenSource::new(&sasl).unwrap();
        source.token().await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        // The previous one expired: the callback gave a fresh one.
        let _ = source.token().await;
        assert!(quick.0.load(Ordering::SeqCst) >= 2);
    }

    #[test]
    fn no_source_is_an_error_naming_the_setting() {
        let err = TokenSource::new(&SaslConfig::default()).unwrap_err();
        assert!(err.to_string().contains("sasl.oauthbearer.method"), "{err}");
        assert!(check_extension("k", "auth", "x").is_err());
        assert!(check_extension("k", "trace1", "x").is_err());
        assert!(check_extension("k", "trace", "a\u{1}").is_err());
        assert!(check_extension("k", "trace", "a b").is_ok());
    }
}
