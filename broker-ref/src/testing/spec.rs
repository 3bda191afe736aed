//! Rules and request-log entries in plain values, for the Python, Node and C testing APIs
//! (which take API keys and error codes by name or number and times as milliseconds).

use std::time::Duration;

use super::names;
use crate::server::{Action, LoggedRequest, Rule};
use crate::{Error, Result};

/// A rule described by plain values; [`RuleSpec::to_rule`] checks and builds it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleSpec {
    /// API key, by name (`Produce`) or number.
    pub api: String,
    /// `error`, `delay`, `drop` or `close`.
    pub action: String,
    /// The error for `error` (name or number).
    pub error: Option<String>,
    /// For `delay`: how long the response is held back; for the others: extra time before
    /// the answer (or the closing) goes out.
    pub delay_ms: u64,
    /// How many matching requests (`None`: every one until removed).
    pub times: Option<u64>,
    /// Only this broker.
    pub broker: Option<i32>,
    /// Only this topic.
    pub topic: Option<String>,
    /// Only this partition (needs `topic`).
    pub partition: Option<i32>,
    /// Only this client id.
    pub client_id: Option<String>,
}

impl RuleSpec {
    /// The rule.
    pub fn to_rule(&self) -> Result<Rule> {
        let api = names::api_key(&self.api)?;
        let delay = Duration::from_millis(self.delay_ms);
        let action = match self.action.to_ascii_lowercase().as_str() {
            "error" => {
                let code = self
                    .error
                    .as_deref()
                    .ok_or_else(|| Error::Testing("an error rule needs an error code".into()))?;
                Action::Error(names::error_code(code)?)
            }
            "delay" => Action::Delay(delay),
            "drop" => Action::Drop,
            "close" => Action::Close,
            other => {
                return Err(Error::Testing(format!(
                    "unknown action `{other}` (error, delay, drop, close)"
                )))
            }
        };
        let mut rule = Rule::new(api, action);
        if !matches!(action, Action::Delay(_)) && !delay.is_zero() {
            rule = rule.delayed(delay);
        }
        rule = match self.times {
            Some(n) => rule.times(n),
            None => rule.always(),
        };
        if let Some(b) = self.broker {
            rule = rule.broker(b);
        }
        match (&self.topic, self.partition) {
            (Some(t), Some(p)) => rule = rule.partition(t.clone(), p),
            (Some(t), None) => rule = rule.topic(t.clone()),
            (None, Some(_)) => {
                return Err(Error::Testing("a partition filter needs a topic".into()))
            }
            (None, None) => {}
        }
        if let Some(c) = &self.client_id {
            rule = rule.client_id(c.clone());
        }
        Ok(rule)
    }
}

/// A logged request in plain values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    /// API key number.
    pub api_key: i16,
    /// API name (`Produce`).
    pub api_name: &'static str,
    /// Request version.
    pub api_version: i16,
    /// Header client id.
    pub client_id: Option<String>,
    /// Header correlation id.
    pub correlation_id: i32,
    /// The client's `host:port`.
    pub peer: String,
    /// The broker that received it.
    pub broker: i32,
    /// Topic-partitions named (partition -1 for topic-level items).
    pub partitions: Vec<(String, i32)>,
    /// What was done to the whole request: `error`, `delay`, `drop`, `close`, or `None`.
    pub action: Option<&'static str>,
    /// The injected error's name for `error`.
    pub error: Option<&'static str>,
    /// Errors injected into single partitions: (topic, partition, error name).
    pub item_errors: Vec<(String, i32, &'static str)>,
}

impl From<&LoggedRequest> for RequestRecord {
    fn from(r: &LoggedRequest) -> Self {
        let (action, error) = match r.action {
            None => (None, None),
            Some(Action::Error(code)) => (Some("error"), Some(code.name())),
            Some(Action::Delay(_)) => (Some("delay"), None),
            Some(Action::Drop) => (Some("drop"), None),
            Some(Action::Close) => (Some("close"), None),
        };
        RequestRecord {
            api_key: r.api_key as i16,
            api_name: names::api_name(r.api_key),
            api_version: r.api_version,
            client_id: r.client_id.clone(),
            correlation_id: r.correlation_id,
            peer: r.peer.to_string(),
            broker: r.broker,
            partitions: r.partitions.clone(),
            action,
            error,
            item_errors: r
                .item_errors
                .iter()
                .map(|(t, p, c)| (t.clone(), *p, c.name()))
                .collect(),
        }
    }
}

/// Parses a coordinator kind: `group` or `transaction` (also `txn`, `0`, `1`).
pub fn coordinator_kind(kind: &str) -> Result<super::CoordinatorKind> {
    match kind.to_ascii_lowercase().as_str() {
        "group" | "0" => Ok(super::CoordinatorKind::Group),
        "transaction" | "txn" | "1" => Ok(super::CoordinatorKind::Transaction),
        other => Err(Error::Testing(format!(
            "unknown coordinator kind `{other}` (group, transaction)"
        ))),
    }
}

/// Parses a storage: `memory`, `tempdir`, or a directory path.
pub fn storage(storage: &str) -> super::Storage {
    match storage {
        "" | "memory" => super::Storage::Memory,
        "tempdir" | "temp" => super::Storage::TempDir,
        path => super::Storage::Dir(path.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_become_rules() {
        let spec = RuleSpec {
            api: "Produce".into(),
            action: "error".into(),
            error: Some("NOT_LEADER_OR_FOLLOWER".into()),
            delay_ms: 5,
            times: Some(2),
            topic: Some("t".into()),
            partition: Some(1),
            ..RuleSpec::default()
        };
        let rule = spec.to_rule().unwrap();
        assert_eq!(
            rule,
            Rule::new(
                kafka_protocol::messages::ApiKey::Produce,
                Action::Error(odradek::ErrorCode::NotLeaderOrFollower)
            )
            .delayed(Duration::from_millis(5))
            .times(2)
            .partition("t", 1)
        );
        let bad = RuleSpec {
            api: "Produce".into(),
            action: "error".into(),
            ..RuleSpec::default()
        };
        assert!(bad.to_rule().is_err());
        let bad = RuleSpec {
            api: "Produce".into(),
            action: "explode".into(),
            ..RuleSpec::default()
        };
        assert!(bad.to_rule().is_err());
        assert!(coordinator_kind("txn").is_ok());
        assert_eq!(storage("memory"), super::super::Storage::Memory);
    }
}
