//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) on the server side: credentials
//! (salt, StoredKey, ServerKey, iterations: never the password), the message parsers and the
//! two-step exchange (client-first → server-first, client-final → server-final after the client
//! proof is verified). Kafka's rules: GS2 flag `n` only (no channel binding), iteration counts
//! 4096–16384, an authorization id must equal the user name.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use hmac::Mac;

use super::secret::{constant_time_eq, Secret};

/// A SCRAM mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramMechanism {
    /// SCRAM-SHA-256.
    Sha256,
    /// SCRAM-SHA-512.
    Sha512,
}

/// Kafka's bounds on iteration counts (`ScramMechanism.minIterations` / AlterUserScramCredentials).
pub const MIN_ITERATIONS: i32 = 4096;
/// The largest iteration count Kafka accepts.
pub const MAX_ITERATIONS: i32 = 16384;

impl ScramMechanism {
    /// The SASL mechanism name.
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism named `name`.
    pub fn from_name(name: &str) -> Option<ScramMechanism> {
        match name {
            "SCRAM-SHA-256" => Some(ScramMechanism::Sha256),
            "SCRAM-SHA-512" => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    /// Kafka's wire code (`ScramMechanism.type()`: 1 = SHA-256, 2 = SHA-512).
    pub fn code(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    /// The mechanism of a wire code.
    pub fn from_code(code: i8) -> Option<ScramMechanism> {
        match code {
            1 => Some(ScramMechanism::Sha256),
            2 => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => {
                let mut m = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(key)
                    .expect("HMAC takes any key length");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
            ScramMechanism::Sha512 => {
                let mut m = <hmac::Hmac<sha2::Sha512> as Mac>::new_from_slice(key)
                    .expect("HMAC takes any key length");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        use sha2::Digest;
        match self {
            ScramMechanism::Sha256 => sha2::Sha256::digest(data).to_vec(),
            ScramMechanism::Sha512 => sha2::Sha512::digest(data).to_vec(),
        }
    }

    /// `Hi(password, salt, iterations)`: the salted password (PBKDF2 with this HMAC).
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Secret<Vec<u8>> {
        let mut out = vec![0u8; self.output_len()];
        match self {
            ScramMechanism::Sha256 => {
                pbkdf2::pbkdf2_hmac::<sha2::Sha256>(password, salt, iterations, &mut out)
            }
            ScramMechanism::Sha512 => {
                pbkdf2::pbkdf2_hmac::<sha2::Sha512>(password, salt, iterations, &mut out)
            }
        }
        Secret::new(out)
    }

    fn output_len(self) -> usize {
        match self {
            ScramMechanism::Sha256 => 32,
            ScramMechanism::Sha512 => 64,
        }
    }
}

/// What the broker stores for one user and mechanism.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramCredential {
    /// The salt.
    pub salt: Vec<u8>,
    /// `H(HMAC(SaltedPassword, "Client Key"))`.
    pub stored_key: Secret<Vec<u8>>,
    /// `HMAC(SaltedPassword, "Server Key")`.
    pub server_key: Secret<Vec<u8>>,
    /// Iteration count used for the salted password.
    pub iterations: i32,
}

impl ScramCredential {
    /// The credential for a salted password (what AlterUserScramCredentials carries).
    pub fn from_salted(
        mechanism: ScramMechanism,
        salt: Vec<u8>,
        salted_password: &[u8],
        iterations: i32,
    ) -> ScramCredential {
        let client_key = mechanism.hmac(salted_password, b"Client Key");
        ScramCredential {
            salt,
            stored_key: Secret::new(mechanism.hash(&client_key)),
            server_key: Secret::new(mechanism.hmac(salted_password, b"Server Key")),
            iterations,
        }
    }

    /// The credential for a password, with a fresh random salt.
    pub fn from_password(
        mechanism: ScramMechanism,
        password: &str,
        iterations: i32,
    ) -> ScramCredential {
        let salt = random_bytes(24);
        let salted = mechanism.salted_password(password.as_bytes(), &salt, iterations as u32);
        Self::from_salted(mechanism, salt, salted.expose(), iterations)
    }
}

/// Random bytes from the TLS provider's system RNG.
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n];
    rustls::crypto::ring::default_provider()
        .secure_random
        .fill(&mut out)
        .expect("the system RNG works");
    out
}

/// A parsed client-first message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFirst {
    /// The GS2 header (`n,,` or `n,a=<authzid>,`), echoed in the client-final `c=`.
    pub gs2_header: String,
    /// The authorization id (empty when none).
    pub authzid: String,
    /// The user name, `=2C` / `=3D` decoded.
    pub username: String,
    /// The client nonce.
    pub nonce: String,
    /// `client-first-message-bare`.
    pub bare: String,
    /// Extensions (`tokenauth=true`, ...).
    pub extensions: Vec<(String, String)>,
}

/// Decodes a `saslname` (`=2C` → `,`, `=3D` → `=`; any other `=` is invalid).
fn decode_saslname(s: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('=') {
        out.push_str(&rest[..i]);
        let esc = rest.get(i..i + 3)?;
        match esc {
            "=2C" => out.push(','),
            "=3D" => out.push('='),
            _ => return None,
        }
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    (!out.is_empty() && !out.contains(',')).then_some(out)
}

fn printable(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b',')
}

/// Parses a client-first message; `None` when it is not one Kafka accepts.
pub fn parse_client_first(msg: &[u8]) -> Option<ClientFirst> {
    let text = std::str::from_utf8(msg).ok()?;
    let rest = text.strip_prefix("n,")?;
    let (authzid, bare) = if let Some(r) = rest.strip_prefix("a=") {
        let (a, b) = r.split_once(',')?;
        (decode_saslname(a)?, b)
    } else {
        (String::new(), rest.strip_prefix(',')?)
    };
    let gs2_header = text[..text.len() - bare.len()].to_string();
    let mut fields = bare.split(',');
    let mut first = fields.next()?;
    if first.starts_with("m=") {
        first = fields.next()?;
    }
    let username = decode_saslname(first.strip_prefix("n=")?)?;
    let nonce = fields.next()?.strip_prefix("r=")?.to_string();
    if !printable(&nonce) {
        return None;
    }
    let mut extensions = Vec::new();
    for f in fields {
        let (k, v) = f.split_once('=')?;
        if k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphabetic()) {
            return None;
        }
        extensions.push((k.to_string(), v.to_string()));
    }
    Some(ClientFirst {
        gs2_header,
        authzid,
        username,
        nonce,
        bare: bare.to_string(),
        extensions,
    })
}

/// A parsed client-final message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFinal {
    /// `c=`: the base64 channel binding (the GS2 header for flag `n`).
    pub channel_binding: String,
    /// `r=`: the combined nonce.
    pub nonce: String,
    /// `p=`: the decoded client proof.
    pub proof: Vec<u8>,
    /// `client-final-message-without-proof`.
    pub without_proof: String,
}

