//! Turns confluent-kafka style configuration (a dict plus keyword arguments, values of any
//! simple type, callables for callbacks) into the string map the bindings take and the callbacks
//! the shell keeps.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

/// Callback-valued configuration.
#[derive(Default)]
pub struct Callbacks {
    pub on_delivery: Option<Py<PyAny>>,
    pub error_cb: Option<Py<PyAny>>,
    pub stats_cb: Option<Py<PyAny>>,
    pub throttle_cb: Option<Py<PyAny>>,
    pub on_commit: Option<Py<PyAny>>,
    pub logger: Option<Py<PyAny>>,
    pub oauth_cb: Option<Py<PyAny>>,
    /// The core's log lines waiting for `logger` (see [`attach_logger`]).
    pub log: Option<std::sync::Arc<odradek_bindings::log_router::LogQueue>>,
}

/// With a `logger`, the client's log goes to it rather than stderr, as confluent-kafka's
/// `logger=` does: the core's warnings and errors, and the `debug` contexts (taken out of
/// `props`, after the same check the client makes).
pub fn attach_logger(
    py: Python<'_>,
    props: &mut Vec<(String, String)>,
    cbs: &mut Callbacks,
) -> PyResult<()> {
    if cbs.logger.is_none() {
        return Ok(());
    }
    let mut debug = None;
    for (_, v) in props.iter().filter(|(k, _)| k.trim() == "debug") {
        debug = odradek_bindings::config::debug_filter_of(v)
            .map_err(|e| crate::errors::to_py_err(py, e))?;
    }
    props.retain(|(k, _)| k.trim() != "debug");
    let filter = odradek_bindings::log_router::logger_filter(debug.as_deref());
    cbs.log = Some(odradek_bindings::log_router::register(&filter));
    Ok(())
}

/// Hands the waiting log lines to `logger` (`logger.log(level, "%s: %s", module, message)`,
/// Python's levels), on the thread that polls.
pub fn serve_log(py: Python<'_>, cbs: &Callbacks) -> PyResult<()> {
    serve_log_to(py, cbs.logger.as_ref(), cbs.log.as_ref())
}

/// [`serve_log`] for a client that keeps its logger and queue apart from its callbacks.
pub fn serve_log_to(
    py: Python<'_>,
    logger: Option<&Py<PyAny>>,
    queue: Option<&std::sync::Arc<odradek_bindings::log_router::LogQueue>>,
) -> PyResult<()> {
    let (Some(logger), Some(queue)) = (logger, queue) else {
        return Ok(());
    };
    for line in queue.take() {
        let level = match line.level {
            tracing::Level::ERROR => 40,
            tracing::Level::WARN => 30,
            tracing::Level::INFO => 20,
            _ => 10,
        };
        logger.call_method1(py, "log", (level, "%s: %s", line.target, line.message))?;
    }
    Ok(())
}

fn value_string(key: &str, v: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(if b.is_true() { "true" } else { "false" }.to_string());
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(s.to_cow()?.to_string());
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(v.str()?.to_cow()?.to_string());
    }
    if let Ok(f) = v.cast::<PyFloat>() {
        let x = f.value();
        if x.fract() == 0.0 && x.abs() < 1e15 {
            return Ok(format!("{}", x as i64));
        }
        return Ok(x.to_string());
    }
    Err(PyTypeError::new_err(format!(
        "configuration property `{key}` must be a str, int, float or bool, not {}",
        v.get_type().name()?
    )))
}

/// Splits `conf` (and `kwargs`, which override it) into Kafka properties and callbacks.
pub fn parse(
    _py: Python<'_>,
    conf: Option<&Bound<'_, PyAny>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<(Vec<(String, String)>, Callbacks)> {
    let mut props: Vec<(String, String)> = Vec::new();
    let mut cbs = Callbacks::default();
    let mut add = |k: &Bound<'_, PyAny>,
                   v: &Bound<'_, PyAny>,
                   props: &mut Vec<(String, String)>|
     -> PyResult<()> {
        let key: String = k
            .extract()
            .map_err(|_| PyTypeError::new_err("configuration keys must be str"))?;
        let callable = || -> PyResult<Option<Py<PyAny>>> {
            if v.is_none() {
                return Ok(None);
            }
            if !v.is_callable() {
                return Err(PyTypeError::new_err(format!("`{key}` must be callable")));
            }
            Ok(Some(v.clone().unbind()))
        };
        match key.as_str() {
            "on_delivery" | "delivery.report.callback" | "dr_cb" | "dr_msg_cb" => {
                cbs.on_delivery = callable()?
            }
            "error_cb" => cbs.error_cb = callable()?,
            "stats_cb" => cbs.stats_cb = callable()?,
            "throttle_cb" => cbs.throttle_cb = callable()?,
            "on_commit" => cbs.on_commit = callable()?,
            "logger" => cbs.logger = Some(v.clone().unbind()),
            "oauth_cb" | "oauthbearer_token_refresh_cb" => cbs.oauth_cb = callable()?,
            "default.topic.config" => {
                let d = v
                    .cast::<PyDict>()
                    .map_err(|_| PyTypeError::new_err("`default.topic.config` must be a dict"))?;
                for (k2, v2) in d.iter() {
                    let key2: String = k2.extract()?;
                    props.push((key2.clone(), value_string(&key2, &v2)?));
                }
            }
            _ => {
                if v.is_none() {
                    return Ok(());
                }
                props.push((key.clone(), value_string(&key, v)?));
            }
        }
        Ok(())
    };
    if let Some(conf) = conf {
        if !conf.is_none() {
            let d = conf
                .cast::<PyDict>()
                .map_err(|_| PyTypeError::new_err("expected configuration dict"))?;
            for (k, v) in d.iter() {
                add(&k, &v, &mut props)?;
            }
        }
    }
    if let Some(kw) = kwargs {
        for (k, v) in kw.iter() {
            add(&k, &v, &mut props)?;
        }
    }
    Ok((props, cbs))
}
