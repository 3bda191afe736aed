//! A SASL listener's settings (`sasl.enabled.mechanisms`, each mechanism's JAAS configuration,
//! the OAUTHBEARER validator, `connections.max.reauth.ms`, `sasl.server.max.receive.size`) and
//! one authentication exchange over them. The connection's state machine (which requests are
//! allowed when, re-authentication, closing) is `server::sasl`; this module is sans-IO except
//! for the JWKS fetch.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::credentials::CredentialStore;
use super::jaas::{self, JaasConfig};
use super::oauth::{self, JwksSettings, JwksValidator, UnsecuredValidator};
use super::principal::Principal;
use super::scram::{ScramError, ScramMechanism, ScramServer, ScramStep};
use super::secret::Secret;
use crate::config::BrokerConfig;
use crate::{Error, Result};

const PLAIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
const SCRAM_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";
const OAUTH_MODULE: &str = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";
const UNSECURED_HANDLER: &str =
    "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler";
const JWKS_HANDLERS: &[&str] = &[
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler",
];

/// How OAUTHBEARER tokens are validated on a listener.
#[derive(Debug)]
pub enum OAuthValidator {
    /// Kafka's default: unsecured JWTs (`alg: none`).
    Unsecured(UnsecuredValidator),
    /// Signed JWTs checked against a JWKS endpoint.
    Jwks(Arc<JwksValidator>),
}

/// One SASL listener's settings.
#[derive(Debug)]
pub struct SaslSettings {
    /// `sasl.enabled.mechanisms`, in the configured order.
    pub mechanisms: Vec<String>,
    plain_users: BTreeMap<String, Secret<String>>,
    scram: Arc<CredentialStore>,
    oauth: Option<OAuthValidator>,
    reauth_ms: BTreeMap<String, i64>,
    /// `sasl.server.max.receive.size`: a larger frame before authentication closes the connection.
    pub max_receive_size: usize,
    /// `connection.failed.authentication.delay.ms`: how long a failed connection is held open
    /// after its error response.
    pub failed_delay: Duration,
}

fn jaas_for(config: &BrokerConfig, listener: &str, mech: &str, module: &str) -> Result<JaasConfig> {
    let key = format!(
        "listener.name.{}.{}.sasl.jaas.config",
        listener.to_ascii_lowercase(),
        mech.to_ascii_lowercase()
    );
    let text = config.listener_get(listener, Some(mech), "sasl.jaas.config");
    if text.trim().is_empty() {
        return Err(Error::config(
            key,
            format!("listener {listener} enables {mech} but has no JAAS configuration ({module} required ...;)"),
        ));
    }
    let parsed = jaas::parse(text).map_err(|e| Error::config(key.clone(), e))?;
    if parsed.module != module {
        return Err(Error::config(
            key,
            format!(
                "{mech} needs the login module {module}, not {}",
                parsed.module
            ),
        ));
    }
    Ok(parsed)
}

impl SaslSettings {
    /// Reads and checks `listener`'s SASL settings; GSSAPI and unknown mechanisms fail here.
    pub fn build(
        config: &BrokerConfig,
        listener: &str,
        scram: Arc<CredentialStore>,
    ) -> Result<SaslSettings> {
        const KEY: &str = "sasl.enabled.mechanisms";
        let mechanisms: Vec<String> = config
            .listener_get(listener, None, KEY)
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if mechanisms.is_empty() {
            return Err(Error::config(
                KEY,
                format!("listener {listener} uses SASL but enables no mechanism"),
            ));
        }
        let mut plain_users = BTreeMap::new();
        let mut oauth = None;
        let mut reauth_ms = BTreeMap::new();
        for m in &mechanisms {
            match m.as_str() {
                "GSSAPI" => {
                    return Err(Error::config(
                        KEY,
                        format!(
                            "listener {listener}: GSSAPI (Kerberos) is not supported by odradek-broker; \
                             enable PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER (Kafka's default \
                             sasl.enabled.mechanisms is GSSAPI: set it explicitly)"
                        ),
                    ))
                }
                "PLAIN" => {
                    let j = jaas_for(config, listener, m, PLAIN_MODULE)?;
                    for (k, v) in &j.options {
                        if let Some(user) = k.strip_prefix("user_") {
                            plain_users.insert(user.to_string(), v.clone());
                        }
                    }
                }
                "SCRAM-SHA-256" | "SCRAM-SHA-512" => {
                    jaas_for(config, listener, m, SCRAM_MODULE)?;
                }
                "OAUTHBEARER" => {
                    let j = jaas_for(config, listener, m, OAUTH_MODULE)?;
                    oauth = Some(oauth_validator(config, listener, &j)?);
                }
                other => {
                    return Err(Error::config(
                        KEY,
                        format!("listener {listener}: unknown SASL mechanism {other} (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)"),
                    ))
                }
            }
            reauth_ms.insert(
                m.clone(),
                config
                    .listener_get(listener, Some(m), "connections.max.reauth.ms")
                    .trim()
                    .parse()
                    .unwrap_or(0),
            );
        }
        let max = config.listener_get(listener, None, "sasl.server.max.receive.size");
        let max_receive_size = max.trim().parse::<i64>().unwrap_or(524_288).max(1) as usize;
        let delay = config
            .get("connection.failed.authentication.delay.ms")
            .trim()
            .parse::<u64>()
            .unwrap_or(100);
        Ok(SaslSettings {
            mechanisms,
            plain_users,
            scram,
            oauth,
            reauth_ms,
            max_receive_size,
            failed_delay: Duration::from_millis(delay),
        })
    }

