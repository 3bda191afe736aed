//! `sasl.oauthbearer.method=oidc`: the OAuth 2 client-credentials grant (RFC 6749 §4.4) against
//! `sasl.oauthbearer.token.endpoint.url`, with `sasl.oauthbearer.client.id` /
//! `sasl.oauthbearer.client.secret` (HTTP Basic, §2.3.1) and `sasl.oauthbearer.scope`. The
//! endpoint's TLS trusts `https.ca.location` / `https.ca.pem`, else the system trust store.
//! A token endpoint that cannot be reached is a retriable failure; an answer without a token is
//! not.

use std::time::Duration;

use base64::engine::general_purpose::{STANDARD as B64, URL_SAFE_NO_PAD as B64URL};
use base64::Engine;

use crate::security::settings::{SaslConfig, SslConfig};
use crate::security::token::{now_ms, OAuthToken};
use crate::security::{tls, Secret};
use crate::{Error, Result};

/// How long one token request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The client-credentials grant of one client.
#[derive(Debug)]
pub struct Oidc {
    http: reqwest::Client,
    url: String,
    client_id: String,
    client_secret: Secret,
    scope: Option<String>,
}

/// `application/x-www-form-urlencoded` encoding of one value (RFC 3986 unreserved kept).
fn form_encode(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The claims of a JWT's payload, if `token` is a JWT.
fn jwt_claims(token: &str) -> Option<serde_json::Value> {
    let payload = token.split('.').nth(1)?;
    let bytes = B64URL.decode(payload.trim_end_matches('=')).ok()?;
    serde_json::from_slice(&bytes).ok()
}

impl Oidc {
    /// The grant the settings describe; fails naming the first missing property.
    pub fn new(sasl: &SaslConfig) -> Result<Oidc> {
        let need = |v: Option<String>, key: &str| {
            v.ok_or_else(|| Error::config(key, "is required with sasl.oauthbearer.method=oidc"))
        };
        let url = need(
            sasl.oauth_token_endpoint.clone(),
            "sasl.oauthbearer.token.endpoint.url",
        )?;
        let client_id = need(sasl.oauth_client_id.clone(), "sasl.oauthbearer.client.id")?;
        let client_secret = sasl.oauth_client_secret.clone().ok_or_else(|| {
            Error::config(
                "sasl.oauthbearer.client.secret",
                "is required with sasl.oauthbearer.method=oidc",
            )
        })?;
        let mut builder = reqwest::Client::builder().timeout(REQUEST_TIMEOUT);
        if url.starts_with("https://") {
            let trust = SslConfig {
                ca_location: sasl.https_ca_location.clone(),
                ca_pem: sasl.https_ca_pem.clone(),
                verify_hostname: true,
                ..SslConfig::default()
            };
            let mut config = tls::client_config(&trust).map_err(|e| match e {
                Error::Config { key, message } => Error::config(
                    key.replace("ssl.ca", "https.ca"),
                    format!("{message} (token endpoint)"),
                ),
                other => other,
            })?;
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            builder = builder.use_preconfigured_tls(config);
        }
        let http = builder.build().map_err(|e| {
            Error::config(
                "sasl.oauthbearer.token.endpoint.url",
                format!("cannot build the HTTP client: {e}"),
            )
        })?;
        Ok(Oidc {
            http,
            url,
            client_id,
            client_secret,
            scope: sasl.oauth_scope.clone(),
        })
    }

    /// Fetches a token.
    pub async fn fetch(&self) -> Result<OAuthToken> {
        let mut body = "grant_type=client_credentials".to_string();
        if let Some(scope) = &self.scope {
            body.push_str("&scope=");
            body.push_str(&form_encode(scope));
        }
        let basic = B64.encode(format!(
            "{}:{}",
            form_encode(&self.client_id),
            form_encode(self.client_secret.expose())
        ));
        let unreachable = |detail: String| Error::Connection {
            broker: format!("token endpoint {}", self.url),
            detail,
        };
        let response = self
            .http
            .post(&self.url)
            .header("Authorization", format!("Basic {basic}"))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .header("Accept", "application/json")
            .body(body)
            .send()
            .await
            // reqwest's errors name the URL, never the credentials.
            .map_err(|e| unreachable(e.without_url().to_string()))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| unreachable(e.without_url().to_string()))?;
        let refused = |detail: String| Error::SaslAuthentication {
            broker: format!("token endpoint {}", self.url),
            detail,
        };
        if status.is_server_error() {
            return Err(unreachable(format!("HTTP {status}")));
        }
        let json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|_| refused(format!("HTTP {status}: the answer is not JSON")))?;
        if !status.is_success() {
            let error = json["error"].as_str().unwrap_or("unknown error");
            let description = json["error_description"].as_str().unwrap_or("");
            return Err(refused(
                format!("HTTP {status}: {error} {description}")
                    .trim_end()
                    .to_string(),
            ));
        }
        let access = json["access_token"]
            .as_str()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| refused("the answer has no access_token".into()))?;
        let now = now_ms();
        let claims = jwt_claims(access);
        let expires_at_ms = claims
            .as_ref()
            .and_then(|c| c["exp"].as_i64())
            .map(|exp| exp * 1000)
            .or_else(|| json["expires_in"].as_i64().map(|s| now + s * 1000))
            .ok_or_else(|| refused("the token has neither an exp claim nor expires_in".into()))?;
        let principal = claims
            .as_ref()
            .and_then(|c| c["sub"].as_str().map(String::from))
            .unwrap_or_else(|| self.client_id.clone());
        Ok(OAuthToken {
            value: Secret::new(access),
            expires_at_ms,
            principal,
            extensions: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_values_are_percent_encoded() {
        assert_eq!(form_encode("a b:c/d+e"), "a%20b%3Ac%2Fd%2Be");
        assert_eq!(form_encode("Az09-._~"), "Az09-._~");
        let claims = jwt_claims("eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIiwiZXhwIjo1fQ.").unwrap();
        assert_eq!(claims["sub"], "a");
        assert!(jwt_claims("opaque").is_none());
    }

    #[test]
    fn missing_settings_are_named() {
        let err = Oidc::new(&SaslConfig::default()).unwrap_err();
        assert!(err
            .to_string()
            .contains("sasl.oauthbearer.token.endpoint.url"));
        let sasl = SaslConfig {
            oauth_token_endpoint: Some("http://127.0.0.1:1/token".into()),
            oauth_client_id: Some("c".into()),
            ..SaslConfig::default()
        };
        let err = Oidc::new(&sasl).unwrap_err();
        assert!(err.to_string().contains("sasl.oauthbearer.client.secret"));
    }
}
