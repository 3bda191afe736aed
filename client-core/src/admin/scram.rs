//! DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554).
//!
//! The password never leaves the client: an upsertion sends a random salt and the SCRAM salted
//! password (PBKDF2 of the password with that salt), from which the broker derives the stored
//! and server keys, as Kafka's clients do. Iteration counts outside Kafka's 4096..=16384 are
//! refused locally (UNACCEPTABLE_CREDENTIAL), which also bounds the hashing work.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest,
};
use kafka_protocol::protocol::StrBytes;

use super::client::Admin;
use super::driver::{self, retry_mutation, retry_read, Call, Outcome, Route};
use crate::net::Connection;
use crate::security::sasl::ScramHash;
use crate::security::Secret;
use crate::{Error, ErrorCode, Result};

/// Kafka's bounds on SCRAM iterations (`ScramMechanism.minIterations` and the broker's maximum).
pub const SCRAM_ITERATIONS: std::ops::RangeInclusive<i32> = 4096..=16384;

/// A SCRAM mechanism as the credential APIs number it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScramMechanism {
    /// SCRAM-SHA-256 (wire 1).
    Sha256,
    /// SCRAM-SHA-512 (wire 2).
    Sha512,
    /// A wire value this client does not know (0 is Kafka's UNKNOWN).
    Unknown(i8),
}

impl ScramMechanism {
    /// The wire value.
    pub fn wire(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
            ScramMechanism::Unknown(v) => v,
        }
    }

    /// The mechanism for a wire value.
    pub fn from_wire(value: i8) -> Self {
        match value {
            1 => ScramMechanism::Sha256,
            2 => ScramMechanism::Sha512,
            other => ScramMechanism::Unknown(other),
        }
    }

    /// The SASL mechanism name (`SCRAM-SHA-256`, `SCRAM-SHA-512`, `UNKNOWN`).
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
            ScramMechanism::Unknown(_) => "UNKNOWN",
        }
    }

    /// Parses `SCRAM-SHA-256` / `SCRAM-SHA-512` (case-insensitive, `_` for `-` accepted).
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim().to_ascii_uppercase().replace('_', "-").as_str() {
            "SCRAM-SHA-256" => Ok(ScramMechanism::Sha256),
            "SCRAM-SHA-512" => Ok(ScramMechanism::Sha512),
            _ => Err(Error::config(
                "mechanism",
                format!("`{s}` is not SCRAM-SHA-256 or SCRAM-SHA-512"),
            )),
        }
    }

    fn hash(self) -> Option<ScramHash> {
        match self {
            ScramMechanism::Sha256 => Some(ScramHash::Sha256),
            ScramMechanism::Sha512 => Some(ScramHash::Sha512),
            ScramMechanism::Unknown(_) => None,
        }
    }
}

/// One credential a user has: its mechanism and iteration count (never the keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScramCredentialInfo {
    /// The mechanism.
    pub mechanism: ScramMechanism,
    /// The PBKDF2 iteration count.
    pub iterations: i32,
}

/// A change to one user's SCRAM credentials.
#[derive(Debug, Clone)]
pub enum ScramAlteration {
    /// Sets (creates or replaces) the user's credential for a mechanism.
    Upsert {
        /// The user name.
        user: String,
        /// Mechanism and iteration count.
        info: ScramCredentialInfo,
        /// The password (hashed here; never sent).
        password: Secret,
        /// The salt; `None` draws 32 random bytes.
        salt: Option<Vec<u8>>,
    },
    /// Removes the user's credential for a mechanism.
    Delete {
        /// The user name.
        user: String,
        /// The mechanism.
        mechanism: ScramMechanism,
    },
}

impl ScramAlteration {
    /// The user the alteration is for.
    pub fn user(&self) -> &str {
        match self {
            ScramAlteration::Upsert { user, .. } | ScramAlteration::Delete { user, .. } => user,
        }
    }
}

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

fn unacceptable(message: impl Into<String>) -> Error {
    Error::KafkaMessage {
        code: ErrorCode::UnacceptableCredential,
        message: message.into(),
    }
}

