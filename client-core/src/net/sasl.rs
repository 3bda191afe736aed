//! SASL authentication of a connection (KIP-43 / KIP-152): SaslHandshake (v1) names the
//! mechanism, then SaslAuthenticate requests carry the mechanism's messages until it is done.
//! The broker's `session_lifetime_ms` (SaslAuthenticate v1+) schedules a re-authentication on
//! the same connection before the session ends (KIP-368): new requests wait while in-flight
//! ones finish, the exchange runs, and the pipeline resumes; if it fails the connection closes
//! and callers reconnect.

use std::sync::{Arc, Weak};
use std::time::Duration;

use kafka_protocol::messages::{ApiKey, SaslAuthenticateRequest, SaslHandshakeRequest};
use kafka_protocol::protocol::StrBytes;

use super::connection::Connection;
use crate::security::sasl::Step;
use crate::security::{self, SecurityConfig};
use crate::{Error, ErrorCode, Result};

/// The most messages an exchange may take (SCRAM needs two; a broker that keeps asking is
/// refused rather than looped on).
const MAX_ROUNDS: usize = 8;

fn failed(conn: &Connection, detail: impl Into<String>) -> Error {
    Error::SaslAuthentication {
        broker: conn.addr().to_string(),
        detail: detail.into(),
    }
}

/// Authenticates `conn` with the configured mechanism. Returns the session lifetime the broker
/// granted, if any. `privileged`: the caller holds every in-flight slot (re-authentication).
pub(crate) async fn authenticate(
    conn: &Connection,
    security: &SecurityConfig,
    privileged: bool,
) -> Result<Option<Duration>> {
    let mechanism = security
        .sasl
        .mechanism
        .ok_or_else(|| Error::config("sasl.mechanism", "GSSAPI (Kerberos) is not supported"))?;
    let handshake_version = conn.versions().version(ApiKey::SaslHandshake)?;
    if handshake_version < 1 {
        return Err(failed(
            conn,
            "the broker only offers SaslHandshake v0 (raw SASL tokens), which is not supported",
        ));
    }
    let handshake =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism.name()));
    let response = if privileged {
        conn.send_privileged(&handshake, 1).await?
    } else {
        conn.send_versioned(&handshake, 1).await?
    };
    match ErrorCode::from_code(response.error_code) {
        ErrorCode::NoError => {}
        ErrorCode::UnsupportedSaslMechanism => {
            let offered: Vec<String> = response.mechanisms.iter().map(|m| m.to_string()).collect();
            return Err(failed(
                conn,
                format!(
                    "the broker does not enable {} (it offers {})",
                    mechanism.name(),
                    if offered.is_empty() {
                        "none".to_string()
                    } else {
                        offered.join(", ")
                    }
                ),
            ));
        }
        code => return Err(failed(conn, format!("SaslHandshake answered {code}"))),
    }
    let version = conn.versions().version(ApiKey::SaslAuthenticate)?;
    let mut exchange = security::new_exchange(security)
        .await
        .map_err(|e| match e {
            Error::SaslAuthentication { detail, .. } => failed(conn, detail),
            other => other,
        })?;
    let mut message = exchange.start()?;
    for _ in 0..MAX_ROUNDS {
        let request = SaslAuthenticateRequest::default().with_auth_bytes(message.into());
        let response = if privileged {
            conn.send_privileged(&request, version).await?
        } else {
            conn.send_versioned(&request, version).await?
        };
        let code = ErrorCode::from_code(response.error_code);
        if !code.is_ok() {
            let text = response
                .error_message
                .as_ref()
                .map(|m| m.to_string())
                .unwrap_or_else(|| code.name().to_string());
            return Err(failed(conn, format!("{code}: {text}")));
        }
        let lifetime_ms = response.session_lifetime_ms;
        match exchange.step(&response.auth_bytes).map_err(|e| match e {
            Error::SaslAuthentication { detail, .. } => failed(conn, detail),
            other => other,
        })? {
            Step::Send(next) => message = next,
            Step::Done => {
                tracing::debug!(
                    broker = conn.addr(),
                    mechanism = mechanism.name(),
                    lifetime_ms,
                    "SASL authentication done"
                );
                return Ok((lifetime_ms > 0).then(|| Duration::from_millis(lifetime_ms as u64)));
            }
        }
    }
    Err(failed(
        conn,
        format!(
            "{} did not finish within {MAX_ROUNDS} messages",
            mechanism.name()
        ),
    ))
}

/// When to re-authenticate: at 90% of the session (librdkafka's rule), at least 100 ms on.
fn reauth_delay(lifetime: Duration) -> Duration {
    (lifetime * 9 / 10).max(Duration::from_millis(100))
}

/// Re-authenticates `conn` before each session it is granted ends, for as long as it lives.
pub(crate) fn schedule_reauthentication(
    conn: &Arc<Connection>,
    security: SecurityConfig,
    lifetime: Duration,
) {
    let weak: Weak<Connection> = Arc::downgrade(conn);
    tokio::spawn(async move {
        let mut delay = reauth_delay(lifetime);
        loop {
            tokio::time::sleep(delay).await;
            let Some(conn) = weak.upgrade() else { return };
            if conn.is_closed() {
                return;
            }
            let outcome = async {
                let _all_slots = conn.quiesce().await?;
                authenticate(&conn, &security, true).await
            }
            .await;
            if outcome.is_ok() {
                conn.stats
                    .reauthentications
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            match outcome {
                Ok(Some(next)) => delay = reauth_delay(next),
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(broker = conn.addr(), error = %e, "SASL re-authentication failed; closing the connection");
                    conn.close("re-authentication failed");
                    return;
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reauthentication_is_due_at_90_percent() {
        assert_eq!(
            reauth_delay(Duration::from_secs(100)),
            Duration::from_secs(90)
        );
        assert_eq!(
            reauth_delay(Duration::from_millis(10)),
            Duration::from_millis(100)
        );
    }
}
