//! The REST API: Confluent Schema Registry's paths, query parameters, bodies, status codes and
//! `{"error_code", "message"}` errors, served as `application/vnd.schemaregistry.v1+json`.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::registry::{Registry, SchemaInput, VersionSpec, VersionView};
use crate::schema::{Level, Reference, SchemaType};
use crate::state::Stored;

/// The media type of every response.
pub const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";

/// Request media types accepted (as Confluent's registry does; a missing one is taken as
/// `application/octet-stream`).
const ACCEPTED: &[&str] = &[
    "application/vnd.schemaregistry.v1+json",
    "application/vnd.schemaregistry+json",
    "application/json",
    "application/octet-stream",
];

/// What the handlers share.
#[derive(Debug)]
pub struct App {
    /// The registry.
    pub registry: Arc<Registry>,
    /// Basic-auth users (`user`, `password`); empty: no authentication.
    pub users: Vec<(String, String)>,
    /// Largest request body accepted, in bytes.
    pub max_body: usize,
}

type Shared = State<Arc<App>>;
type Q = Query<HashMap<String, String>>;

fn reply(status: StatusCode, v: &Value) -> Response {
    let mut r = (status, v.to_string()).into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    r
}

fn ok(v: Value) -> Result<Response> {
    Ok(reply(StatusCode::OK, &v))
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if status.is_server_error() {
            tracing::warn!(error = %self, "request failed");
        }
        let mut r = reply(
            status,
            &json!({"error_code": self.error_code(), "message": self.to_string()}),
        );
        if matches!(self, Error::Unauthorized) {
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"SchemaRegistry\""),
            );
        }
        if matches!(self, Error::PayloadTooLarge(_)) {
            // The body was refused unread (or half read): the connection cannot carry another
            // request, so the client must not reuse it (a pooled client's next request on it
            // failed with a broken pipe).
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        r
    }
}

fn flag(q: &HashMap<String, String>, k: &str) -> bool {
    q.get(k).is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// Reads and parses a JSON body: media type, size and syntax checked, in that order.
async fn body_json(headers: &HeaderMap, body: Body, max: usize) -> Result<Value> {
    if let Some(ct) = headers.get(header::CONTENT_TYPE) {
        let ct = ct
            .to_str()
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if !ACCEPTED.contains(&ct.as_str()) {
            return Err(Error::UnsupportedMediaType);
        }
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(Error::PayloadTooLarge(max));
    }
    let bytes = axum::body::to_bytes(body, max)
        .await
        .map_err(|_| Error::PayloadTooLarge(max))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| Error::BadRequest(format!("Unexpected character in the body: {e}")))
}

#[derive(Deserialize)]
struct SchemaBody {
    #[serde(default)]
    schema: Option<String>,
    #[serde(rename = "schemaType", default)]
    schema_type: Option<String>,
    #[serde(default)]
    references: Option<Vec<Reference>>,
    #[serde(default)]
    id: Option<i32>,
    #[serde(default)]
    version: Option<i32>,
}

fn schema_input(v: Value) -> Result<SchemaInput> {
    let b: SchemaBody = serde_json::from_value(v)
        .map_err(|e| Error::Unprocessable(format!("Unrecognized body: {e}")))?;
    let schema = b
        .schema
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| Error::InvalidSchema("Empty schema".into()))?;
    let schema_type = match b.schema_type.as_deref() {
        None | Some("") => SchemaType::Avro,
        Some(t) => SchemaType::parse(t)?,
    };
    Ok(SchemaInput {
        schema,
        schema_type,
        references: b.references.unwrap_or_default(),
        id: b.id,
        version: b.version,
    })
}

fn stored_json(s: &Stored, m: &mut serde_json::Map<String, Value>) {
    if !s.schema_type.is_avro() {
        m.insert("schemaType".into(), json!(s.schema_type.as_str()));
    }
    if !s.references.is_empty() {
        m.insert("references".into(), json!(s.references));
    }
    m.insert("schema".into(), json!(s.schema));
}

fn view_json(v: &VersionView, deleted: bool) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("subject".into(), json!(v.subject));
    m.insert("version".into(), json!(v.version));
    m.insert("id".into(), json!(v.id));
    stored_json(&v.schema, &mut m);
    if deleted && v.deleted {
        m.insert("deleted".into(), json!(true));
    }
    Value::Object(m)
}

