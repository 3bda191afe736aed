//! SASL/OAUTHBEARER (RFC 7628) on the server: the client's initial response
//! (`n,[a=authzid],\x01auth=Bearer <token>\x01[key=value\x01]*\x01`) and two validators:
//! Kafka's default unsecured one (`OAuthBearerUnsecuredValidatorCallbackHandler`: an unsecured
//! JWT with `alg: none`, `exp` and the principal claim required) and JWKS validation of signed
//! tokens (`OAuthBearerValidatorCallbackHandler`, KIP-768: keys fetched from
//! `sasl.oauthbearer.jwks.endpoint.url`, cached, refreshed; issuer, audience, expiry and the
//! `sasl.oauthbearer.sub.claim.name` claim checked). A refused token is answered with RFC 7628's
//! JSON error (`{"status":"invalid_token"}`), which the client acknowledges with `\x01`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use base64::Engine;

use super::secret::Secret;

/// A parsed client initial response.
#[derive(Debug, PartialEq, Eq)]
pub struct InitialResponse {
    /// The authorization id (empty when none).
    pub authzid: String,
    /// The bearer token.
    pub token: Secret<String>,
    /// SASL extensions other than `auth`.
    pub extensions: Vec<(String, String)>,
}

/// Parses the client's initial response; the error is Kafka's text.
pub fn parse_initial_response(msg: &[u8]) -> Result<InitialResponse, String> {
    const INVALID: &str = "Invalid OAUTHBEARER client first message";
    let text = std::str::from_utf8(msg).map_err(|_| INVALID.to_string())?;
    let rest = text.strip_prefix("n,").ok_or(INVALID)?;
    let (authzid, rest) = match rest.strip_prefix("a=") {
        Some(r) => {
            let (a, r) = r.split_once(',').ok_or(INVALID)?;
            if a.is_empty() {
                return Err(INVALID.into());
            }
            (a.replace("=2C", ",").replace("=3D", "="), r)
        }
        None => (String::new(), rest.strip_prefix(',').ok_or(INVALID)?),
    };
    let body = rest.strip_prefix('\u{1}').ok_or(INVALID)?;
    let body = body.strip_suffix('\u{1}').ok_or(INVALID)?;
    let mut token = None;
    let mut extensions = Vec::new();
    for kv in body.split('\u{1}') {
        if kv.is_empty() {
            continue;
        }
        let (k, v) = kv.split_once('=').ok_or(INVALID)?;
        if k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(INVALID.into());
        }
        if k == "auth" {
            token = Some(v.to_string());
        } else {
            extensions.push((k.to_string(), v.to_string()));
        }
    }
    let auth = token.ok_or("Invalid OAUTHBEARER client first message: 'auth' not specified")?;
    let (scheme, value) = auth
        .split_once(' ')
        .ok_or("Invalid OAUTHBEARER client first message: invalid 'auth' format")?;
    let value = value.trim_start_matches(' ');
    let token_ok = !value.is_empty()
        && value
            .trim_end_matches('=')
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b));
    if !token_ok {
        return Err("Invalid OAUTHBEARER client first message: invalid 'auth' format".into());
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(format!(
            "Invalid scheme in OAUTHBEARER client first message: {scheme}"
        ));
    }
    Ok(InitialResponse {
        authzid,
        token: Secret::new(value.to_string()),
        extensions,
    })
}

/// A validated token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidToken {
    /// The principal name (the configured claim).
    pub principal: String,
    /// When the token expires (ms since the epoch).
    pub expires_ms: i64,
}

/// RFC 7628's error JSON for an invalid token.
pub fn invalid_token_json() -> String {
    r#"{"status":"invalid_token"}"#.to_string()
}

