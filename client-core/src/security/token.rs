//! An OAUTHBEARER token and the callback an application gives to supply them.

use std::future::Future;
use std::pin::Pin;
use std::time::{SystemTime, UNIX_EPOCH};

use super::secret::Secret;
use crate::{Error, Result};

/// An OAuth 2 bearer token for OAUTHBEARER.
#[derive(Debug, Clone)]
pub struct OAuthToken {
    /// The token.
    pub value: Secret,
    /// When it expires, in ms since the Unix epoch.
    pub expires_at_ms: i64,
    /// The principal it names (for logs; the broker reads it from the token).
    pub principal: String,
    /// SASL extensions sent with it (RFC 7628 §3.1).
    pub extensions: Vec<(String, String)>,
}

/// A future of a token.
pub type TokenFuture = Pin<Box<dyn Future<Output = Result<OAuthToken>> + Send>>;

/// An application's token callback: asked for a token whenever a connection needs one and
/// the cached one is due for refresh.
pub trait TokenProvider: Send + Sync + std::fmt::Debug {
    /// A new token (or an error, which fails the authentication that asked).
    fn token(&self) -> TokenFuture;
}

/// Checks an OAUTHBEARER extension (RFC 7628: the key is letters only and not `auth`; the value
/// printable ASCII, space or tab).
pub fn check_extension(key: &str, name: &str, value: &str) -> Result<()> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphabetic()) || name == "auth" {
        return Err(Error::config(
            key,
            format!("extension name `{name}` must be letters only and not `auth`"),
        ));
    }
    if !value
        .chars()
        .all(|c| c == ' ' || c == '\t' || c.is_ascii_graphic())
    {
        return Err(Error::config(
            key,
            format!("extension `{name}` has a value with characters RFC 7628 does not allow"),
        ));
    }
    Ok(())
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