fn parse_id(s: &str) -> Result<i32> {
    s.parse::<i32>()
        .map_err(|_| Error::SchemaNotFound(String::new()))
}

async fn root() -> Response {
    reply(StatusCode::OK, &json!({}))
}

async fn schema_types() -> Response {
    reply(StatusCode::OK, &json!(["JSON", "PROTOBUF", "AVRO"]))
}

async fn list_schemas(State(app): Shared, Query(q): Q) -> Result<Response> {
    let prefix = q.get("subjectPrefix").map_or("", String::as_str);
    let all = app.registry.all_schemas(prefix, flag(&q, "latestOnly"));
    ok(Value::Array(
        all.iter().map(|v| view_json(v, false)).collect(),
    ))
}

async fn schema_by_id(State(app): Shared, Path(id): Path<String>, Query(q): Q) -> Result<Response> {
    let id = parse_id(&id)?;
    let s = app.registry.by_id(id)?;
    let mut m = serde_json::Map::new();
    stored_json(&s, &mut m);
    if q.get("format").is_some_and(|f| f == "serialized") {
        m.insert("schema".into(), json!(app.registry.serialized(id, &s)?));
    }
    ok(Value::Object(m))
}

async fn raw_schema_by_id(State(app): Shared, Path(id): Path<String>) -> Result<Response> {
    let s = app.registry.by_id(parse_id(&id)?)?;
    Ok(raw(&s.schema))
}

fn raw(text: &str) -> Response {
    let mut r = text.to_string().into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    r
}

async fn id_versions(State(app): Shared, Path(id): Path<String>, Query(q): Q) -> Result<Response> {
    let v = app
        .registry
        .id_versions(parse_id(&id)?, flag(&q, "deleted"))?;
    ok(Value::Array(
        v.iter()
            .map(|(s, n)| json!({"subject": s, "version": n}))
            .collect(),
    ))
}

async fn id_subjects(State(app): Shared, Path(id): Path<String>, Query(q): Q) -> Result<Response> {
    let mut v: Vec<String> = app
        .registry
        .id_versions(parse_id(&id)?, flag(&q, "deleted"))?
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    v.dedup();
    ok(json!(v))
}

async fn list_subjects(State(app): Shared, Query(q): Q) -> Result<Response> {
    let prefix = q.get("subjectPrefix").map_or("", String::as_str);
    ok(json!(app.registry.subjects(prefix, flag(&q, "deleted"))))
}

async fn lookup(
    State(app): Shared,
    Path(s): Path<String>,
    Query(q): Q,
    headers: HeaderMap,
    body: Body,
) -> Result<Response> {
    let input = schema_input(body_json(&headers, body, app.max_body).await?)?;
    let deleted = flag(&q, "deleted");
    let v = app.registry.lookup(&s, &input, deleted)?;
    ok(view_json(&v, deleted))
}

async fn delete_subject(
    State(app): Shared,
    Path(s): Path<String>,
    Query(q): Q,
) -> Result<Response> {
    ok(json!(
        app.registry
            .delete_subject(&s, flag(&q, "permanent"))
            .await?
    ))
}

async fn list_versions(State(app): Shared, Path(s): Path<String>, Query(q): Q) -> Result<Response> {
    ok(json!(app.registry.versions(&s, flag(&q, "deleted"))?))
}

async fn register(
    State(app): Shared,
    Path(s): Path<String>,
    Query(q): Q,
    headers: HeaderMap,
    body: Body,
) -> Result<Response> {
    let input = schema_input(body_json(&headers, body, app.max_body).await?)?;
    let (id, version) = app
        .registry
        .register(&s, input, flag(&q, "normalize"))
        .await?;
    let v = app
        .registry
        .version(&s, VersionSpec::Number(version), true)?;
    let mut m = serde_json::Map::new();
    m.insert("id".into(), json!(id));
    m.insert("subject".into(), json!(s));
    m.insert("version".into(), json!(version));
    stored_json(&v.schema, &mut m);
    ok(Value::Object(m))
}