/// Kafka's unsecured validator and its JAAS options.
#[derive(Debug, Clone)]
pub struct UnsecuredValidator {
    /// `unsecuredValidatorPrincipalClaimName` (default `sub`).
    pub principal_claim: String,
    /// `unsecuredValidatorScopeClaimName` (default `scope`).
    pub scope_claim: String,
    /// `unsecuredValidatorRequiredScope` (space-separated).
    pub required_scope: Vec<String>,
    /// `unsecuredValidatorAllowableClockSkewMs` (default 0).
    pub clock_skew_ms: i64,
}

impl Default for UnsecuredValidator {
    fn default() -> Self {
        UnsecuredValidator {
            principal_claim: "sub".into(),
            scope_claim: "scope".into(),
            required_scope: Vec::new(),
            clock_skew_ms: 0,
        }
    }
}

fn decode_json_part(part: &str) -> Option<serde_json::Value> {
    let bytes = B64URL.decode(part.trim_end_matches('=')).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn scopes(claims: &serde_json::Value, claim: &str) -> Vec<String> {
    match claims.get(claim) {
        Some(serde_json::Value::String(s)) => s
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        Some(serde_json::Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

impl UnsecuredValidator {
    /// Validates an unsecured JWT; the error says why (logged at debug, never sent: the client
    /// gets the RFC 7628 JSON).
    pub fn validate(&self, token: &str, now_ms: i64) -> Result<ValidToken, String> {
        let parts: Vec<&str> = token.split('.').collect();
        if parts.len() != 3 {
            return Err(format!(
                "an unsecured JWS has 3 parts, this one {}",
                parts.len()
            ));
        }
        if !parts[2].is_empty() {
            return Err("an unsecured JWS has an empty signature".into());
        }
        let header = decode_json_part(parts[0]).ok_or("the JOSE header is not base64url JSON")?;
        if header.get("alg").and_then(|a| a.as_str()) != Some("none") {
            return Err("the JOSE header's alg is not \"none\"".into());
        }
        let claims = decode_json_part(parts[1]).ok_or("the claims are not base64url JSON")?;
        let exp = claims
            .get("exp")
            .and_then(|e| e.as_f64())
            .ok_or("no expiration time (exp) in the token")?;
        let expires_ms = (exp * 1000.0) as i64;
        if now_ms > expires_ms.saturating_add(self.clock_skew_ms) {
            return Err("the token is past its expiration time".into());
        }
        if let Some(iat) = claims.get("iat") {
            let iat = iat.as_f64().ok_or("iat is not a number")?;
            if (iat * 1000.0) as i64 > now_ms.saturating_add(self.clock_skew_ms) {
                return Err("the token was issued in the future".into());
            }
        }
        let principal = claims
            .get(&self.principal_claim)
            .and_then(|s| s.as_str())
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| format!("no string claim {} in the token", self.principal_claim))?;
        let have = scopes(&claims, &self.scope_claim);
        if let Some(missing) = self.required_scope.iter().find(|s| !have.contains(s)) {
            return Err(format!("the token lacks the required scope {missing}"));
        }
        Ok(ValidToken {
            principal: principal.to_string(),
            expires_ms,
        })
    }
}

/// JWKS validation settings (Kafka's `sasl.oauthbearer.*` broker keys).
#[derive(Debug, Clone)]
pub struct JwksSettings {
    /// `sasl.oauthbearer.jwks.endpoint.url` (http, https or file).
    pub url: String,
    /// `sasl.oauthbearer.expected.issuer` (empty: not checked).
    pub issuer: String,
    /// `sasl.oauthbearer.expected.audience` (empty: not checked).
    pub audience: Vec<String>,
    /// `sasl.oauthbearer.sub.claim.name`.
    pub sub_claim: String,
    /// `sasl.oauthbearer.scope.claim.name`.
    pub scope_claim: String,
    /// `sasl.oauthbearer.clock.skew.seconds`.
    pub clock_skew_s: u64,
    /// `sasl.oauthbearer.jwks.endpoint.refresh.ms`.
    pub refresh: Duration,
    /// `sasl.oauthbearer.jwks.endpoint.retry.backoff.ms`: the least time between fetches
    /// triggered by an unknown key id.
    pub retry_backoff: Duration,
}

/// Signed-token validation against a JWKS endpoint, keys cached by key id.
#[derive(Debug)]
pub struct JwksValidator {
    settings: JwksSettings,
    keys: RwLock<HashMap<String, jsonwebtoken::jwk::Jwk>>,
    last_fetch: Mutex<Option<Instant>>,
    client: reqwest::Client,
}

impl JwksValidator {
    /// A validator; `roots` verifies an https endpoint.
    pub fn new(
        settings: JwksSettings,
        roots: Option<rustls::RootCertStore>,
    ) -> Result<Arc<JwksValidator>, String> {
        let tls = rustls::ClientConfig::builder_with_provider(super::tls::provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots.unwrap_or_else(rustls::RootCertStore::empty))
            .with_no_client_auth();
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Arc::new(JwksValidator {
            settings,
            keys: RwLock::new(HashMap::new()),
            last_fetch: Mutex::new(None),
            client,
        }))
    }

    /// The settings.
    pub fn settings(&self) -> &JwksSettings {
        &self.settings
    }

    /// Fetches the key set now and replaces the cache.
    pub async fn refresh(&self) -> Result<usize, String> {
        *self.last_fetch.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        let url = &self.settings.url;
        let body = if let Some(path) = url.strip_prefix("file://") {
            tokio::fs::read(path)
                .await
                .map_err(|e| format!("cannot read {path}: {e}"))?
        } else {
            let resp = self
                .client
                .get(url)
                .send()
                .await
                .map_err(|e| format!("GET {url}: {e}"))?;
            if !resp.status().is_success() {
                return Err(format!("GET {url}: HTTP {}", resp.status()));
            }
            resp.bytes()
                .await
                .map_err(|e| format!("GET {url}: {e}"))?
                .to_vec()
        };
        let set: jsonwebtoken::jwk::JwkSet =
            serde_json::from_slice(&body).map_err(|e| format!("{url} is not a JWK set: {e}"))?;
        let mut keys = HashMap::new();
        for (i, k) in set.keys.into_iter().enumerate() {
            let id = k.common.key_id.clone().unwrap_or_else(|| format!("#{i}"));
            keys.insert(id, k);
        }
        let n = keys.len();
        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = keys;
        Ok(n)
    }

    /// Refreshes every `refresh` interval, until the validator is dropped elsewhere.
    pub fn spawn_refresher(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let every = self.settings.refresh.max(Duration::from_millis(100));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(v) = weak.upgrade() else { return };
                if let Err(e) = v.refresh().await {
                    tracing::warn!(error = %e, "JWKS refresh failed; keeping the cached keys");
                }
            }
        });
    }

    fn key_for(&self, kid: Option<&str>) -> Option<jsonwebtoken::jwk::Jwk> {
        let keys = self.keys.read().unwrap_or_else(|e| e.into_inner());
        match kid {
            Some(k) => keys.get(k).cloned(),
            None if keys.len() == 1 => keys.values().next().cloned(),
            None => None,
        }
    }

    /// Validates a signed token.
    pub async fn validate(&self, token: &str, now_ms: i64) -> Result<ValidToken, String> {
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| format!("bad JOSE header: {e}"))?;
        let mut jwk = self.key_for(header.kid.as_deref());
        if jwk.is_none() {
            let recent = self
                .last_fetch
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_some_and(|t| t.elapsed() < self.settings.retry_backoff);
            if !recent {
                if let Err(e) = self.refresh().await {
                    tracing::warn!(error = %e, "JWKS fetch for an unknown key id failed");
                }
                jwk = self.key_for(header.kid.as_deref());
            }
        }
        let jwk = jwk.ok_or_else(|| format!("no JWKS key with id {:?}", header.kid))?;
        let key =
            jsonwebtoken::DecodingKey::from_jwk(&jwk).map_err(|e| format!("unusable JWK: {e}"))?;
        let mut v = jsonwebtoken::Validation::new(header.alg);
        v.leeway = self.settings.clock_skew_s;
        v.set_required_spec_claims(&["exp"]);
        if self.settings.issuer.is_empty() {
            v.iss = None;
        } else {
            v.set_issuer(&[self.settings.issuer.as_str()]);
        }
        if self.settings.audience.is_empty() {
            v.validate_aud = false;
        } else {
            v.set_audience(&self.settings.audience);
        }
        let data = jsonwebtoken::decode::<serde_json::Value>(token, &key, &v)
            .map_err(|e| format!("token rejected: {e}"))?;
        let claims = data.claims;
        let _ = now_ms;
        let exp = claims.get("exp").and_then(|e| e.as_f64()).ok_or("no exp")?;
        let principal = claims
            .get(&self.settings.sub_claim)
            .and_then(|s| s.as_str())
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| format!("no string claim {} in the token", self.settings.sub_claim))?;
        Ok(ValidToken {
            principal: principal.to_string(),
            expires_ms: (exp * 1000.0) as i64,
        })
    }
}