/// The wire upsertion for one alteration: checks it and salts the password.
fn upsertion(
    user: &str,
    info: &ScramCredentialInfo,
    password: &Secret,
    salt: Option<&[u8]>,
) -> Result<ScramCredentialUpsertion> {
    let Some(hash) = info.mechanism.hash() else {
        return Err(Error::Kafka(ErrorCode::UnsupportedSaslMechanism));
    };
    if !SCRAM_ITERATIONS.contains(&info.iterations) {
        return Err(unacceptable(format!(
            "iterations must be between {} and {}, not {}",
            SCRAM_ITERATIONS.start(),
            SCRAM_ITERATIONS.end(),
            info.iterations
        )));
    }
    if password.is_empty() {
        return Err(unacceptable("password must not be empty"));
    }
    let salt = match salt {
        Some([]) => return Err(unacceptable("salt must not be empty")),
        Some(s) => s.to_vec(),
        None => {
            let mut s = vec![0u8; 32];
            getrandom::fill(&mut s)
                .map_err(|e| unacceptable(format!("no randomness for a salt: {e}")))?;
            s
        }
    };
    // The range check above makes the count positive and at most 16384.
    let iterations = info.iterations.unsigned_abs();
    let salted = hash.salted_password(password.expose().as_bytes(), &salt, iterations);
    Ok(ScramCredentialUpsertion::default()
        .with_name(sb(user))
        .with_mechanism(info.mechanism.wire())
        .with_iterations(info.iterations)
        .with_salt(Bytes::from(salt))
        .with_salted_password(Bytes::from(salted)))
}

/// The per-user lists of what describe returned.
pub type UserScramCredentials = Vec<(String, Result<Vec<ScramCredentialInfo>>)>;

/// DescribeUserScramCredentials for some users or all of them (one item).
pub(crate) struct DescribeScram<'a> {
    pub(crate) users: Option<&'a [&'a str]>,
}

impl Call for DescribeScram<'_> {
    type Output = UserScramCredentials;

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        Ok(driver::all_to(admin.any_node().await?, pending))
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<UserScramCredentials>)>> {
        let request =
            DescribeUserScramCredentialsRequest::default().with_users(self.users.map(|users| {
                users
                    .iter()
                    .map(|u| UserName::default().with_name(sb(u)))
                    .collect()
            }));
        let response = connection.send(&request).await?;
        let users: UserScramCredentials = response
            .results
            .iter()
            .map(|r| {
                let infos =
                    Error::from_response(r.error_code, r.error_message.as_deref()).map(|()| {
                        r.credential_infos
                            .iter()
                            .map(|c| ScramCredentialInfo {
                                mechanism: ScramMechanism::from_wire(c.mechanism),
                                iterations: c.iterations,
                            })
                            .collect()
                    });
                (r.user.to_string(), infos)
            })
            .collect();
        let outcome =
            match Error::from_response(response.error_code, response.error_message.as_deref()) {
                Ok(()) => Outcome::Done(Ok(users)),
                Err(e) if retry_read(e.kafka_code()) => Outcome::Retry(e),
                Err(e) => Outcome::Done(Err(e)),
            };
        Ok(items.iter().map(|&i| (i, outcome_copy(&outcome))).collect())
    }
}

/// A copy of a one-item outcome (the item list has one entry; this keeps the shape general).
fn outcome_copy(o: &Outcome<UserScramCredentials>) -> Outcome<UserScramCredentials> {
    match o {
        Outcome::Done(Ok(users)) => Outcome::Done(Ok(users
            .iter()
            .map(|(u, r)| {
                let r = match r {
                    Ok(v) => Ok(v.clone()),
                    Err(e) => Err(e.duplicate()),
                };
                (u.clone(), r)
            })
            .collect())),
        Outcome::Done(Err(e)) => Outcome::Done(Err(e.duplicate())),
        Outcome::Retry(e) => Outcome::Retry(e.duplicate()),
    }
}

