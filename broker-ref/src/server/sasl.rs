//! The SASL state machine of one connection on a SASL_PLAINTEXT / SASL_SSL listener, as
//! Kafka's `SaslServerAuthenticator`: before authentication only ApiVersions, SaslHandshake
//! (v0-1) and SaslAuthenticate (v0-2) are allowed and anything else closes the connection; a
//! SaslHandshake v0 switches to raw SASL tokens; an unknown mechanism is answered
//! UNSUPPORTED_SASL_MECHANISM, a failed exchange SASL_AUTHENTICATION_FAILED with Kafka's message,
//! and both then close; SaslAuthenticate v1+ answers `session_lifetime_ms` (KIP-368); a session
//! that expired without re-authentication is closed at its next request, and a SaslHandshake on
//! an authenticated connection starts a re-authentication that must keep mechanism and
//! principal.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, RequestKind, ResponseKind, SaslAuthenticateResponse, SaslHandshakeResponse,
};
use odradek::protocol::{decode_request, encode_response_kind, RequestPrefix};
use odradek::ErrorCode;

use crate::security::sasl::{Exchange, Failure, Outcome, SaslSettings};
use crate::security::Principal;

/// What the connection does with a frame.
#[derive(Debug)]
pub(super) enum GateAction {
    /// Not for the gate: dispatch it (ApiVersions before authentication, anything after).
    Pass,
    /// Write this frame and read on.
    Reply(Bytes),
    /// Authenticated (or re-authenticated): write this frame; requests now run as `principal`.
    Authenticated(Bytes, Principal),
    /// Write this frame (if any), wait `connection.failed.authentication.delay.ms`, close.
    Fail(Option<Bytes>, String),
    /// Close at once.
    Close(String),
    /// A request other than SaslAuthenticate in the middle of an exchange: answer it
    /// ILLEGAL_SASL_STATE in its own error shape (where the broker can build one), then close.
    IllegalState(String),
}

#[derive(Debug)]
enum State {
    /// Waiting for SaslHandshake (ApiVersions allowed).
    Handshake,
    /// Exchanging tokens; `kafka_headers` is false after a v0 handshake (raw tokens).
    Authenticate {
        mechanism: String,
        exchange: Box<Exchange>,
        kafka_headers: bool,
        bad_mechanism: Option<String>,
    },
    /// Authenticated.
    Complete,
}

/// One connection's SASL state.
#[derive(Debug)]
pub(super) struct SaslGate {
    settings: Arc<SaslSettings>,
    state: State,
    /// The authenticated principal and mechanism (kept through re-authentication).
    session: Option<(Principal, String)>,
    expires_at: Option<Instant>,
}

fn prefixed(body: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(4 + body.len());
    b.put_u32(body.len() as u32);
    b.extend_from_slice(body);
    b.freeze()
}

impl SaslGate {
    pub(super) fn new(settings: Arc<SaslSettings>) -> SaslGate {
        SaslGate {
            settings,
            state: State::Handshake,
            session: None,
            expires_at: None,
        }
    }

    /// Whether the connection is authenticated (not in the middle of an exchange).
    pub(super) fn authenticated(&self) -> bool {
        matches!(self.state, State::Complete)
    }

    /// `sasl.server.max.receive.size`.
    pub(super) fn max_receive_size(&self) -> usize {
        self.settings.max_receive_size
    }

    /// `connection.failed.authentication.delay.ms`.
    pub(super) fn failed_delay(&self) -> Duration {
        self.settings.failed_delay
    }

    fn mechanisms(&self) -> Vec<kafka_protocol::protocol::StrBytes> {
        self.settings
            .mechanisms
            .iter()
            .map(|m| kafka_protocol::protocol::StrBytes::from_string(m.clone()))
            .collect()
    }

