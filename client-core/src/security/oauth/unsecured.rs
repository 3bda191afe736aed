//! librdkafka's unsecured JWT for development (`enable.sasl.oauthbearer.unsecure.jwt=true`),
//! configured by `sasl.oauthbearer.config`: space-separated `principal=<name>`,
//! `principalClaimName=<claim>` (default `sub`), `scope=<a,b>`, `scopeClaimName=<claim>` (default
//! `scope`), `lifeSeconds=<n>` (default 3600) and `extension_<name>=<value>`. The token is a JWT
//! with `alg: none` and no signature, which only a broker with Kafka's unsecured validator
//! accepts.

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use base64::Engine;

use crate::security::token::{check_extension, OAuthToken};
use crate::security::Secret;
use crate::{Error, Result};

/// The unsecured token's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsecuredJwt {
    principal: String,
    principal_claim: String,
    scope: Vec<String>,
    scope_claim: String,
    life_seconds: i64,
    extensions: Vec<(String, String)>,
}

impl UnsecuredJwt {
    /// Parses `sasl.oauthbearer.config` (under the property name `key`).
    pub fn parse_config(key: &str, config: &str) -> Result<UnsecuredJwt> {
        let mut jwt = UnsecuredJwt {
            principal: String::new(),
            principal_claim: "sub".into(),
            scope: Vec::new(),
            scope_claim: "scope".into(),
            life_seconds: 3600,
            extensions: Vec::new(),
        };
        for item in config.split_whitespace() {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| Error::config(key, format!("`{item}` is not name=value")))?;
            match k {
                "principal" => jwt.principal = v.to_string(),
                "principalClaimName" => jwt.principal_claim = v.to_string(),
                "scope" => {
                    jwt.scope = v
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect()
                }
                "scopeClaimName" => jwt.scope_claim = v.to_string(),
                "lifeSeconds" => {
                    jwt.life_seconds = v.parse().ok().filter(|s| *s > 0).ok_or_else(|| {
                        Error::config(key, "lifeSeconds must be a positive number")
                    })?
                }
                k if k.starts_with("extension_") => {
                    let name = &k["extension_".len()..];
                    check_extension(key, name, v)?;
                    jwt.extensions.push((name.to_string(), v.to_string()));
                }
                other => {
                    return Err(Error::config(
                        key,
                        format!("unknown unsecured-JWT setting `{other}`"),
                    ))
                }
            }
        }
        Ok(jwt)
    }

    /// A token valid from `now_ms` for `lifeSeconds`.
    pub fn token(&self, now_ms: i64) -> Result<OAuthToken> {
        if self.principal.is_empty() {
            return Err(Error::config(
                "sasl.oauthbearer.config",
                "the unsecured JWT needs principal=<name>",
            ));
        }
        let iat = now_ms / 1000;
        let exp = iat + self.life_seconds;
        let mut claims = serde_json::Map::new();
        claims.insert(self.principal_claim.clone(), self.principal.clone().into());
        claims.insert("iat".into(), iat.into());
        claims.insert("exp".into(), exp.into());
        if !self.scope.is_empty() {
            claims.insert(self.scope_claim.clone(), self.scope.clone().into());
        }
        let header = B64URL.encode(br#"{"alg":"none"}"#);
        let payload = B64URL.encode(serde_json::Value::Object(claims).to_string());
        Ok(OAuthToken {
            value: Secret::new(format!("{header}.{payload}.")),
            expires_at_ms: exp * 1000,
            principal: self.principal.clone(),
            extensions: self.extensions.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn builds_an_alg_none_jwt() {
        let j = UnsecuredJwt::parse_config(
            "k",
            "principal=alice scope=a,b lifeSeconds=60 extension_traceId=9",
        )
        .unwrap();
        let t = j.token(1_000_000).unwrap();
        assert_eq!(t.expires_at_ms, (1000 + 60) * 1000);
        let parts: Vec<&str> = t.value.expose().split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[2], "");
        let claims: serde_json::Value =
            serde_json::from_slice(&B64URL.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["sub"], "alice");
        assert_eq!(claims["scope"], serde_json::json!(["a", "b"]));
        assert_eq!(t.extensions, vec![("traceId".to_string(), "9".to_string())]);
        assert!(UnsecuredJwt::parse_config("k", "lifeSeconds=x").is_err());
        assert!(UnsecuredJwt::parse_config("k", "what=1").is_err());
        assert!(UnsecuredJwt::parse_config("k", "")
            .unwrap()
            .token(0)
            .is_err());
    }
}