/// AlterUserScramCredentials; items are the distinct users, each carrying all its alterations.
pub(crate) struct AlterScram<'a> {
    /// Per user, its prepared deletions and upsertions (or the reason it cannot be sent).
    pub(crate) users: &'a [(String, Result<Prepared>)],
}

/// One user's alterations in wire form.
#[derive(Default)]
pub(crate) struct Prepared {
    deletions: Vec<ScramCredentialDeletion>,
    upsertions: Vec<ScramCredentialUpsertion>,
}

impl Call for AlterScram<'_> {
    type Output = ();

    async fn route(&self, admin: &Admin, pending: &[usize]) -> Result<Vec<(usize, Route)>> {
        let node = admin.any_node().await?;
        Ok(pending
            .iter()
            .map(|&i| match &self.users[i].1 {
                Ok(_) => (i, Route::Node(node)),
                Err(e) => (i, Route::Done(e.duplicate())),
            })
            .collect())
    }

    async fn send(
        &self,
        connection: &Connection,
        items: &[usize],
        _timeout_ms: i32,
    ) -> Result<Vec<(usize, Outcome<()>)>> {
        let mut request = AlterUserScramCredentialsRequest::default();
        for &i in items {
            if let (_, Ok(p)) = &self.users[i] {
                request.deletions.extend(p.deletions.iter().cloned());
                request.upsertions.extend(p.upsertions.iter().cloned());
            }
        }
        let response = connection.send(&request).await?;
        let answers: BTreeMap<String, Result<()>> = response
            .results
            .iter()
            .map(|r| {
                (
                    r.user.to_string(),
                    Error::from_response(r.error_code, r.error_message.as_deref()),
                )
            })
            .collect();
        Ok(items
            .iter()
            .map(|&i| {
                let user = &self.users[i].0;
                let outcome = match answers.get(user) {
                    None => Outcome::Done(Err(Error::malformed(
                        "AlterUserScramCredentials response",
                        format!("no result for user `{user}`"),
                    ))),
                    Some(Ok(())) => Outcome::Done(Ok(())),
                    Some(Err(e)) if retry_mutation(e.kafka_code()) => Outcome::Retry(e.duplicate()),
                    Some(Err(e)) => Outcome::Done(Err(e.duplicate())),
                };
                (i, outcome)
            })
            .collect())
    }
}

/// Groups alterations by user (first-seen order) and prepares each user's wire entries; a user
/// with any bad alteration fails as a whole, as in Kafka's clients.
fn prepare(alterations: &[ScramAlteration]) -> Vec<(String, Result<Prepared>)> {
    let mut users: Vec<(String, Result<Prepared>)> = Vec::new();
    for a in alterations {
        let user = a.user();
        let index = match users.iter().position(|(u, _)| u == user) {
            Some(i) => i,
            None => {
                users.push((user.to_string(), Ok(Prepared::default())));
                users.len() - 1
            }
        };
        let Ok(prepared) = &mut users[index].1 else {
            continue;
        };
        let entry = if user.is_empty() {
            Err(unacceptable("user name must not be empty"))
        } else {
            match a {
                ScramAlteration::Upsert {
                    info,
                    password,
                    salt,
                    ..
                } => upsertion(user, info, password, salt.as_deref())
                    .map(|u| prepared.upsertions.push(u)),
                ScramAlteration::Delete { mechanism, .. } => match mechanism {
                    ScramMechanism::Unknown(_) => {
                        Err(Error::Kafka(ErrorCode::UnsupportedSaslMechanism))
                    }
                    m => {
                        prepared.deletions.push(
                            ScramCredentialDeletion::default()
                                .with_name(sb(user))
                                .with_mechanism(m.wire()),
                        );
                        Ok(())
                    }
                },
            }
        };
        if let Err(e) = entry {
            users[index].1 = Err(e);
        }
    }
    users
}

