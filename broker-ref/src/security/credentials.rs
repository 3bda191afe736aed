//! SCRAM credentials, durable: `security-scram-credentials.json` in the data directory, replaced
//! atomically on every change. It holds salts, StoredKeys, ServerKeys and iteration counts, never
//! a password. (The cluster work moves this into the metadata log as
//! `UserScramCredentialRecord`s.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use super::scram::{ScramCredential, ScramMechanism};
use super::secret::Secret;
use crate::{Error, Result};

/// The file name in the data directory.
pub const FILE: &str = "security-scram-credentials.json";

/// Every user's SCRAM credentials.
#[derive(Debug)]
pub struct CredentialStore {
    path: Option<PathBuf>,
    users: RwLock<BTreeMap<String, BTreeMap<ScramMechanism, ScramCredential>>>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct StoredCredential {
    mechanism: String,
    salt: String,
    stored_key: String,
    server_key: String,
    iterations: i32,
}

impl CredentialStore {
    /// An empty store that is not persisted (tests).
    pub fn in_memory() -> CredentialStore {
        CredentialStore {
            path: None,
            users: RwLock::new(BTreeMap::new()),
        }
    }

    /// Opens (or starts) the store in `dir`.
    pub fn open(dir: &Path) -> Result<CredentialStore> {
        let path = dir.join(FILE);
        let mut users: BTreeMap<String, BTreeMap<ScramMechanism, ScramCredential>> =
            BTreeMap::new();
        match std::fs::read(&path) {
            Ok(bytes) => {
                let parsed: BTreeMap<String, Vec<StoredCredential>> =
                    serde_json::from_slice(&bytes).map_err(|e| {
                        Error::config(path.display().to_string(), format!("corrupt: {e}"))
                    })?;
                for (user, creds) in parsed {
                    for c in creds {
                        let bad = |what: &str| {
                            Error::config(
                                path.display().to_string(),
                                format!("user {user}: bad {what}"),
                            )
                        };
                        let m = ScramMechanism::from_name(&c.mechanism)
                            .ok_or_else(|| bad("mechanism"))?;
                        let cred = ScramCredential {
                            salt: B64.decode(&c.salt).map_err(|_| bad("salt"))?,
                            stored_key: Secret::new(
                                B64.decode(&c.stored_key).map_err(|_| bad("stored key"))?,
                            ),
                            server_key: Secret::new(
                                B64.decode(&c.server_key).map_err(|_| bad("server key"))?,
                            ),
                            iterations: c.iterations,
                        };
                        users.entry(user.clone()).or_default().insert(m, cred);
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        Ok(CredentialStore {
            path: Some(path),
            users: RwLock::new(users),
        })
    }

    fn persist(
        &self,
        users: &BTreeMap<String, BTreeMap<ScramMechanism, ScramCredential>>,
    ) -> Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let out: BTreeMap<&String, Vec<StoredCredential>> = users
            .iter()
            .map(|(u, creds)| {
                let list = creds
                    .iter()
                    .map(|(m, c)| StoredCredential {
                        mechanism: m.name().to_string(),
                        salt: B64.encode(&c.salt),
                        stored_key: B64.encode(c.stored_key.expose()),
                        server_key: B64.encode(c.server_key.expose()),
                        iterations: c.iterations,
                    })
                    .collect();
                (u, list)
            })
            .collect();
        let bytes =
            serde_json::to_vec_pretty(&out).map_err(|e| Error::Io(std::io::Error::other(e)))?;
        crate::partition::write_meta(path, &bytes)
    }

    /// Every credential: (user, mechanism, credential).
    pub fn entries(&self) -> Vec<(String, ScramMechanism, ScramCredential)> {
        let users = self.users.read().unwrap_or_else(|e| e.into_inner());
        users
            .iter()
            .flat_map(|(u, c)| c.iter().map(move |(m, c)| (u.clone(), *m, c.clone())))
            .collect()
    }

    /// Replaces every credential without writing the local file (cluster mode: the metadata
    /// log holds them).
    pub fn replace_all(&self, entries: Vec<(String, ScramMechanism, ScramCredential)>) {
        let mut next: BTreeMap<String, BTreeMap<ScramMechanism, ScramCredential>> = BTreeMap::new();
        for (u, m, c) in entries {
            next.entry(u).or_default().insert(m, c);
        }
        *self.users.write().unwrap_or_else(|e| e.into_inner()) = next;
    }

    /// A user's credential for `mechanism`.
    pub fn get(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
        let users = self.users.read().unwrap_or_else(|e| e.into_inner());
        users.get(user).and_then(|c| c.get(&mechanism)).cloned()
    }

    /// Sets (or replaces) a credential and persists the store.
    pub fn upsert(
        &self,
        user: &str,
        mechanism: ScramMechanism,
        credential: ScramCredential,
    ) -> Result<()> {
        let mut users = self.users.write().unwrap_or_else(|e| e.into_inner());
        let previous = users.clone();
        users
            .entry(user.to_string())
            .or_default()
            .insert(mechanism, credential);
        self.persist(&users).inspect_err(|_| *users = previous)
    }

    /// Applies deletions and upsertions together (one AlterUserScramCredentials) and persists
    /// once. Returns false for a deletion of a credential that does not exist.
    pub fn apply(
        &self,
        deletions: &[(String, ScramMechanism)],
        upsertions: Vec<(String, ScramMechanism, ScramCredential)>,
    ) -> Result<Vec<bool>> {
        let mut users = self.users.write().unwrap_or_else(|e| e.into_inner());
        let previous = users.clone();
        let mut found = Vec::with_capacity(deletions.len());
        for (user, m) in deletions {
            let removed = users.get_mut(user).and_then(|c| c.remove(m)).is_some();
            if users.get(user).is_some_and(|c| c.is_empty()) {
                users.remove(user);
            }
            found.push(removed);
        }
        for (user, m, c) in upsertions {
            users.entry(user).or_default().insert(m, c);
        }
        self.persist(&users).inspect_err(|_| *users = previous)?;
        Ok(found)
    }

    /// Every user with their mechanisms and iteration counts (DescribeUserScramCredentials).
    pub fn describe(&self) -> Vec<(String, Vec<(ScramMechanism, i32)>)> {
        let users = self.users.read().unwrap_or_else(|e| e.into_inner());
        users
            .iter()
            .map(|(u, c)| {
                (
                    u.clone(),
                    c.iter().map(|(m, c)| (*m, c.iterations)).collect(),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durable_and_never_stores_the_password() {
        let dir = tempfile::tempdir().unwrap();
        let store = CredentialStore::open(dir.path()).unwrap();
        let cred = ScramCredential::from_password(ScramMechanism::Sha512, "alice-secret", 8192);
        store
            .upsert("alice", ScramMechanism::Sha512, cred.clone())
            .unwrap();
        let text = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
        assert!(!text.contains("alice-secret"));
        let again = CredentialStore::open(dir.path()).unwrap();
        assert_eq!(again.get("alice", ScramMechanism::Sha512), Some(cred));
        assert_eq!(
            again.describe(),
            vec![("alice".to_string(), vec![(ScramMechanism::Sha512, 8192)])]
        );
        let found = again
            .apply(
                &[
                    ("alice".into(), ScramMechanism::Sha512),
                    ("bob".into(), ScramMechanism::Sha256),
                ],
                vec![],
            )
            .unwrap();
        assert_eq!(found, vec![true, false]);
        assert!(CredentialStore::open(dir.path())
            .unwrap()
            .describe()
            .is_empty());
    }
}