/// Makes an unsecured JWT (tests, the dev-security printout).
pub fn unsecured_token(sub: &str, exp_s: i64) -> String {
    let header = B64URL.encode(br#"{"alg":"none"}"#);
    let claims = B64URL
        .encode(serde_json::json!({"sub": sub, "exp": exp_s, "iat": exp_s - 3600}).to_string());
    format!("{header}.{claims}.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_response_parsing() {
        let r = parse_initial_response(b"n,,\x01auth=Bearer abc.def.\x01\x01").unwrap();
        assert_eq!(r.token.expose(), "abc.def.");
        assert!(r.authzid.is_empty());
        let r = parse_initial_response(b"n,a=alice,\x01auth=Bearer t\x01ext=v\x01\x01").unwrap();
        assert_eq!(r.authzid, "alice");
        assert_eq!(r.extensions, vec![("ext".into(), "v".into())]);
        for bad in [
            &b"y,,\x01auth=Bearer t\x01\x01"[..],
            b"n,,\x01\x01",
            b"n,,\x01auth=Basic t\x01\x01",
            b"n,,auth=Bearer t",
            b"n,,\x01auth=Bearer \x01\x01",
            b"n,,\x01auth=Bearer a b\x01\x01",
        ] {
            assert!(
                parse_initial_response(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert!(parse_initial_response(b"n,,\x01auth=Basic t\x01\x01")
            .unwrap_err()
            .contains("Invalid scheme"));
    }

    #[test]
    fn unsecured_validator_like_kafka() {
        let v = UnsecuredValidator::default();
        let now = 1_700_000_000_000;
        let t = unsecured_token("alice", now / 1000 + 60);
        assert_eq!(v.validate(&t, now).unwrap().principal, "alice");
        assert!(v
            .validate(&unsecured_token("alice", now / 1000 - 1), now)
            .unwrap_err()
            .contains("expiration"));
        let signed = format!("{}{}", &t[..t.len() - 1], ".c2ln");
        assert!(v.validate(&signed, now).is_err());
        let hs = format!(
            "{}.{}.",
            B64URL.encode(br#"{"alg":"HS256"}"#),
            t.split('.').nth(1).unwrap()
        );
        assert!(v.validate(&hs, now).unwrap_err().contains("alg"));
        let no_sub = format!(
            "{}.{}.",
            B64URL.encode(br#"{"alg":"none"}"#),
            B64URL.encode(br#"{"exp":99999999999}"#)
        );
        assert!(v.validate(&no_sub, now).unwrap_err().contains("sub"));
        let scoped = UnsecuredValidator {
            required_scope: vec!["kafka".into()],
            ..UnsecuredValidator::default()
        };
        assert!(scoped.validate(&t, now).unwrap_err().contains("scope"));
    }
}
