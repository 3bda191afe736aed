//! SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677), client side: a fresh nonce per
//! exchange, the salted password computed with the server's salt and iteration count, the
//! client proof, and the server's signature checked before the exchange counts as done.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

use super::exchange::{failure, Exchange, Step};
use crate::security::Secret;
use crate::Result;

/// Iteration counts a client accepts: Kafka's minimum (4096), and a ceiling so a hostile
/// server cannot make the client spin (Kafka's own maximum is 16384).
const MIN_ITERATIONS: u32 = 4096;
const MAX_ITERATIONS: u32 = 1_000_000;

/// The hash of a SCRAM mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScramHash {
    /// SCRAM-SHA-256.
    Sha256,
    /// SCRAM-SHA-512.
    Sha512,
}

impl ScramHash {
    fn hmac(self, key: &[u8], data: &[u8]) -> Result<Vec<u8>> {
        // HMAC takes keys of any length; the error branch cannot happen.
        let bad_key = |_| failure("HMAC key rejected");
        Ok(match self {
            ScramHash::Sha256 => {
                let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).map_err(bad_key)?;
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
            ScramHash::Sha512 => {
                let mut m = <Hmac<Sha512> as Mac>::new_from_slice(key).map_err(bad_key)?;
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
        })
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramHash::Sha256 => Sha256::digest(data).to_vec(),
            ScramHash::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// Hi() of RFC 5802: PBKDF2 with HMAC of this hash.
    pub(crate) fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            ScramHash::Sha256 => {
                let mut out = vec![0u8; 32];
                pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out);
                out
            }
            ScramHash::Sha512 => {
                let mut out = vec![0u8; 64];
                pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut out);
                out
            }
        }
    }
}

/// `saslname` of RFC 5802: `=` and `,` escaped.
fn sasl_name(user: &str) -> String {
    user.replace('=', "=3D").replace(',', "=2C")
}

/// A fresh printable nonce (24 random bytes, base64).
fn nonce() -> Result<String> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(|e| failure(format!("no randomness for a nonce: {e}")))?;
    Ok(B64.encode(bytes))
}

#[derive(Debug)]
enum State {
    Initial,
    /// Sent client-first; `bare` is client-first-message-bare.
    SentFirst {
        bare: String,
    },
    /// Sent client-final; the server's signature to expect.
    SentFinal {
        server_signature: Vec<u8>,
    },
    Done,
}

/// A SCRAM exchange.
#[derive(Debug)]
pub struct Scram {
    hash: ScramHash,
    username: String,
    password: Secret,
    client_nonce: Option<String>,
    state: State,
}

impl Scram {
    /// An exchange for `username` / `password` with a fresh nonce.
    pub fn new(hash: ScramHash, username: &str, password: &Secret) -> Self {
        Scram {
            hash,
            username: username.to_string(),
            password: password.clone(),
            client_nonce: None,
            state: State::Initial,
        }
    }

    #[cfg(test)]
    fn with_nonce(mut self, nonce: &str) -> Self {
        self.client_nonce = Some(nonce.to_string());
        self
    }
}

/// The attributes of a server message (`k=v,k=v`), by their one-letter names.
fn attributes(msg: &str) -> Vec<(char, &str)> {
    msg.split(',')
        .filter_map(|part| {
            let mut chars = part.chars();
            let k = chars.next()?;
            (part.as_bytes().get(1) == Some(&b'=')).then(|| (k, &part[2..]))
        })
        .collect()
}

fn attribute<'a>(attrs: &[(char, &'a str)], key: char) -> Option<&'a str> {
    attrs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

impl Exchange for Scram {
    fn start(&mut self) -> Result<Vec<u8>> {
        let nonce = match &self.client_nonce {
            Some(n) => n.clone(),
            None => nonce()?,
        };
        let bare = format!("n={},r={nonce}", sasl_name(&self.username));
        let first = format!("n,,{bare}");
        self.client_nonce = Some(nonce);
        self.state = State::SentFirst { bare };
        Ok(first.into_bytes())
    }

