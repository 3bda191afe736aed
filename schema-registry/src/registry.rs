//! The registry's operations, independent of HTTP: register, look up, delete, check
//! compatibility, configure. Reads are served from the store's state; writes hold the store's
//! writer lock from the decision (id, version) to the record being read back.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::records::{to_bytes, ConfigValue, Key, ModeValue, SchemaValue};
use crate::schema::{self, Dependency, Level, Parsed, Reference, SchemaType};
use crate::state::{State, Stored};
use crate::store::Store;

/// A schema as a client sends it.
#[derive(Debug, Clone, Default)]
pub struct SchemaInput {
    /// Text.
    pub schema: String,
    /// Type (default AVRO).
    pub schema_type: SchemaType,
    /// References.
    pub references: Vec<Reference>,
    /// An id asked for (IMPORT mode only).
    pub id: Option<i32>,
    /// A version asked for (IMPORT mode only).
    pub version: Option<i32>,
}

/// A subject's version as the API returns it.
#[derive(Debug, Clone)]
pub struct VersionView {
    /// Subject.
    pub subject: String,
    /// Version.
    pub version: i32,
    /// Id.
    pub id: i32,
    /// Schema.
    pub schema: Arc<Stored>,
    /// Soft-deleted.
    pub deleted: bool,
}

/// A version in a path: a number or `latest` (also `-1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionSpec {
    /// The highest version.
    Latest,
    /// A number.
    Number(i32),
}

impl VersionSpec {
    /// Parses a path segment.
    pub fn parse(s: &str) -> Result<VersionSpec> {
        if s.eq_ignore_ascii_case("latest") {
            return Ok(VersionSpec::Latest);
        }
        match s.parse::<i32>() {
            Ok(-1) => Ok(VersionSpec::Latest),
            Ok(n) if n >= 1 => Ok(VersionSpec::Number(n)),
            _ => Err(Error::InvalidVersion(s.to_string())),
        }
    }
}

/// The registry.
#[derive(Debug)]
pub struct Registry {
    store: Store,
    /// Parsed schemas by id (an id always names the same text and references).
    parsed: Mutex<HashMap<i32, Arc<Parsed>>>,
    /// Identity strings by id.
    identity: Mutex<HashMap<i32, String>>,
}