/// Parses a client-final message; `None` when it is malformed.
pub fn parse_client_final(msg: &[u8]) -> Option<ClientFinal> {
    let text = std::str::from_utf8(msg).ok()?;
    let (without_proof, proof) = text.rsplit_once(",p=")?;
    let proof = B64.decode(proof).ok()?;
    let mut fields = without_proof.split(',');
    let channel_binding = fields.next()?.strip_prefix("c=")?.to_string();
    let nonce = fields.next()?.strip_prefix("r=")?.to_string();
    for f in fields {
        let (k, _) = f.split_once('=')?;
        if k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphabetic()) {
            return None;
        }
    }
    Some(ClientFinal {
        channel_binding,
        nonce,
        proof,
        without_proof: without_proof.to_string(),
    })
}

/// Why a SCRAM exchange failed: `Invalid` answers Kafka's generic "invalid credentials" message
/// (nothing about the user leaks), `Message` is Kafka's SaslAuthenticationException text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScramError {
    /// A malformed message, an unknown user or a wrong proof.
    Invalid,
    /// A failure whose text the client may see.
    Message(String),
}

/// The server side of one SCRAM exchange.
#[derive(Debug)]
pub struct ScramServer {
    mechanism: ScramMechanism,
    state: State,
}

#[derive(Debug)]
enum State {
    First,
    Final(Box<FinalState>),
    Done,
}

#[derive(Debug)]
struct FinalState {
    first: ClientFirst,
    server_first: String,
    nonce: String,
    credential: ScramCredential,
}

