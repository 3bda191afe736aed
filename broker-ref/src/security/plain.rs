//! SASL/PLAIN (RFC 4616) as Kafka's `PlainSaslServer`: `[authzid] NUL authcid NUL passwd`,
//! users from the listener's JAAS options `user_<name>="<password>"`, Kafka's error texts.

use std::collections::BTreeMap;

use super::secret::{constant_time_eq, Secret};

/// A parsed PLAIN message.
#[derive(Debug, PartialEq, Eq)]
pub struct PlainMessage {
    /// The authorization id (may be empty).
    pub authzid: String,
    /// The user name.
    pub username: String,
    /// The password.
    pub password: Secret<String>,
}

/// Parses a PLAIN message; the error is Kafka's client-visible text.
pub fn parse(msg: &[u8]) -> Result<PlainMessage, String> {
    let text = String::from_utf8_lossy(msg);
    let tokens: Vec<&str> = text.split('\u{0}').collect();
    if tokens.len() != 3 {
        return Err(format!(
            "Invalid SASL/PLAIN response: expected 3 tokens, got {}",
            tokens.len()
        ));
    }
    Ok(PlainMessage {
        authzid: tokens[0].to_string(),
        username: tokens[1].to_string(),
        password: Secret::new(tokens[2].to_string()),
    })
}

/// Verifies a PLAIN message against `users`; returns the user name.
pub fn authenticate(
    msg: &[u8],
    users: &BTreeMap<String, Secret<String>>,
) -> Result<String, String> {
    let m = parse(msg)?;
    if m.username.is_empty() {
        return Err("Authentication failed: username not specified".into());
    }
    if m.password.expose().is_empty() {
        return Err("Authentication failed: password not specified".into());
    }
    let expected = users.get(&m.username);
    // Compare against something even for an unknown user, so timing says little.
    let ok = match expected {
        Some(p) => constant_time_eq(p.expose().as_bytes(), m.password.expose().as_bytes()),
        None => {
            let _ = constant_time_eq(
                m.password.expose().as_bytes(),
                m.password.expose().as_bytes(),
            );
            false
        }
    };
    if !ok {
        return Err("Authentication failed: Invalid username or password".into());
    }
    if !m.authzid.is_empty() && m.authzid != m.username {
        return Err(
            "Authentication failed: Client requested an authorization id that is different from username"
                .into(),
        );
    }
    Ok(m.username)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_like_kafka() {
        let users: BTreeMap<_, _> = [("alice".to_string(), Secret::from("alice-secret"))].into();
        assert_eq!(
            authenticate(b"\0alice\0alice-secret", &users).unwrap(),
            "alice"
        );
        assert_eq!(
            authenticate(b"alice\0alice\0alice-secret", &users).unwrap(),
            "alice"
        );
        let wrong = authenticate(b"\0alice\0nope", &users).unwrap_err();
        assert_eq!(wrong, "Authentication failed: Invalid username or password");
        assert_eq!(authenticate(b"\0bob\0x", &users).unwrap_err(), wrong);
        assert!(authenticate(b"bob\0alice\0alice-secret", &users)
            .unwrap_err()
            .contains("authorization id"));
        assert!(authenticate(b"alice", &users)
            .unwrap_err()
            .contains("expected 3 tokens, got 1"));
        assert!(authenticate(b"\0\0x", &users)
            .unwrap_err()
            .contains("username not specified"));
        assert!(authenticate(b"\0a\0", &users)
            .unwrap_err()
            .contains("password not specified"));
    }
}