async fn get_version(
    State(app): Shared,
    Path((s, v)): Path<(String, String)>,
    Query(q): Q,
) -> Result<Response> {
    let deleted = flag(&q, "deleted");
    let view = app.registry.version(&s, VersionSpec::parse(&v)?, deleted)?;
    let mut out = view_json(&view, deleted);
    if q.get("format").is_some_and(|f| f == "serialized") {
        out["schema"] = json!(app.registry.serialized(view.id, &view.schema)?);
    }
    ok(out)
}

async fn raw_version(
    State(app): Shared,
    Path((s, v)): Path<(String, String)>,
    Query(q): Q,
) -> Result<Response> {
    let view = app
        .registry
        .version(&s, VersionSpec::parse(&v)?, flag(&q, "deleted"))?;
    Ok(raw(&view.schema.schema))
}

async fn referenced_by(
    State(app): Shared,
    Path((s, v)): Path<(String, String)>,
) -> Result<Response> {
    ok(json!(app
        .registry
        .referenced_by(&s, VersionSpec::parse(&v)?)?))
}

async fn delete_version(
    State(app): Shared,
    Path((s, v)): Path<(String, String)>,
    Query(q): Q,
) -> Result<Response> {
    let spec = VersionSpec::parse(&v)?;
    ok(json!(
        app.registry
            .delete_version(&s, spec, flag(&q, "permanent"))
            .await?
    ))
}

fn compat_reply(problems: Vec<String>, verbose: bool) -> Result<Response> {
    let mut m = serde_json::Map::new();
    m.insert("is_compatible".into(), json!(problems.is_empty()));
    if verbose {
        m.insert("messages".into(), json!(problems));
    }
    ok(Value::Object(m))
}

async fn compat_version(
    State(app): Shared,
    Path((s, v)): Path<(String, String)>,
    Query(q): Q,
    headers: HeaderMap,
    body: Body,
) -> Result<Response> {
    let spec = VersionSpec::parse(&v)?;
    let input = schema_input(body_json(&headers, body, app.max_body).await?)?;
    compat_reply(
        app.registry.test_compatibility(&s, Some(spec), &input)?,
        flag(&q, "verbose"),
    )
}

async fn compat_all(
    State(app): Shared,
    Path(s): Path<String>,
    Query(q): Q,
    headers: HeaderMap,
    body: Body,
) -> Result<Response> {
    let input = schema_input(body_json(&headers, body, app.max_body).await?)?;
    compat_reply(
        app.registry.test_compatibility(&s, None, &input)?,
        flag(&q, "verbose"),
    )
}

async fn level_from(headers: &HeaderMap, body: Body, max: usize) -> Result<Level> {
    let v = body_json(headers, body, max).await?;
    let level = v
        .get("compatibility")
        .or_else(|| v.get("compatibilityLevel"))
        .and_then(Value::as_str)
        .ok_or(Error::InvalidCompatibilityLevel)?;
    Level::parse(level)
}

async fn get_global_config(State(app): Shared) -> Result<Response> {
    ok(json!({"compatibilityLevel": app.registry.get_config(None, true)?.as_str()}))
}

async fn put_global_config(State(app): Shared, headers: HeaderMap, body: Body) -> Result<Response> {
    let level = level_from(&headers, body, app.max_body).await?;
    app.registry.set_config(None, level).await?;
    ok(json!({"compatibility": level.as_str()}))
}

async fn delete_global_config(State(app): Shared) -> Result<Response> {
    let before = app.registry.delete_config(None).await?;
    ok(json!({"compatibilityLevel": before.as_str()}))
}

async fn get_config(State(app): Shared, Path(s): Path<String>, Query(q): Q) -> Result<Response> {
    let level = app
        .registry
        .get_config(Some(&s), flag(&q, "defaultToGlobal"))?;
    ok(json!({"compatibilityLevel": level.as_str()}))
}

