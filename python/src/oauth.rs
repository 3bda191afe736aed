//! confluent-kafka's `oauth_cb` as the core's OAUTHBEARER token source: called with the value
//! of `sasl.oauthbearer.config`, it returns `(token, expiry_time)` or
//! `(token, expiry_time, principal, extensions)` with `expiry_time` in seconds since the epoch.
//! The core asks for a token when a connection authenticates and the cached one is past 80%
//! of its lifetime; the callback runs on a runtime thread holding the GIL, and an exception it
//! raises fails that authentication (reported like a wrong password).

use odradek::security::{OAuthToken, Secret, TokenFuture, TokenProvider};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// A Python `oauth_cb`.
pub struct PyTokenProvider {
    callback: Py<PyAny>,
    config: String,
}

impl std::fmt::Debug for PyTokenProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PyTokenProvider")
    }
}

impl PyTokenProvider {
    /// Wraps `callback`, which gets `config` (`sasl.oauthbearer.config`) on every call.
    pub fn new(callback: Py<PyAny>, config: String) -> Self {
        PyTokenProvider { callback, config }
    }
}

fn failed(detail: String) -> odradek::Error {
    odradek::Error::SaslAuthentication {
        broker: "oauth_cb".into(),
        detail,
    }
}

fn call(py: Python<'_>, callback: &Py<PyAny>, config: &str) -> Result<OAuthToken, odradek::Error> {
    let out = callback.call1(py, (config,)).map_err(|e| {
        failed(format!(
            "oauth_cb raised {}",
            e.get_type(py)
                .name()
                .map_or_else(|_| "an exception".to_string(), |n| n.to_string())
        ))
    })?;
    let out = out.bind(py);
    let tuple = out.cast::<PyTuple>().map_err(|_| {
        failed("oauth_cb must return (token, expiry_time[, principal, extensions])".into())
    })?;
    if tuple.len() != 2 && tuple.len() != 4 {
        return Err(failed(format!(
            "oauth_cb returned a tuple of {} items; expected 2 or 4",
            tuple.len()
        )));
    }
    let item = |i: usize| {
        tuple
            .get_item(i)
            .map_err(|_| failed("oauth_cb returned a short tuple".into()))
    };
    let token: String = item(0)?
        .extract()
        .map_err(|_| failed("oauth_cb's token must be a str".into()))?;
    let expiry: f64 = item(1)?.extract().map_err(|_| {
        failed("oauth_cb's expiry_time must be a number of seconds since the epoch".into())
    })?;
    let (principal, extensions) = if tuple.len() == 4 {
        let principal: String = item(2)?
            .extract()
            .map_err(|_| failed("oauth_cb's principal must be a str".into()))?;
        let mut extensions = Vec::new();
        let ext = item(3)?;
        if !ext.is_none() {
            let d = ext
                .cast::<PyDict>()
                .map_err(|_| failed("oauth_cb's extensions must be a dict".into()))?;
            for (k, v) in d.iter() {
                let k: String = k
                    .extract()
                    .map_err(|_| failed("extension names must be str".into()))?;
                let v: String = v
                    .extract()
                    .map_err(|_| failed("extension values must be str".into()))?;
                extensions.push((k, v));
            }
        }
        (principal, extensions)
    } else {
        (String::new(), Vec::new())
    };
    Ok(OAuthToken {
        value: Secret::new(token),
        expires_at_ms: (expiry * 1000.0) as i64,
        principal,
        extensions,
    })
}

impl TokenProvider for PyTokenProvider {
    fn token(&self) -> TokenFuture {
        let callback = Python::attach(|py| self.callback.clone_ref(py));
        let config = self.config.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || Python::attach(|py| call(py, &callback, &config)))
                .await
                .map_err(|_| failed("oauth_cb did not return".into()))?
        })
    }
}

/// Splits `props` into the core's configuration and the binding's settings, with `oauth_cb`
/// (if given) as the OAUTHBEARER token source.
pub fn split_config(
    py: Python<'_>,
    props: Vec<(String, String)>,
    oauth_cb: Option<Py<PyAny>>,
) -> Result<
    (
        odradek::ClientConfig,
        odradek_bindings::config::BindingSettings,
    ),
    odradek_bindings::ClientError,
> {
    let sasl_config = props
        .iter()
        .rev()
        .find(|(k, _)| k == "sasl.oauthbearer.config")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let (mut config, settings) = py.detach(|| odradek_bindings::config::split(props))?;
    if let Some(cb) = oauth_cb {
        config
            .set_token_provider(std::sync::Arc::new(PyTokenProvider::new(cb, sasl_config)))
            .map_err(|e| {
                odradek_bindings::ClientError::from_core(&e, odradek_bindings::Stage::Request)
            })?;
    }
    Ok((config, settings))
}
