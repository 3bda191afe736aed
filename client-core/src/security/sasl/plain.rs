//! PLAIN (RFC 4616): `\0user\0password` once; the server answers an empty message.

use super::exchange::{Exchange, Step};
use crate::security::Secret;
use crate::Result;

/// A PLAIN exchange.
#[derive(Debug)]
pub struct Plain {
    username: String,
    password: Secret,
}

impl Plain {
    /// An exchange for `username` / `password`.
    pub fn new(username: &str, password: &Secret) -> Self {
        Plain {
            username: username.to_string(),
            password: password.clone(),
        }
    }
}

impl Exchange for Plain {
    fn start(&mut self) -> Result<Vec<u8>> {
        let mut m = Vec::with_capacity(2 + self.username.len() + self.password.expose().len());
        m.push(0);
        m.extend_from_slice(self.username.as_bytes());
        m.push(0);
        m.extend_from_slice(self.password.expose().as_bytes());
        Ok(m)
    }

    fn step(&mut self, _challenge: &[u8]) -> Result<Step> {
        Ok(Step::Done)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn message_layout() {
        let mut p = Plain::new("alice", &Secret::new("pw"));
        assert_eq!(p.start().unwrap(), b"\0alice\0pw");
        assert_eq!(p.step(b"").unwrap(), Step::Done);
    }
}
