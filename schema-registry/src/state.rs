//! The registry's in-memory view of the `_schemas` topic: every record is applied in offset
//! order, so every instance that reads the topic agrees on subjects, versions and ids.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use crate::records::{ConfigValue, Key, ModeValue, SchemaValue};
use crate::schema::{Level, Reference, SchemaType};

/// A schema as stored: type, text and references (what an id names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// Type.
    pub schema_type: SchemaType,
    /// Text.
    pub schema: String,
    /// References.
    pub references: Vec<Reference>,
}

/// One version of a subject.
#[derive(Debug, Clone)]
pub struct Version {
    /// Global id of its schema.
    pub id: i32,
    /// The schema.
    pub schema: Arc<Stored>,
    /// Soft-deleted.
    pub deleted: bool,
}

/// Everything the topic says.
#[derive(Debug, Default)]
pub struct State {
    /// Subject → version → schema.
    pub subjects: BTreeMap<String, BTreeMap<i32, Version>>,
    /// Id → the (subject, version) pairs that use it.
    pub uses: BTreeMap<i32, BTreeSet<(String, i32)>>,
    /// Highest id ever read (ids are never reused while the process runs).
    pub max_id: i32,
    /// Global compatibility level, if set.
    pub config: Option<Level>,
    /// Subject-level compatibility.
    pub subject_config: HashMap<String, Level>,
    /// Global mode, if set.
    pub mode: Option<String>,
    /// Subject-level modes.
    pub subject_mode: HashMap<String, String>,
    /// Records that could not be understood (skipped).
    pub skipped: u64,
}

impl State {
    /// Applies one record of the topic; a record we cannot parse is counted and skipped, as
    /// Confluent's registry does with unknown key types.
    pub fn apply(&mut self, key: &[u8], value: Option<&[u8]>) {
        let Ok(k) = serde_json::from_slice::<Key>(key) else {
            self.skipped += 1;
            return;
        };
        match k {
            Key::Schema {
                subject, version, ..
            } => match value {
                None => self.remove_version(&subject, version),
                Some(v) => match serde_json::from_slice::<SchemaValue>(v) {
                    Ok(v) => self.put_version(v),
                    Err(_) => self.skipped += 1,
                },
            },
            Key::Config { subject, .. } => {
                let level = value
                    .and_then(|v| serde_json::from_slice::<ConfigValue>(v).ok())
                    .and_then(|c| Level::parse(&c.compatibility_level).ok());
                match (subject, level) {
                    (None, l) => self.config = l,
                    (Some(s), Some(l)) => {
                        self.subject_config.insert(s, l);
                    }
                    (Some(s), None) => {
                        self.subject_config.remove(&s);
                    }
                }
            }
            Key::Mode { subject, .. } => {
                let mode = value
                    .and_then(|v| serde_json::from_slice::<ModeValue>(v).ok())
                    .map(|m| m.mode);
                match (subject, mode) {
                    (None, m) => self.mode = m,
                    (Some(s), Some(m)) => {
                        self.subject_mode.insert(s, m);
                    }
                    (Some(s), None) => {
                        self.subject_mode.remove(&s);
                    }
                }
            }
            Key::Noop { .. } | Key::DeleteSubject { .. } | Key::ClearSubject { .. } => {}
        }
    }

    fn put_version(&mut self, v: SchemaValue) {
        self.remove_version(&v.subject, v.version);
        self.max_id = self.max_id.max(v.id);
        self.uses
            .entry(v.id)
            .or_default()
            .insert((v.subject.clone(), v.version));
        let stored = Arc::new(Stored {
            schema_type: v.schema_type,
            schema: v.schema,
            references: v.references,
        });
        self.subjects.entry(v.subject).or_default().insert(
            v.version,
            Version {
                id: v.id,
                schema: stored,
                deleted: v.deleted,
            },
        );
    }

    fn remove_version(&mut self, subject: &str, version: i32) {
        let Some(versions) = self.subjects.get_mut(subject) else {
            return;
        };
        if let Some(old) = versions.remove(&version) {
            if let Some(u) = self.uses.get_mut(&old.id) {
                u.remove(&(subject.to_string(), version));
                if u.is_empty() {
                    self.uses.remove(&old.id);
                }
            }
        }
        if versions.is_empty() {
            self.subjects.remove(subject);
        }
    }

    /// The schema an id names (soft-deleted versions still name it).
    pub fn by_id(&self, id: i32) -> Option<Arc<Stored>> {
        let (s, v) = self.uses.get(&id)?.iter().next()?;
        Some(self.subjects.get(s)?.get(v)?.schema.clone())
    }

    /// The versions of a subject, soft-deleted ones only with `deleted`.
    pub fn versions(&self, subject: &str, deleted: bool) -> Vec<(i32, &Version)> {
        self.subjects
            .get(subject)
            .map(|vs| {
                vs.iter()
                    .filter(|(_, v)| deleted || !v.deleted)
                    .map(|(n, v)| (*n, v))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The compatibility level in force for a subject.
    pub fn level(&self, subject: Option<&str>) -> Level {
        subject
            .and_then(|s| self.subject_config.get(s).copied())
            .or(self.config)
            .unwrap_or_default()
    }

    /// The mode in force for a subject.
    pub fn mode_of(&self, subject: Option<&str>) -> &str {
        subject
            .and_then(|s| self.subject_mode.get(s))
            .or(self.mode.as_ref())
            .map_or("READWRITE", String::as_str)
    }

    /// Ids of live schemas that reference `subject` at `version`.
    pub fn referenced_by(&self, subject: &str, version: i32) -> Vec<i32> {
        let mut out = BTreeSet::new();
        for vs in self.subjects.values() {
            for v in vs.values() {
                if !v.deleted
                    && v.schema
                        .references
                        .iter()
                        .any(|r| r.subject == subject && r.version == version)
                {
                    out.insert(v.id);
                }
            }
        }
        out.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::to_bytes;

    fn put(st: &mut State, s: &str, version: i32, id: i32, deleted: bool) {
        let v = SchemaValue {
            subject: s.into(),
            version,
            id,
            schema_type: SchemaType::Avro,
            references: vec![],
            schema: "\"string\"".into(),
            deleted,
        };
        st.apply(&to_bytes(&Key::schema(s, version)), Some(&to_bytes(&v)));
    }

    #[test]
    fn replay_soft_and_hard_deletes() {
        let mut st = State::default();
        put(&mut st, "a", 1, 1, false);
        put(&mut st, "b", 1, 1, false);
        put(&mut st, "a", 2, 2, false);
        assert_eq!(st.max_id, 2);
        put(&mut st, "a", 2, 2, true);
        assert_eq!(st.versions("a", false).len(), 1);
        assert_eq!(st.versions("a", true).len(), 2);
        assert!(st.by_id(2).is_some(), "soft-deleted schemas keep their id");
        st.apply(&to_bytes(&Key::schema("a", 2)), None);
        assert!(st.by_id(2).is_none());
        assert_eq!(st.max_id, 2, "ids are not reused");
        st.apply(b"not json", None);
        assert_eq!(st.skipped, 1);
        st.apply(
            &to_bytes(&Key::config(Some("a"))),
            Some(br#"{"compatibilityLevel":"FULL"}"#),
        );
        assert_eq!(st.level(Some("a")), Level::Full);
        assert_eq!(st.level(Some("b")), Level::Backward);
    }
}