    /// Handles one frame.
    pub(super) async fn on_frame(&mut self, frame: &Bytes) -> GateAction {
        // A v0 handshake: the frame is a raw token.
        if let State::Authenticate {
            kafka_headers: false,
            ..
        } = self.state
        {
            return self.raw_token(frame).await;
        }
        let prefix = match RequestPrefix::peek(frame) {
            Ok(p) => p,
            Err(e) => return GateAction::Close(format!("SASL: {e}")),
        };
        let key = prefix.api_key;
        match &self.state {
            State::Complete => {
                if key == ApiKey::SaslHandshake as i16 {
                    return self.handshake(frame, true);
                }
                if self.expires_at.is_some_and(|t| Instant::now() >= t) {
                    return GateAction::Close(
                        "the SASL session expired without re-authentication (connections.max.reauth.ms)".into(),
                    );
                }
                GateAction::Pass
            }
            State::Handshake => {
                if key == ApiKey::ApiVersions as i16 {
                    GateAction::Pass
                } else if key == ApiKey::SaslHandshake as i16 {
                    self.handshake(frame, false)
                } else {
                    GateAction::Close(format!(
                        "Unexpected Kafka request of type {} during SASL handshake.",
                        odradek::protocol::api_name(key)
                    ))
                }
            }
            State::Authenticate { .. } => {
                if key != ApiKey::SaslAuthenticate as i16 {
                    return GateAction::IllegalState(format!(
                        "Unexpected Kafka request of type {} during SASL authentication.",
                        odradek::protocol::api_name(key)
                    ));
                }
                self.authenticate(frame).await
            }
        }
    }

    fn handshake(&mut self, frame: &Bytes, reauth: bool) -> GateAction {
        let request = match decode_request(frame.clone()) {
            Ok(r) => r,
            Err(e) => return GateAction::Close(format!("SASL: {e}")),
        };
        let RequestKind::SaslHandshake(body) = request.body else {
            return GateAction::Close("SASL: not a SaslHandshake".into());
        };
        let version = request.header.request_api_version;
        let corr = request.header.correlation_id;
        let mechanism = body.mechanism.to_string();
        let encode = |code: ErrorCode| {
            let response = SaslHandshakeResponse::default()
                .with_error_code(code.code())
                .with_mechanisms(self.mechanisms());
            encode_response_kind(
                ApiKey::SaslHandshake,
                version,
                corr,
                &ResponseKind::SaslHandshake(response),
            )
        };
        if reauth && version < 1 {
            return GateAction::Close("re-authentication needs SaslHandshake v1".into());
        }
        let Some(exchange) = self.settings.exchange(&mechanism) else {
            tracing::info!(%mechanism, "SASL mechanism requested by client is not enabled");
            return match encode(ErrorCode::UnsupportedSaslMechanism) {
                Ok(f) => {
                    GateAction::Fail(Some(f), format!("Unsupported SASL mechanism {mechanism}"))
                }
                Err(e) => GateAction::Close(e.to_string()),
            };
        };
        let bad_mechanism = match &self.session {
            Some((_, previous)) if reauth && *previous != mechanism => Some(format!(
                "SASL mechanism '{mechanism}' requested by client is not supported for re-authentication of mechanism '{previous}'"
            )),
            _ => None,
        };
        match encode(ErrorCode::NoError) {
            Ok(f) => {
                self.state = State::Authenticate {
                    mechanism,
                    exchange: Box::new(exchange),
                    kafka_headers: version >= 1,
                    bad_mechanism,
                };
                GateAction::Reply(f)
            }
            Err(e) => GateAction::Close(e.to_string()),
        }
    }