    /// Whether `mechanism` is enabled.
    pub fn enabled(&self, mechanism: &str) -> bool {
        self.mechanisms.iter().any(|m| m == mechanism)
    }

    /// `connections.max.reauth.ms` for `mechanism` (0 = sessions do not expire by config).
    pub fn reauth_ms(&self, mechanism: &str) -> i64 {
        self.reauth_ms.get(mechanism).copied().unwrap_or(0)
    }

    /// The JWKS validator, if the listener has one (started by the server).
    pub fn jwks(&self) -> Option<&Arc<JwksValidator>> {
        match &self.oauth {
            Some(OAuthValidator::Jwks(v)) => Some(v),
            _ => None,
        }
    }

    /// A new exchange for an enabled mechanism.
    pub fn exchange(&self, mechanism: &str) -> Option<Exchange> {
        if !self.enabled(mechanism) {
            return None;
        }
        Some(match mechanism {
            "PLAIN" => Exchange::Plain,
            "SCRAM-SHA-256" => Exchange::Scram(Box::new(ScramServer::new(ScramMechanism::Sha256))),
            "SCRAM-SHA-512" => Exchange::Scram(Box::new(ScramServer::new(ScramMechanism::Sha512))),
            "OAUTHBEARER" => Exchange::OAuth { error_sent: false },
            _ => return None,
        })
    }
}

fn oauth_validator(
    config: &BrokerConfig,
    listener: &str,
    jaas: &JaasConfig,
) -> Result<OAuthValidator> {
    let m = Some("OAUTHBEARER");
    let handler = config
        .listener_get(listener, m, "sasl.server.callback.handler.class")
        .trim();
    let url = config
        .listener_get(listener, m, "sasl.oauthbearer.jwks.endpoint.url")
        .trim();
    let jwks = if handler.is_empty() {
        !url.is_empty()
    } else if handler == UNSECURED_HANDLER {
        false
    } else if JWKS_HANDLERS.contains(&handler) {
        true
    } else {
        return Err(Error::config(
            "sasl.server.callback.handler.class",
            format!("listener {listener}: {handler} is not supported (the unsecured validator or OAuthBearerValidatorCallbackHandler with a JWKS endpoint)"),
        ));
    };
    if !jwks {
        let mut v = UnsecuredValidator::default();
        if let Some(c) = jaas.option("unsecuredValidatorPrincipalClaimName") {
            v.principal_claim = c.to_string();
        }
        if let Some(c) = jaas.option("unsecuredValidatorScopeClaimName") {
            v.scope_claim = c.to_string();
        }
        if let Some(s) = jaas.option("unsecuredValidatorRequiredScope") {
            v.required_scope = s
                .split([' ', ','])
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
        }
        if let Some(ms) = jaas.option("unsecuredValidatorAllowableClockSkewMs") {
            v.clock_skew_ms = ms.parse().map_err(|_| {
                Error::config(
                    "sasl.jaas.config",
                    "unsecuredValidatorAllowableClockSkewMs is not a number",
                )
            })?;
        }
        return Ok(OAuthValidator::Unsecured(v));
    }
    if url.is_empty() {
        return Err(Error::config(
            "sasl.oauthbearer.jwks.endpoint.url",
            format!("listener {listener}: OAuthBearerValidatorCallbackHandler needs sasl.oauthbearer.jwks.endpoint.url"),
        ));
    }
    if !(url.starts_with("http://") || url.starts_with("https://") || url.starts_with("file://")) {
        return Err(Error::config(
            "sasl.oauthbearer.jwks.endpoint.url",
            format!("`{url}` is not an http(s) or file URL"),
        ));
    }
    let get = |k: &str| config.listener_get(listener, m, k).trim().to_string();
    let settings = JwksSettings {
        url: url.to_string(),
        issuer: get("sasl.oauthbearer.expected.issuer"),
        audience: get("sasl.oauthbearer.expected.audience")
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
        sub_claim: get("sasl.oauthbearer.sub.claim.name"),
        scope_claim: get("sasl.oauthbearer.scope.claim.name"),
        clock_skew_s: get("sasl.oauthbearer.clock.skew.seconds")
            .parse()
            .unwrap_or(30),
        refresh: Duration::from_millis(
            get("sasl.oauthbearer.jwks.endpoint.refresh.ms")
                .parse()
                .unwrap_or(3_600_000),
        ),
        retry_backoff: Duration::from_millis(
            get("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms")
                .parse()
                .unwrap_or(100),
        ),
    };
    let roots = super::tls::trust_store(config, listener)?;
    let v = JwksValidator::new(settings, roots)
        .map_err(|e| Error::config("sasl.oauthbearer.jwks.endpoint.url", e))?;
    Ok(OAuthValidator::Jwks(v))
}