/// The result of a step.
#[derive(Debug, PartialEq, Eq)]
pub enum ScramStep {
    /// Send this challenge and wait for the client-final message.
    Challenge(Vec<u8>),
    /// Authenticated as this user; send the server-final message.
    Complete {
        /// The user name.
        user: String,
        /// `v=<ServerSignature>`.
        server_final: Vec<u8>,
    },
}

impl ScramServer {
    /// A new exchange.
    pub fn new(mechanism: ScramMechanism) -> ScramServer {
        ScramServer {
            mechanism,
            state: State::First,
        }
    }

    /// The mechanism's name.
    pub fn mechanism_name(&self) -> &'static str {
        self.mechanism.name()
    }

    /// Feeds one client message; `lookup` finds a user's credential.
    pub fn step(
        &mut self,
        msg: &[u8],
        lookup: impl FnOnce(&str) -> Option<ScramCredential>,
    ) -> Result<ScramStep, ScramError> {
        match std::mem::replace(&mut self.state, State::Done) {
            State::First => {
                let first = parse_client_first(msg).ok_or(ScramError::Invalid)?;
                if first
                    .extensions
                    .iter()
                    .any(|(k, v)| k == "tokenauth" && v == "true")
                {
                    // Delegation tokens are not served.
                    return Err(ScramError::Invalid);
                }
                let credential = lookup(&first.username).ok_or(ScramError::Invalid)?;
                if !first.authzid.is_empty() && first.authzid != first.username {
                    return Err(ScramError::Message(
                        "Authentication failed: Client requested an authorization id that is different from username".into(),
                    ));
                }
                if credential.iterations < MIN_ITERATIONS {
                    return Err(ScramError::Invalid);
                }
                let nonce = format!("{}{}", first.nonce, B64.encode(random_bytes(24)));
                let server_first = format!(
                    "r={nonce},s={},i={}",
                    B64.encode(&credential.salt),
                    credential.iterations
                );
                let out = server_first.clone().into_bytes();
                self.state = State::Final(Box::new(FinalState {
                    first,
                    server_first,
                    nonce,
                    credential,
                }));
                Ok(ScramStep::Challenge(out))
            }
            State::Final(state) => {
                let FinalState {
                    first,
                    server_first,
                    nonce,
                    credential,
                } = *state;
                let fin = parse_client_final(msg).ok_or(ScramError::Invalid)?;
                if fin.nonce != nonce {
                    return Err(ScramError::Invalid);
                }
                if fin.channel_binding != B64.encode(first.gs2_header.as_bytes()) {
                    return Err(ScramError::Invalid);
                }
                let auth_message = format!("{},{},{}", first.bare, server_first, fin.without_proof);
                let m = self.mechanism;
                let signature = m.hmac(credential.stored_key.expose(), auth_message.as_bytes());
                if fin.proof.len() != signature.len() {
                    return Err(ScramError::Invalid);
                }
                let client_key: Vec<u8> = fin
                    .proof
                    .iter()
                    .zip(&signature)
                    .map(|(a, b)| a ^ b)
                    .collect();
                if !constant_time_eq(&m.hash(&client_key), credential.stored_key.expose()) {
                    return Err(ScramError::Invalid);
                }
                let server_signature =
                    m.hmac(credential.server_key.expose(), auth_message.as_bytes());
                Ok(ScramStep::Complete {
                    user: first.username,
                    server_final: format!("v={}", B64.encode(server_signature)).into_bytes(),
                })
            }
            State::Done => Err(ScramError::Message(
                "Unexpected challenge in Sasl server state COMPLETE".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client for tests, per RFC 5802.
    fn client_final(
        m: ScramMechanism,
        password: &str,
        client_first_bare: &str,
        server_first: &str,
        gs2: &str,
    ) -> (String, Vec<u8>) {
        let parts: Vec<&str> = server_first.split(',').collect();
        let nonce = parts[0].strip_prefix("r=").unwrap();
        let salt = B64.decode(parts[1].strip_prefix("s=").unwrap()).unwrap();
        let iters: u32 = parts[2].strip_prefix("i=").unwrap().parse().unwrap();
        let salted = m.salted_password(password.as_bytes(), &salt, iters);
        let client_key = m.hmac(salted.expose(), b"Client Key");
        let stored = m.hash(&client_key);
        let without_proof = format!("c={},r={nonce}", B64.encode(gs2));
        let auth = format!("{client_first_bare},{server_first},{without_proof}");
        let sig = m.hmac(&stored, auth.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&sig).map(|(a, b)| a ^ b).collect();
        let server_key = m.hmac(salted.expose(), b"Server Key");
        (
            format!("{without_proof},p={}", B64.encode(proof)),
            m.hmac(&server_key, auth.as_bytes()),
        )
    }

    #[test]
    fn rfc7677_sha256_vector_derives_the_stored_key() {
        // RFC 7677 section 3: user "user", password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==, i=4096.
        let m = ScramMechanism::Sha256;
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let salted = m.salted_password(b"pencil", &salt, 4096);
        let cred = ScramCredential::from_salted(m, salt, salted.expose(), 4096);
        let client_first_bare = "n=user,r=rOprNGfwEbeRWgbNEkqO";
        let server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let without_proof = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let auth = format!("{client_first_bare},{server_first},{without_proof}");
        let sig = m.hmac(cred.stored_key.expose(), auth.as_bytes());
        let proof = B64
            .decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
            .unwrap();
        let client_key: Vec<u8> = proof.iter().zip(&sig).map(|(a, b)| a ^ b).collect();
        assert_eq!(&m.hash(&client_key), cred.stored_key.expose());
        let server_sig = m.hmac(cred.server_key.expose(), auth.as_bytes());
        assert_eq!(
            B64.encode(server_sig),
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
    }

    #[test]
    fn full_exchange_both_mechanisms_and_wrong_password() {
        for m in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
            let cred = ScramCredential::from_password(m, "alice-secret", 4096);
            for (password, ok) in [("alice-secret", true), ("wrong", false)] {
                let mut server = ScramServer::new(m);
                let first = "n,,n=alice,r=abcdef";
                let ScramStep::Challenge(sf) = server
                    .step(first.as_bytes(), |u| (u == "alice").then(|| cred.clone()))
                    .unwrap()
                else {
                    panic!()
                };
                let sf = String::from_utf8(sf).unwrap();
                assert!(sf.starts_with("r=abcdef"));
                let (fin, expected_sig) = client_final(m, password, "n=alice,r=abcdef", &sf, "n,,");
                let r = server.step(fin.as_bytes(), |_| None);
                if ok {
                    let ScramStep::Complete { user, server_final } = r.unwrap() else {
                        panic!()
                    };
                    assert_eq!(user, "alice");
                    assert_eq!(
                        server_final,
                        format!("v={}", B64.encode(expected_sig)).into_bytes()
                    );
                } else {
                    assert_eq!(r.unwrap_err(), ScramError::Invalid);
                }
            }
        }
    }

    #[test]
    fn parsers_reject_what_kafka_rejects() {
        let f = parse_client_first(b"n,a=al=3Dice,n=al=3Dice,r=xyz,tokenauth=true").unwrap();
        assert_eq!(f.username, "al=ice");
        assert_eq!(f.gs2_header, "n,a=al=3Dice,");
        assert_eq!(f.extensions, vec![("tokenauth".into(), "true".into())]);
        for bad in [
            &b"y,,n=a,r=x"[..],
            b"p=tls,,n=a,r=x",
            b"n,,n=,r=x",
            b"n,,n=a=4,r=x",
            b"n,,r=x",
            b"n,,n=a",
            b"\xff",
        ] {
            assert!(
                parse_client_first(bad).is_none(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert!(parse_client_final(b"c=biws,r=x,p=!!").is_none());
        assert!(parse_client_final(b"r=x,c=biws,p=AAAA").is_none());
        let mut s = ScramServer::new(ScramMechanism::Sha256);
        assert_eq!(
            s.step(b"n,,n=nobody,r=x", |_| None).unwrap_err(),
            ScramError::Invalid
        );
        let cred = ScramCredential::from_password(ScramMechanism::Sha256, "p", 4096);
        let mut s = ScramServer::new(ScramMechanism::Sha256);
        assert!(matches!(
            s.step(b"n,a=bob,n=alice,r=x", |_| Some(cred.clone())),
            Err(ScramError::Message(_))
        ));
    }
}
