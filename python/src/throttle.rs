//! `ThrottleEvent` and `throttle_cb`: the brokers' throttle reports (KIP-219), served on the
//! thread that calls `poll()` / `flush()` (producer), `poll()` / `consume()` (consumer) or
//! `AdminClient.poll()`, as confluent-kafka serves them.

use odradek_bindings::throttle::Throttle;
use pyo3::prelude::*;

/// What `throttle_cb` receives: a broker throttled a request (confluent-kafka's
/// `ThrottleEvent`). `broker_name` is the broker's `host:port` (what librdkafka passes: the
/// bootstrap address for a bootstrap connection), `broker_id` its node id (-1 for a bootstrap
/// connection), `throttle_time` the time the broker throttled the client, in seconds (0.0: the
/// throttling ended). `str()` is confluent-kafka's `"host:port/<id> throttled for <n> ms"`.
#[pyclass(module = "odradek", name = "ThrottleEvent", subclass)]
pub struct ThrottleEvent {
    #[pyo3(get, set)]
    pub broker_name: String,
    #[pyo3(get, set)]
    pub broker_id: i32,
    #[pyo3(get, set)]
    pub throttle_time: f64,
}

#[pymethods]
impl ThrottleEvent {
    #[new]
    fn py_new(broker_name: String, broker_id: i32, throttle_time: f64) -> Self {
        ThrottleEvent {
            broker_name,
            broker_id,
            throttle_time,
        }
    }

    fn __str__(&self) -> String {
        // confluent-kafka's format.
        format!(
            "{}/{} throttled for {} ms",
            self.broker_name,
            self.broker_id,
            (self.throttle_time * 1000.0) as i64
        )
    }

    fn __repr__(&self) -> String {
        format!(
            "ThrottleEvent(broker_name={:?}, broker_id={}, throttle_time={})",
            self.broker_name, self.broker_id, self.throttle_time
        )
    }
}

impl ThrottleEvent {
    fn from_report(t: &Throttle) -> ThrottleEvent {
        ThrottleEvent {
            broker_name: t.broker_name.clone(),
            broker_id: t.broker_id,
            throttle_time: f64::from(t.throttle_time_ms) / 1000.0,
        }
    }
}

/// Calls `cb(ThrottleEvent)` for each report, in order. When a call raises, the reports after
/// it are handed to `requeue` (served by the next `poll`) and the exception is returned.
/// Returns how many callbacks ran.
pub fn serve(
    py: Python<'_>,
    cb: Option<&Py<PyAny>>,
    reports: Vec<Throttle>,
    requeue: impl FnOnce(Vec<Throttle>),
) -> PyResult<usize> {
    let Some(cb) = cb else {
        return Ok(0);
    };
    let mut n = 0;
    let mut rest = reports.into_iter();
    while let Some(t) = rest.next() {
        let result = Py::new(py, ThrottleEvent::from_report(&t)).and_then(|e| cb.call1(py, (e,)));
        n += 1;
        if let Err(e) = result {
            requeue(rest.collect());
            return Err(e);
        }
    }
    Ok(n)
}