/// One mechanism's exchange state.
#[derive(Debug)]
pub enum Exchange {
    /// PLAIN: one message.
    Plain,
    /// SCRAM: two round trips.
    Scram(Box<ScramServer>),
    /// OAUTHBEARER: one message, or two when the token is refused (error JSON, then `\x01`).
    OAuth {
        /// Whether the error JSON was sent.
        error_sent: bool,
    },
}

/// What a step produced.
#[derive(Debug)]
pub enum Outcome {
    /// Send this token; the exchange continues.
    Challenge(Vec<u8>),
    /// Authenticated.
    Complete {
        /// Who.
        principal: Principal,
        /// The last token to send (may be empty).
        response: Vec<u8>,
        /// When the credential expires (ms since the epoch), for OAUTHBEARER tokens.
        credential_expires_ms: Option<i64>,
    },
}

/// Why authentication failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Kafka's SaslAuthenticationException: this text goes to the client.
    Message(String),
    /// Kafka's SaslException: the client gets "Authentication failed during authentication due
    /// to invalid credentials with SASL mechanism <M>" and nothing more.
    InvalidCredentials,
}

impl Exchange {
    /// Feeds one client token.
    pub async fn step(
        &mut self,
        settings: &SaslSettings,
        token: &[u8],
    ) -> std::result::Result<Outcome, Failure> {
        match self {
            Exchange::Plain => {
                let user = super::plain::authenticate(token, &settings.plain_users)
                    .map_err(Failure::Message)?;
                Ok(Outcome::Complete {
                    principal: Principal::user(user),
                    response: Vec::new(),
                    credential_expires_ms: None,
                })
            }
            Exchange::Scram(server) => {
                let store = &settings.scram;
                let mech = match server.mechanism_name() {
                    "SCRAM-SHA-512" => ScramMechanism::Sha512,
                    _ => ScramMechanism::Sha256,
                };
                match server.step(token, |u| store.get(u, mech)) {
                    Ok(ScramStep::Challenge(c)) => Ok(Outcome::Challenge(c)),
                    Ok(ScramStep::Complete { user, server_final }) => Ok(Outcome::Complete {
                        principal: Principal::user(user),
                        response: server_final,
                        credential_expires_ms: None,
                    }),
                    Err(ScramError::Invalid) => Err(Failure::InvalidCredentials),
                    Err(ScramError::Message(m)) => Err(Failure::Message(m)),
                }
            }
            Exchange::OAuth { error_sent } => {
                if *error_sent {
                    // The client's \x01 after our error JSON (or anything else): fail with it.
                    return Err(Failure::Message(oauth::invalid_token_json()));
                }
                let initial = oauth::parse_initial_response(token).map_err(|e| {
                    tracing::debug!(reason = %e, "OAUTHBEARER: malformed client message");
                    Failure::InvalidCredentials
                })?;
                let now = crate::clock::now_ms();
                let validated = match &settings.oauth {
                    Some(OAuthValidator::Unsecured(v)) => v.validate(initial.token.expose(), now),
                    Some(OAuthValidator::Jwks(v)) => v.validate(initial.token.expose(), now).await,
                    None => Err("no validator".to_string()),
                };
                match validated {
                    Ok(t) => {
                        if !initial.authzid.is_empty() && initial.authzid != t.principal {
                            return Err(Failure::Message(format!(
                                "Authentication failed: Client requested an authorization id ({}) that is different from the token's principal name ({})",
                                initial.authzid, t.principal
                            )));
                        }
                        Ok(Outcome::Complete {
                            principal: Principal::user(t.principal),
                            response: Vec::new(),
                            credential_expires_ms: Some(t.expires_ms),
                        })
                    }
                    Err(reason) => {
                        tracing::debug!(%reason, "OAUTHBEARER: token refused");
                        *error_sent = true;
                        Ok(Outcome::Challenge(oauth::invalid_token_json().into_bytes()))
                    }
                }
            }
        }
    }
}