impl Admin {
    /// The SCRAM credentials (mechanism and iterations) of `users`, or of every user with one
    /// when `None`. A named user without credentials answers RESOURCE_NOT_FOUND; a user named
    /// twice answers DUPLICATE_RESOURCE.
    pub async fn describe_user_scram_credentials(
        &self,
        users: Option<&[&str]>,
    ) -> Result<UserScramCredentials> {
        let results = driver::run(self, &DescribeScram { users }, 1).await?;
        results
            .into_iter()
            .next()
            .unwrap_or_else(|| Err(Error::malformed("admin call", "no result")))
    }

    /// Creates, replaces or deletes SCRAM credentials. One result per user, in first-seen
    /// order: `Ok`, or e.g. RESOURCE_NOT_FOUND (deleting a credential that does not exist),
    /// DUPLICATE_RESOURCE (the same user and mechanism twice), UNACCEPTABLE_CREDENTIAL
    /// (iterations out of range, empty name or password).
    pub async fn alter_user_scram_credentials(
        &self,
        alterations: &[ScramAlteration],
    ) -> Result<Vec<(String, Result<()>)>> {
        let users = prepare(alterations);
        let results = driver::run(self, &AlterScram { users: &users }, users.len()).await?;
        Ok(users.into_iter().map(|(u, _)| u).zip(results).collect())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn upsert(user: &str, iterations: i32) -> ScramAlteration {
        ScramAlteration::Upsert {
            user: user.into(),
            info: ScramCredentialInfo {
                mechanism: ScramMechanism::Sha256,
                iterations,
            },
            password: Secret::new("pencil"),
            salt: Some(b"salt".to_vec()),
        }
    }

    #[test]
    fn upsertions_carry_the_salted_password_not_the_password() {
        let users = prepare(&[upsert("alice", 4096)]);
        let prepared = users[0].1.as_ref().unwrap();
        let u = &prepared.upsertions[0];
        assert_eq!(&u.salt[..], b"salt");
        assert_eq!(u.salted_password.len(), 32);
        assert!(!u
            .salted_password
            .windows(6)
            .any(|w| w == b"pencil".as_slice()));
        // Deterministic for a given salt: PBKDF2-HMAC-SHA-256("pencil", "salt", 4096).
        let again = prepare(&[upsert("alice", 4096)]);
        assert_eq!(
            again[0].1.as_ref().unwrap().upsertions[0].salted_password,
            u.salted_password
        );
    }

    #[test]
    fn random_salts_differ() {
        let a = ScramAlteration::Upsert {
            user: "alice".into(),
            info: ScramCredentialInfo {
                mechanism: ScramMechanism::Sha512,
                iterations: 4096,
            },
            password: Secret::new("pw"),
            salt: None,
        };
        let x = prepare(std::slice::from_ref(&a));
        let y = prepare(&[a]);
        let (x, y) = (x[0].1.as_ref().unwrap(), y[0].1.as_ref().unwrap());
        assert_eq!(x.upsertions[0].salt.len(), 32);
        assert_ne!(x.upsertions[0].salt, y.upsertions[0].salt);
        assert_eq!(x.upsertions[0].salted_password.len(), 64);
    }

    #[test]
    fn bad_alterations_fail_their_user_only() {
        let users = prepare(&[
            upsert("alice", 100),
            upsert("bob", 8192),
            ScramAlteration::Delete {
                user: "alice".into(),
                mechanism: ScramMechanism::Sha512,
            },
            upsert("", 8192),
            upsert("carol", 1_000_000_000),
        ]);
        let names: Vec<&str> = users.iter().map(|(u, _)| u.as_str()).collect();
        assert_eq!(names, ["alice", "bob", "", "carol"]);
        let err = users[0].1.as_ref().err().unwrap();
        assert_eq!(err.kafka_code(), ErrorCode::UnacceptableCredential);
        assert!(err.to_string().contains("4096"), "{err}");
        assert!(users[1].1.is_ok());
        assert!(users[2].1.is_err());
        assert!(users[3].1.is_err());
        assert_eq!(
            ScramMechanism::parse("scram_sha_512").unwrap(),
            ScramMechanism::Sha512
        );
        assert!(ScramMechanism::parse("PLAIN").is_err());
    }
}