impl Registry {
    /// A registry over an opened store.
    pub fn new(store: Store) -> Registry {
        Registry {
            store,
            parsed: Mutex::new(HashMap::new()),
            identity: Mutex::new(HashMap::new()),
        }
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    fn resolve_deps(
        st: &State,
        refs: &[Reference],
        out: &mut Vec<Dependency>,
        depth: usize,
    ) -> Result<()> {
        if depth > 32 {
            return Err(Error::InvalidSchema("references nested too deeply".into()));
        }
        for r in refs {
            let v = st
                .subjects
                .get(&r.subject)
                .and_then(|vs| vs.get(&r.version))
                .ok_or_else(|| {
                    Error::InvalidSchema(format!(
                        "reference {} to subject {} version {} does not exist",
                        r.name, r.subject, r.version
                    ))
                })?;
            Self::resolve_deps(st, &v.schema.references, out, depth + 1)?;
            if !out.iter().any(|d| d.name == r.name) {
                out.push(Dependency {
                    name: r.name.clone(),
                    schema: v.schema.schema.clone(),
                });
            }
        }
        Ok(())
    }

    fn parse_input(st: &State, t: SchemaType, text: &str, refs: &[Reference]) -> Result<Parsed> {
        let mut deps = Vec::new();
        Self::resolve_deps(st, refs, &mut deps, 0)?;
        schema::parse(t, text, &deps)
    }

    fn parsed_by_id(&self, st: &State, id: i32, stored: &Stored) -> Result<Arc<Parsed>> {
        if let Some(p) = self.parsed.lock().ok().and_then(|m| m.get(&id).cloned()) {
            return Ok(p);
        }
        let p = Arc::new(Self::parse_input(
            st,
            stored.schema_type,
            &stored.schema,
            &stored.references,
        )?);
        if let Ok(mut m) = self.parsed.lock() {
            m.insert(id, p.clone());
        }
        Ok(p)
    }

    fn identity_of(&self, st: &State, id: i32, stored: &Stored) -> Option<String> {
        if let Some(i) = self.identity.lock().ok().and_then(|m| m.get(&id).cloned()) {
            return Some(i);
        }
        let i = self.parsed_by_id(st, id, stored).ok()?.identity();
        if let Ok(mut m) = self.identity.lock() {
            m.insert(id, i.clone());
        }
        Some(i)
    }

    fn same(
        &self,
        st: &State,
        id: i32,
        stored: &Stored,
        t: SchemaType,
        ident: &str,
        refs: &[Reference],
    ) -> bool {
        stored.schema_type == t
            && stored.references == refs
            && self.identity_of(st, id, stored).as_deref() == Some(ident)
    }

    fn check_writable(st: &State, subject: &str) -> Result<()> {
        if st.mode_of(Some(subject)) == "READONLY" {
            return Err(Error::OperationNotPermitted(format!(
                "Subject {subject} is in read-only mode"
            )));
        }
        Ok(())
    }

    /// Registers a schema under a subject; returns `(id, version)`. Registering a schema the
    /// subject already has returns its existing id and version.
    pub async fn register(
        &self,
        subject: &str,
        input: SchemaInput,
        normalize: bool,
    ) -> Result<(i32, i32)> {
        let _w = self.store.lock().await;
        let (record, id, version) = {
            let st = self.store.read();
            Self::check_writable(&st, subject)?;
            let import = st.mode_of(Some(subject)) == "IMPORT";
            let parsed =
                Self::parse_input(&st, input.schema_type, &input.schema, &input.references)?;
            let ident = parsed.identity();
            let text = if normalize {
                parsed.normalized(&input.schema)
            } else {
                input.schema.clone()
            };
            let versions = st.versions(subject, true);
            for (n, v) in &versions {
                if !v.deleted
                    && self.same(
                        &st,
                        v.id,
                        &v.schema,
                        input.schema_type,
                        &ident,
                        &input.references,
                    )
                {
                    return Ok((v.id, *n));
                }
            }
            let existing_id = st.uses.keys().copied().find(|&id| {
                st.by_id(id).is_some_and(|s| {
                    self.same(&st, id, &s, input.schema_type, &ident, &input.references)
                })
            });
            let id = match (input.id.filter(|&i| i >= 0), existing_id) {
                (Some(asked), Some(found)) if asked != found => {
                    return Err(Error::OperationNotPermitted(format!(
                        "Overwrite new schema with id {found} is not permitted: id {asked} was asked for"
                    )))
                }
                (Some(asked), None) if !import => {
                    if st.by_id(asked).is_some() || asked <= st.max_id {
                        return Err(Error::OperationNotPermitted(format!(
                            "Overwrite new schema with id {asked} is not permitted."
                        )));
                    }
                    asked
                }
                (Some(asked), None) => {
                    if st.by_id(asked).is_some() {
                        return Err(Error::OperationNotPermitted(format!(
                            "Overwrite new schema with id {asked} is not permitted."
                        )));
                    }
                    asked
                }
                (_, Some(found)) => found,
                (None, None) => st.max_id + 1,
            };
            if !import {
                let live: Vec<(i32, Arc<Stored>, i32)> = versions
                    .iter()
                    .filter(|(_, v)| !v.deleted)
                    .map(|(n, v)| (v.id, v.schema.clone(), *n))
                    .collect();
                let mut olds = Vec::with_capacity(live.len());
                for (vid, s, _) in &live {
                    olds.push(self.parsed_by_id(&st, *vid, s)?);
                }
                let olds: Vec<&Parsed> = olds.iter().map(|p| p.as_ref()).collect();
                let problems = schema::check(st.level(Some(subject)), &parsed, &olds)?;
                if !problems.is_empty() {
                    return Err(Error::Incompatible {
                        subject: subject.to_string(),
                        messages: problems,
                    });
                }
            }
            let next = versions.iter().map(|(n, _)| *n).max().unwrap_or(0) + 1;
            let version = match input.version.filter(|&v| v >= 1) {
                Some(v) if import => v,
                Some(v) if v != next => {
                    return Err(Error::InvalidSchema(format!(
                        "version {v} was asked for; the next version of {subject} is {next}"
                    )))
                }
                _ => next,
            };
            let value = SchemaValue {
                subject: subject.to_string(),
                version,
                id,
                schema_type: input.schema_type,
                references: input.references.clone(),
                schema: text,
                deleted: false,
            };
            (
                (
                    to_bytes(&Key::schema(subject, version)),
                    Some(to_bytes(&value)),
                ),
                id,
                version,
            )
        };
        self.store.write(vec![record]).await?;
        Ok((id, version))
    }

    /// Finds the version of `subject` holding this schema.
    pub fn lookup(&self, subject: &str, input: &SchemaInput, deleted: bool) -> Result<VersionView> {
        let st = self.store.read();
        let versions = st.versions(subject, true);
        if versions.iter().all(|(_, v)| v.deleted && !deleted) {
            return Err(Error::SubjectNotFound(subject.to_string()));
        }
        let parsed = Self::parse_input(&st, input.schema_type, &input.schema, &input.references)?;
        let ident = parsed.identity();
        for (n, v) in versions.iter().rev() {
            if (deleted || !v.deleted)
                && self.same(
                    &st,
                    v.id,
                    &v.schema,
                    input.schema_type,
                    &ident,
                    &input.references,
                )
            {
                return Ok(VersionView {
                    subject: subject.to_string(),
                    version: *n,
                    id: v.id,
                    schema: v.schema.clone(),
                    deleted: v.deleted,
                });
            }
        }
        Err(Error::SchemaNotFound(String::new()))
    }

    /// Subjects with a live version (or any, with `deleted`), optionally by prefix.
    pub fn subjects(&self, prefix: &str, deleted: bool) -> Vec<String> {
        let st = self.store.read();
        st.subjects
            .iter()
            .filter(|(s, vs)| s.starts_with(prefix) && vs.values().any(|v| deleted || !v.deleted))
            .map(|(s, _)| s.clone())
            .collect()
    }

    /// A subject's version numbers.
    pub fn versions(&self, subject: &str, deleted: bool) -> Result<Vec<i32>> {
        let st = self.store.read();
        let v: Vec<i32> = st
            .versions(subject, deleted)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        if v.is_empty() {
            return Err(Error::SubjectNotFound(subject.to_string()));
        }
        Ok(v)
    }

    fn version_in(
        st: &State,
        subject: &str,
        spec: VersionSpec,
        deleted: bool,
    ) -> Result<VersionView> {
        let versions = st.versions(subject, true);
        if !versions.iter().any(|(_, v)| deleted || !v.deleted) {
            return Err(Error::SubjectNotFound(subject.to_string()));
        }
        let found = match spec {
            VersionSpec::Latest => versions.iter().rev().find(|(_, v)| deleted || !v.deleted),
            VersionSpec::Number(n) => versions
                .iter()
                .find(|(m, v)| *m == n && (deleted || !v.deleted)),
        };
        let (n, v) = found.ok_or_else(|| {
            Error::VersionNotFound(match spec {
                VersionSpec::Latest => "latest".into(),
                VersionSpec::Number(n) => n.to_string(),
            })
        })?;
        Ok(VersionView {
            subject: subject.to_string(),
            version: *n,
            id: v.id,
            schema: v.schema.clone(),
            deleted: v.deleted,
        })
    }

    /// One version of a subject.
    pub fn version(&self, subject: &str, spec: VersionSpec, deleted: bool) -> Result<VersionView> {
        Self::version_in(&self.store.read(), subject, spec, deleted)
    }

    /// The schema an id names.
    pub fn by_id(&self, id: i32) -> Result<Arc<Stored>> {
        self.store
            .read()
            .by_id(id)
            .ok_or_else(|| Error::SchemaNotFound(String::new()))
    }

    /// The schema an id names, as a base64 Protobuf descriptor (`format=serialized`).
    pub fn serialized(&self, id: i32, stored: &Stored) -> Result<String> {
        if stored.schema_type != SchemaType::Protobuf {
            return Ok(stored.schema.clone());
        }
        if schema::protobuf::decode_base64(&stored.schema).is_some() {
            return Ok(stored.schema.trim().to_string());
        }
        let st = self.store.read();
        match &*self.parsed_by_id(&st, id, stored)? {
            Parsed::Protobuf(fd) => Ok(schema::protobuf::serialized(fd, None)),
            _ => Ok(stored.schema.clone()),
        }
    }

    /// The (subject, version) pairs that use an id.
    pub fn id_versions(&self, id: i32, deleted: bool) -> Result<Vec<(String, i32)>> {
        let st = self.store.read();
        let uses = st
            .uses
            .get(&id)
            .ok_or_else(|| Error::SchemaNotFound(String::new()))?;
        Ok(uses
            .iter()
            .filter(|(s, v)| {
                deleted
                    || st
                        .subjects
                        .get(s)
                        .and_then(|vs| vs.get(v))
                        .is_some_and(|v| !v.deleted)
            })
            .cloned()
            .collect())
    }

    /// Ids of live schemas referencing a version.
    pub fn referenced_by(&self, subject: &str, spec: VersionSpec) -> Result<Vec<i32>> {
        let st = self.store.read();
        let v = Self::version_in(&st, subject, spec, false)?;
        Ok(st.referenced_by(subject, v.version))
    }

    /// Deletes a subject: soft (versions marked deleted) or, after that, permanently.
    pub async fn delete_subject(&self, subject: &str, permanent: bool) -> Result<Vec<i32>> {
        let _w = self.store.lock().await;
        let (records, versions) = {
            let st = self.store.read();
            Self::check_writable(&st, subject)?;
            let all = st.versions(subject, true);
            if all.is_empty() {
                return Err(Error::SubjectNotFound(subject.to_string()));
            }
            for (n, _) in &all {
                if !st.referenced_by(subject, *n).is_empty() {
                    return Err(Error::ReferenceExists(subject.to_string(), *n));
                }
            }
            let live: Vec<(i32, &crate::state::Version)> =
                all.iter().filter(|(_, v)| !v.deleted).copied().collect();
            if permanent {
                if !live.is_empty() {
                    return Err(Error::SubjectNotSoftDeleted(subject.to_string()));
                }
                let mut records: Vec<(Vec<u8>, Option<Vec<u8>>)> = all
                    .iter()
                    .map(|(n, _)| (to_bytes(&Key::schema(subject, *n)), None))
                    .collect();
                if st.subject_config.contains_key(subject) {
                    records.push((to_bytes(&Key::config(Some(subject))), None));
                }
                if st.subject_mode.contains_key(subject) {
                    records.push((to_bytes(&Key::mode(Some(subject))), None));
                }
                (records, all.iter().map(|(n, _)| *n).collect::<Vec<_>>())
            } else {
                if live.is_empty() {
                    return Err(Error::SubjectSoftDeleted(subject.to_string()));
                }
                let records = live
                    .iter()
                    .map(|(n, v)| {
                        (
                            to_bytes(&Key::schema(subject, *n)),
                            Some(to_bytes(&deleted_value(subject, *n, v))),
                        )
                    })
                    .collect();
                (records, live.iter().map(|(n, _)| *n).collect())
            }
        };
        self.store.write(records).await?;
        Ok(versions)
    }

    /// Deletes one version: soft, or (after a soft delete) permanently.
    pub async fn delete_version(
        &self,
        subject: &str,
        spec: VersionSpec,
        permanent: bool,
    ) -> Result<i32> {
        let _w = self.store.lock().await;
        let (record, n) = {
            let st = self.store.read();
            Self::check_writable(&st, subject)?;
            if st.versions(subject, true).is_empty() {
                return Err(Error::SubjectNotFound(subject.to_string()));
            }
            let include_deleted = permanent || matches!(spec, VersionSpec::Number(_));
            let v = Self::version_in(&st, subject, spec, include_deleted)?;
            if !st.referenced_by(subject, v.version).is_empty() {
                return Err(Error::ReferenceExists(subject.to_string(), v.version));
            }
            let key = to_bytes(&Key::schema(subject, v.version));
            if permanent {
                if !v.deleted {
                    return Err(Error::VersionNotSoftDeleted(subject.to_string(), v.version));
                }
                ((key, None), v.version)
            } else {
                if v.deleted {
                    return Err(Error::VersionSoftDeleted(subject.to_string(), v.version));
                }
                let ver = crate::state::Version {
                    id: v.id,
                    schema: v.schema.clone(),
                    deleted: false,
                };
                (
                    (
                        key,
                        Some(to_bytes(&deleted_value(subject, v.version, &ver))),
                    ),
                    v.version,
                )
            }
        };
        self.store.write(vec![record]).await?;
        Ok(n)
    }

    /// Problems of `input` against a subject's version (or all versions the level covers).
    pub fn test_compatibility(
        &self,
        subject: &str,
        spec: Option<VersionSpec>,
        input: &SchemaInput,
    ) -> Result<Vec<String>> {
        let st = self.store.read();
        let parsed = Self::parse_input(&st, input.schema_type, &input.schema, &input.references)?;
        let level = st.level(Some(subject));
        let live = st.versions(subject, false);
        let targets: Vec<(i32, Arc<Stored>)> = match spec {
            Some(spec) => {
                if live.is_empty() {
                    return Err(Error::SubjectNotFound(subject.to_string()));
                }
                let v = Self::version_in(&st, subject, spec, false)?;
                vec![(v.id, v.schema)]
            }
            None => live.iter().map(|(_, v)| (v.id, v.schema.clone())).collect(),
        };
        let mut olds = Vec::with_capacity(targets.len());
        for (id, s) in &targets {
            olds.push(self.parsed_by_id(&st, *id, s)?);
        }
        let olds: Vec<&Parsed> = olds.iter().map(|p| p.as_ref()).collect();
        let level = match (spec, level) {
            // Against one named version the transitive levels mean their plain form.
            (Some(_), Level::BackwardTransitive) => Level::Backward,
            (Some(_), Level::ForwardTransitive) => Level::Forward,
            (Some(_), Level::FullTransitive) => Level::Full,
            (_, l) => l,
        };
        schema::check(level, &parsed, &olds)
    }

    /// The compatibility level: global (`None`) or a subject's (`None` when not set and not
    /// defaulting to the global one).
    pub fn get_config(&self, subject: Option<&str>, default_to_global: bool) -> Result<Level> {
        let st = self.store.read();
        match subject {
            None => Ok(st.level(None)),
            Some(s) => match st.subject_config.get(s) {
                Some(l) => Ok(*l),
                None if default_to_global => Ok(st.level(None)),
                None => Err(Error::SubjectCompatibilityNotConfigured(s.to_string())),
            },
        }
    }

    /// Sets a compatibility level.
    pub async fn set_config(&self, subject: Option<&str>, level: Level) -> Result<()> {
        let _w = self.store.lock().await;
        let v = ConfigValue {
            compatibility_level: level.as_str().to_string(),
        };
        self.store
            .write(vec![(to_bytes(&Key::config(subject)), Some(to_bytes(&v)))])
            .await
    }

    /// Deletes a compatibility level; returns the one that was in force.
    pub async fn delete_config(&self, subject: Option<&str>) -> Result<Level> {
        let _w = self.store.lock().await;
        let before = {
            let st = self.store.read();
            match subject {
                Some(s) => st
                    .subject_config
                    .get(s)
                    .copied()
                    .ok_or_else(|| Error::SubjectNotFound(s.to_string()))?,
                None => st.level(None),
            }
        };
        self.store
            .write(vec![(to_bytes(&Key::config(subject)), None)])
            .await?;
        Ok(before)
    }

    /// The mode: global or a subject's.
    pub fn get_mode(&self, subject: Option<&str>, default_to_global: bool) -> Result<String> {
        let st = self.store.read();
        match subject {
            None => Ok(st.mode_of(None).to_string()),
            Some(s) => match st.subject_mode.get(s) {
                Some(m) => Ok(m.clone()),
                None if default_to_global => Ok(st.mode_of(None).to_string()),
                None => Err(Error::SubjectModeNotConfigured(s.to_string())),
            },
        }
    }

    /// Sets a mode (READWRITE, READONLY, IMPORT). IMPORT needs an empty registry (or subject)
    /// unless `force`.
    pub async fn set_mode(&self, subject: Option<&str>, mode: &str, force: bool) -> Result<String> {
        let mode = mode.to_ascii_uppercase();
        if !["READWRITE", "READONLY", "IMPORT", "READONLY_OVERRIDE"].contains(&mode.as_str()) {
            return Err(Error::InvalidMode);
        }
        let _w = self.store.lock().await;
        if mode == "IMPORT" && !force {
            let st = self.store.read();
            let non_empty = match subject {
                Some(s) => !st.versions(s, true).is_empty(),
                None => !st.subjects.is_empty(),
            };
            if non_empty {
                return Err(Error::OperationNotPermitted(
                    "Cannot import since found existing subjects".into(),
                ));
            }
        }
        let v = ModeValue { mode: mode.clone() };
        self.store
            .write(vec![(to_bytes(&Key::mode(subject)), Some(to_bytes(&v)))])
            .await?;
        Ok(mode)
    }

    /// Deletes a subject's mode; returns the one it had.
    pub async fn delete_mode(&self, subject: &str) -> Result<String> {
        let _w = self.store.lock().await;
        let before = self
            .store
            .read()
            .subject_mode
            .get(subject)
            .cloned()
            .ok_or_else(|| Error::SubjectNotFound(subject.to_string()))?;
        self.store
            .write(vec![(to_bytes(&Key::mode(Some(subject))), None)])
            .await?;
        Ok(before)
    }

    /// Every schema (latest live version of each subject, or all versions), for `/schemas`.
    pub fn all_schemas(&self, prefix: &str, latest_only: bool) -> Vec<VersionView> {
        let st = self.store.read();
        let mut out = Vec::new();
        for (s, vs) in &st.subjects {
            if !s.starts_with(prefix) {
                continue;
            }
            let live: BTreeMap<&i32, _> = vs.iter().filter(|(_, v)| !v.deleted).collect();
            let chosen: Vec<_> = if latest_only {
                live.into_iter().next_back().into_iter().collect()
            } else {
                live.into_iter().collect()
            };
            for (n, v) in chosen {
                out.push(VersionView {
                    subject: s.clone(),
                    version: *n,
                    id: v.id,
                    schema: v.schema.clone(),
                    deleted: false,
                });
            }
        }
        out
    }
}

fn deleted_value(subject: &str, version: i32, v: &crate::state::Version) -> SchemaValue {
    SchemaValue {
        subject: subject.to_string(),
        version,
        id: v.id,
        schema_type: v.schema.schema_type,
        references: v.schema.references.clone(),
        schema: v.schema.schema.clone(),
        deleted: true,
    }
}