async fn put_config(
    State(app): Shared,
    Path(s): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response> {
    let level = level_from(&headers, body, app.max_body).await?;
    app.registry.set_config(Some(&s), level).await?;
    ok(json!({"compatibility": level.as_str()}))
}

async fn delete_config(State(app): Shared, Path(s): Path<String>) -> Result<Response> {
    let before = app.registry.delete_config(Some(&s)).await?;
    ok(json!({"compatibilityLevel": before.as_str()}))
}

async fn mode_from(headers: &HeaderMap, body: Body, max: usize) -> Result<String> {
    let v = body_json(headers, body, max).await?;
    v.get("mode")
        .and_then(Value::as_str)
        .map(String::from)
        .ok_or(Error::InvalidMode)
}

async fn get_global_mode(State(app): Shared) -> Result<Response> {
    ok(json!({"mode": app.registry.get_mode(None, true)?}))
}

async fn put_global_mode(
    State(app): Shared,
    Query(q): Q,
    headers: HeaderMap,
    body: Body,
) -> Result<Response> {
    let mode = mode_from(&headers, body, app.max_body).await?;
    ok(json!({"mode": app.registry.set_mode(None, &mode, flag(&q, "force")).await?}))
}

async fn get_mode(State(app): Shared, Path(s): Path<String>, Query(q): Q) -> Result<Response> {
    ok(json!({"mode": app.registry.get_mode(Some(&s), flag(&q, "defaultToGlobal"))?}))
}

async fn put_mode(
    State(app): Shared,
    Path(s): Path<String>,
    Query(q): Q,
    headers: HeaderMap,
    body: Body,
) -> Result<Response> {
    let mode = mode_from(&headers, body, app.max_body).await?;
    ok(json!({"mode": app.registry.set_mode(Some(&s), &mode, flag(&q, "force")).await?}))
}

async fn delete_mode(State(app): Shared, Path(s): Path<String>) -> Result<Response> {
    ok(json!({"mode": app.registry.delete_mode(&s).await?}))
}

async fn not_found() -> Error {
    Error::NotFound
}

async fn not_allowed() -> Error {
    Error::MethodNotAllowed
}

fn authorized(users: &[(String, String)], headers: &HeaderMap) -> bool {
    let Some(v) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let Some(b64) = v
        .strip_prefix("Basic ")
        .or_else(|| v.strip_prefix("basic "))
    else {
        return false;
    };
    let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(b64.trim()) else {
        return false;
    };
    let Ok(raw) = String::from_utf8(raw) else {
        return false;
    };
    let Some((u, p)) = raw.split_once(':') else {
        return false;
    };
    users.iter().any(|(uu, pp)| uu == u && pp == p)
}

async fn auth(State(app): Shared, req: Request, next: Next) -> Response {
    if !app.users.is_empty() && !authorized(&app.users, req.headers()) {
        return Error::Unauthorized.into_response();
    }
    next.run(req).await
}

/// The API's router.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(root))
        .route("/schemas", get(list_schemas))
        .route("/schemas/types", get(schema_types))
        .route("/schemas/ids/{id}", get(schema_by_id))
        .route("/schemas/ids/{id}/schema", get(raw_schema_by_id))
        .route("/schemas/ids/{id}/versions", get(id_versions))
        .route("/schemas/ids/{id}/subjects", get(id_subjects))
        .route("/subjects", get(list_subjects))
        .route("/subjects/{s}", post(lookup).delete(delete_subject))
        .route("/subjects/{s}/versions", get(list_versions).post(register))
        .route(
            "/subjects/{s}/versions/{v}",
            get(get_version).delete(delete_version),
        )
        .route("/subjects/{s}/versions/{v}/schema", get(raw_version))
        .route(
            "/subjects/{s}/versions/{v}/referencedby",
            get(referenced_by),
        )
        .route("/compatibility/subjects/{s}/versions", post(compat_all))
        .route(
            "/compatibility/subjects/{s}/versions/{v}",
            post(compat_version),
        )
        .route(
            "/config",
            get(get_global_config)
                .put(put_global_config)
                .delete(delete_global_config),
        )
        .route(
            "/config/{s}",
            get(get_config).put(put_config).delete(delete_config),
        )
        .route("/mode", get(get_global_mode).put(put_global_mode))
        .route("/mode/{s}", get(get_mode).put(put_mode).delete(delete_mode))
        .fallback(not_found)
        .method_not_allowed_fallback(not_allowed)
        .layer(middleware::from_fn_with_state(app.clone(), auth))
        .with_state(app)
}