    fn step(&mut self, challenge: &[u8]) -> Result<Step> {
        let msg = std::str::from_utf8(challenge)
            .map_err(|_| failure("SCRAM server message is not UTF-8"))?;
        let attrs = attributes(msg);
        if let Some(e) = attribute(&attrs, 'e') {
            return Err(failure(format!("SCRAM server error: {e}")));
        }
        match std::mem::replace(&mut self.state, State::Done) {
            State::SentFirst { bare } => {
                let nonce = attribute(&attrs, 'r')
                    .ok_or_else(|| failure("SCRAM server-first message has no nonce"))?;
                let ours = self.client_nonce.as_deref().unwrap_or_default();
                if !nonce.starts_with(ours) || nonce.len() == ours.len() {
                    return Err(failure("SCRAM server nonce does not extend the client's"));
                }
                let salt = attribute(&attrs, 's')
                    .and_then(|s| B64.decode(s).ok())
                    .ok_or_else(|| failure("SCRAM server-first message has no valid salt"))?;
                let iterations: u32 = attribute(&attrs, 'i')
                    .and_then(|i| i.parse().ok())
                    .ok_or_else(|| failure("SCRAM server-first message has no iteration count"))?;
                if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
                    return Err(failure(format!(
                        "SCRAM iteration count {iterations} outside {MIN_ITERATIONS}..={MAX_ITERATIONS}"
                    )));
                }
                let h = self.hash;
                let salted =
                    h.salted_password(self.password.expose().as_bytes(), &salt, iterations);
                let client_key = h.hmac(&salted, b"Client Key")?;
                let stored_key = h.hash(&client_key);
                let without_proof = format!("c=biws,r={nonce}");
                let auth_message = format!("{bare},{msg},{without_proof}");
                let client_signature = h.hmac(&stored_key, auth_message.as_bytes())?;
                let proof: Vec<u8> = client_key
                    .iter()
                    .zip(&client_signature)
                    .map(|(a, b)| a ^ b)
                    .collect();
                let server_key = h.hmac(&salted, b"Server Key")?;
                let server_signature = h.hmac(&server_key, auth_message.as_bytes())?;
                self.state = State::SentFinal { server_signature };
                Ok(Step::Send(
                    format!("{without_proof},p={}", B64.encode(proof)).into_bytes(),
                ))
            }
            State::SentFinal { server_signature } => {
                let v = attribute(&attrs, 'v')
                    .and_then(|v| B64.decode(v).ok())
                    .ok_or_else(|| failure("SCRAM server-final message has no signature"))?;
                // Constant-time comparison of the signatures.
                let same = v.len() == server_signature.len()
                    && v.iter()
                        .zip(&server_signature)
                        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                        == 0;
                if !same {
                    return Err(failure(
                        "SCRAM server signature does not match: the server does not know the password",
                    ));
                }
                Ok(Step::Done)
            }
            State::Initial | State::Done => Err(failure("SCRAM message out of order")),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    // RFC 7677 section 3.
    #[test]
    fn rfc7677_sha256_vector() {
        let mut s = Scram::new(ScramHash::Sha256, "user", &Secret::new("pencil"))
            .with_nonce("rOprNGfwEbeRWgbNEkqO");
        assert_eq!(s.start().unwrap(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let server_first =
            b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let Step::Send(final_msg) = s.step(server_first).unwrap() else {
            panic!("expected client-final")
        };
        assert_eq!(
            String::from_utf8(final_msg).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        assert_eq!(
            s.step(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
                .unwrap(),
            Step::Done
        );
    }

    #[test]
    fn bad_server_messages_fail() {
        let first = "r=abcDEF,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let start = |hash| {
            let mut s = Scram::new(hash, "u,=", &Secret::new("p")).with_nonce("abc");
            assert_eq!(s.start().unwrap(), b"n,,n=u=2C=3D,r=abc");
            s
        };
        // Wrong server signature.
        let mut s = start(ScramHash::Sha512);
        assert!(matches!(s.step(first.as_bytes()).unwrap(), Step::Send(_)));
        assert!(s.step(b"v=AAAA").is_err());
        // A nonce that does not extend ours, too few or too many iterations, an error.
        for bad in [
            "r=xyz,s=W22Z,i=4096",
            "r=abc,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
            "r=abcD,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=100",
            "r=abcD,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=99999999",
            "r=abcD,s=!!!,i=4096",
            "e=invalid-proof",
        ] {
            let mut s = start(ScramHash::Sha256);
            assert!(s.step(bad.as_bytes()).is_err(), "{bad}");
        }
        let mut s = start(ScramHash::Sha256);
        assert!(s.step(&[0xff, 0xfe]).is_err());
    }
}
