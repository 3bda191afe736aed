//! KafkaJS's `sasl.oauthBearerProvider` as the core's OAUTHBEARER token source.
//!
//! `node/lib/config.js` wraps the application's provider so that it answers a JSON string
//! (`{ value, principal?, lifetimeMs?, extensions? }`); the core calls it through a thread-safe
//! function whenever a connection authenticates and the cached token is due, and awaits the
//! Promise. KafkaJS gives no lifetime: without `lifetimeMs` the token's JWT `exp` claim is used,
//! else it is asked for again at the next authentication, as KafkaJS does.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine;
use napi::bindgen_prelude::Promise;
use napi::threadsafe_function::ThreadsafeFunction;
use odradek::security::{OAuthToken, Secret, TokenFuture, TokenProvider};
use odradek::ClientConfig;

use crate::error;

/// The wrapped provider: called with no argument, it returns a Promise of JSON. Weak: it does
/// not keep the event loop alive.
pub type JsTokenCallback = ThreadsafeFunction<(), Promise<String>, (), napi::Status, false, true>;

/// The provider, shared by every connection of a client.
pub struct JsTokenProvider(Arc<JsTokenCallback>);

impl std::fmt::Debug for JsTokenProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JsTokenProvider")
    }
}

fn failed(detail: impl Into<String>) -> odradek::Error {
    odradek::Error::SaslAuthentication {
        broker: "oauthBearerProvider".into(),
        detail: detail.into(),
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The `exp` claim of a JWT, in ms.
fn jwt_expiry(token: &str) -> Option<i64> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims["exp"].as_i64().map(|s| s * 1000)
}

fn parse(json: &str) -> odradek::Result<OAuthToken> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|_| failed("the provider's answer is not JSON"))?;
    let value = v["value"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| failed("oauthBearerProvider must return { value: string }"))?;
    let now = now_ms();
    let expires_at_ms = v["lifetimeMs"]
        .as_i64()
        .or_else(|| jwt_expiry(value))
        .unwrap_or(now + 1000);
    let mut extensions = Vec::new();
    if let Some(map) = v["extensions"].as_object() {
        for (k, val) in map {
            let val = val
                .as_str()
                .ok_or_else(|| failed(format!("extension `{k}` must be a string")))?;
            extensions.push((k.clone(), val.to_string()));
        }
    }
    Ok(OAuthToken {
        value: Secret::new(value),
        expires_at_ms,
        principal: v["principal"].as_str().unwrap_or_default().to_string(),
        extensions,
    })
}

impl TokenProvider for JsTokenProvider {
    fn token(&self) -> TokenFuture {
        let f = self.0.clone();
        Box::pin(async move {
            let promise = f.call_async(()).await.map_err(|e| {
                failed(format!(
                    "oauthBearerProvider could not be called: {}",
                    e.reason
                ))
            })?;
            let json = promise
                .await
                .map_err(|e| failed(format!("oauthBearerProvider rejected: {}", e.reason)))?;
            parse(&json)
        })
    }
}

/// The client's configuration from its properties, with `provider` as the token source.
pub fn client_config(
    props: HashMap<String, String>,
    provider: Option<JsTokenCallback>,
) -> napi::Result<ClientConfig> {
    let mut config = ClientConfig::from_map(props).map_err(error::request)?;
    if let Some(p) = provider {
        config
            .set_token_provider(Arc::new(JsTokenProvider(Arc::new(p))))
            .map_err(error::request)?;
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn provider_answers_are_parsed() {
        let t = parse(r#"{"value":"abc","lifetimeMs":5000,"extensions":{"traceId":"1"}}"#).unwrap();
        assert_eq!(t.value.expose(), "abc");
        assert_eq!(t.expires_at_ms, 5000);
        assert_eq!(t.extensions, vec![("traceId".to_string(), "1".to_string())]);
        assert!(parse(r#"{"value":""}"#).is_err());
        assert!(parse("nope").is_err());
    }
}
