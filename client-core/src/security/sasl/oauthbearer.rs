//! OAUTHBEARER (RFC 7628), client side: `n,,\x01auth=Bearer <token>\x01[key=value\x01]*\x01`.
//! The server answers an empty message on success; on failure it sends a JSON error, which the
//! client acknowledges with `\x01` before the server fails the authentication (RFC 7628 §3.2.3).

use super::exchange::{failure, Exchange, Step};
use crate::security::token::OAuthToken;
use crate::Result;

/// An OAUTHBEARER exchange with one token.
#[derive(Debug)]
pub struct OAuthBearer {
    token: OAuthToken,
    /// The server's error, once it sent one.
    error: Option<String>,
}

impl OAuthBearer {
    /// An exchange presenting `token` (and its extensions).
    pub fn new(token: OAuthToken) -> Self {
        OAuthBearer { token, error: None }
    }
}

impl Exchange for OAuthBearer {
    fn start(&mut self) -> Result<Vec<u8>> {
        let mut m = format!("n,,\x01auth=Bearer {}\x01", self.token.value.expose());
        for (k, v) in &self.token.extensions {
            m.push_str(k);
            m.push('=');
            m.push_str(v);
            m.push('\x01');
        }
        m.push('\x01');
        Ok(m.into_bytes())
    }

    fn step(&mut self, challenge: &[u8]) -> Result<Step> {
        if let Some(e) = &self.error {
            return Err(failure(format!("OAUTHBEARER token rejected: {e}")));
        }
        if challenge.is_empty() {
            return Ok(Step::Done);
        }
        self.error = Some(String::from_utf8_lossy(challenge).into_owned());
        Ok(Step::Send(vec![0x01]))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::security::Secret;

    fn token() -> OAuthToken {
        OAuthToken {
            value: Secret::new("tok"),
            expires_at_ms: i64::MAX,
            principal: "alice".into(),
            extensions: vec![("traceId".into(), "7".into())],
        }
    }

    #[test]
    fn message_and_error_acknowledgement() {
        let mut o = OAuthBearer::new(token());
        assert_eq!(
            o.start().unwrap(),
            b"n,,\x01auth=Bearer tok\x01traceId=7\x01\x01"
        );
        assert_eq!(o.step(b"").unwrap(), Step::Done);
        let mut o = OAuthBearer::new(token());
        o.start().unwrap();
        assert_eq!(
            o.step(br#"{"status":"invalid_token"}"#).unwrap(),
            Step::Send(vec![1])
        );
        assert!(o.step(b"").is_err());
    }
}