    async fn authenticate(&mut self, frame: &Bytes) -> GateAction {
        let request = match decode_request(frame.clone()) {
            Ok(r) => r,
            Err(e) => return GateAction::Close(format!("SASL: {e}")),
        };
        let RequestKind::SaslAuthenticate(body) = request.body else {
            return GateAction::Close("SASL: not a SaslAuthenticate".into());
        };
        let version = request.header.request_api_version;
        let corr = request.header.correlation_id;
        let encode = |r: SaslAuthenticateResponse| {
            encode_response_kind(
                ApiKey::SaslAuthenticate,
                version,
                corr,
                &ResponseKind::SaslAuthenticate(r),
            )
        };
        let failed = |message: String| {
            let r = SaslAuthenticateResponse::default()
                .with_error_code(ErrorCode::SaslAuthenticationFailed.code())
                .with_error_message(Some(kafka_protocol::protocol::StrBytes::from_string(
                    message.clone(),
                )));
            GateAction::Fail(encode(r).ok(), message)
        };
        match self.step(&body.auth_bytes).await {
            Ok(StepResult::Challenge(token)) => match encode(
                SaslAuthenticateResponse::default().with_auth_bytes(Bytes::from(token)),
            ) {
                Ok(f) => GateAction::Reply(f),
                Err(e) => GateAction::Close(e.to_string()),
            },
            Ok(StepResult::Complete {
                principal,
                token,
                lifetime_ms,
            }) => match encode(
                SaslAuthenticateResponse::default()
                    .with_auth_bytes(Bytes::from(token))
                    .with_session_lifetime_ms(lifetime_ms),
            ) {
                Ok(f) => GateAction::Authenticated(f, principal),
                Err(e) => GateAction::Close(e.to_string()),
            },
            Err(message) => failed(message),
        }
    }

    async fn raw_token(&mut self, frame: &Bytes) -> GateAction {
        match self.step(frame).await {
            Ok(StepResult::Challenge(token)) => GateAction::Reply(prefixed(&token)),
            Ok(StepResult::Complete {
                principal, token, ..
            }) => GateAction::Authenticated(prefixed(&token), principal),
            Err(message) => GateAction::Fail(None, message),
        }
    }

    async fn step(&mut self, token: &[u8]) -> Result<StepResult, String> {
        let State::Authenticate {
            mechanism,
            exchange,
            bad_mechanism,
            ..
        } = &mut self.state
        else {
            return Err("no SASL exchange in progress".into());
        };
        let mechanism = mechanism.clone();
        if let Some(m) = bad_mechanism.take() {
            return Err(m);
        }
        let text = if self.session.is_some() {
            "re-authentication"
        } else {
            "authentication"
        };
        match exchange.step(&self.settings, token).await {
            Ok(Outcome::Challenge(c)) => Ok(StepResult::Challenge(c)),
            Ok(Outcome::Complete { principal, response, credential_expires_ms }) => {
                if let Some((previous, _)) = &self.session {
                    if *previous != principal {
                        return Err(format!(
                            "Cannot change principals during re-authentication from {}.{}: {}.{}",
                            previous.principal_type, previous.name, principal.principal_type, principal.name
                        ));
                    }
                }
                let now = crate::clock::now_ms();
                let reauth = self.settings.reauth_ms(&mechanism);
                let lifetime = match (credential_expires_ms, reauth > 0) {
                    (None, false) => None,
                    (None, true) => Some(reauth),
                    (Some(exp), false) => Some((exp - now).max(0)),
                    (Some(exp), true) => Some((exp - now).min(reauth).max(0)),
                };
                self.expires_at = lifetime.map(|ms| Instant::now() + Duration::from_millis(ms as u64));
                tracing::debug!(%principal, %mechanism, lifetime_ms = ?lifetime, "SASL {text} complete");
                self.session = Some((principal.clone(), mechanism));
                self.state = State::Complete;
                Ok(StepResult::Complete {
                    principal,
                    token: response,
                    lifetime_ms: lifetime.unwrap_or(0),
                })
            }
            Err(Failure::Message(m)) => Err(m),
            Err(Failure::InvalidCredentials) => Err(format!(
                "Authentication failed during {text} due to invalid credentials with SASL mechanism {mechanism}"
            )),
        }
    }
}

enum StepResult {
    Challenge(Vec<u8>),
    Complete {
        principal: Principal,
        token: Vec<u8>,
        lifetime_ms: i64,
    },
}
