//! Cluster mode's settings, read from Kafka's property names: `node.id`, `process.roles`,
//! `controller.quorum.voters`, `controller.listener.names` and the `controller.quorum.*`
//! timings. Without `controller.quorum.voters` the broker runs in single-node mode, its own
//! controller, as it always did.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::config::BrokerConfig;
use crate::{Error, Result};

/// What one node of a cluster does and whom it talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSettings {
    /// `node.id`.
    pub node_id: i32,
    /// `process.roles` holds `broker`.
    pub broker: bool,
    /// `process.roles` holds `controller`: the node is a voter of the metadata quorum.
    pub controller: bool,
    /// `controller.quorum.voters`: every voter's id and controller address.
    pub voters: BTreeMap<i32, (String, u16)>,
    /// `controller.listener.names`: the listeners only controller requests are served on; the
    /// first is the one this node's controller is reached through.
    pub controller_listeners: Vec<String>,
    /// The quorum's timings and sizes.
    pub quorum: odradek_quorum::Config,
    /// `broker.heartbeat.interval.ms`.
    pub heartbeat_interval_ms: u64,
    /// `broker.session.timeout.ms`.
    pub session_timeout_ms: u64,
    /// `cluster.id`: every node of one cluster must be given the same.
    pub cluster_id: String,
}

/// Settings of the replication data plane (Kafka's names).
#[derive(Debug, Clone)]
pub struct ReplicaSettings {
    /// This broker.
    pub node_id: i32,
    /// `replica.lag.time.max.ms`.
    pub lag_max_ms: i64,
    /// `replica.fetch.wait.max.ms`.
    pub fetch_wait_max_ms: i32,
    /// `replica.fetch.max.bytes` (per partition).
    pub fetch_max_bytes: i32,
    /// `replica.fetch.response.max.bytes`.
    pub fetch_response_max_bytes: i32,
    /// `replica.fetch.min.bytes`.
    pub fetch_min_bytes: i32,
    /// `replica.fetch.backoff.ms`.
    pub fetch_backoff: Duration,
    /// `inter.broker.listener.name`: the listener followers fetch from.
    pub inter_broker_listener: String,
    /// How this broker connects to that listener of the others (`security::inter_node`).
    pub inter_broker_security: odradek::security::SecurityConfig,
    /// The broker's replication throttles (`follower.replication.throttled.rate`).
    pub quotas: std::sync::Arc<crate::quota::replication::ReplicationQuotas>,
}

impl ClusterSettings {
    /// The cluster settings of `config`, or `None` in single-node mode (no
    /// `controller.quorum.voters`). Inconsistent settings are errors naming the key.
    pub fn from_config(config: &BrokerConfig) -> Result<Option<ClusterSettings>> {
        let roles = parse_roles(config.get("process.roles"))?;
        if !config
            .get("controller.quorum.bootstrap.servers")
            .trim()
            .is_empty()
        {
            return Err(Error::config(
                "controller.quorum.bootstrap.servers",
                "dynamic quorums (KIP-853) are not supported: list the voters in controller.quorum.voters",
            ));
        }
        let voters_text = config.get("controller.quorum.voters").trim();
        if voters_text.is_empty() {
            if !(roles.0 && roles.1) {
                return Err(Error::config(
                    "process.roles",
                    "a node that is not both broker and controller needs controller.quorum.voters",
                ));
            }
            return Ok(None);
        }
        let voters = parse_voters(voters_text)?;
        let node_id = config.node_id();
        let (broker, controller) = roles;
        if controller != voters.contains_key(&node_id) {
            return Err(Error::config(
                "controller.quorum.voters",
                match controller {
                    true => format!("node {node_id} has the controller role but is not a voter"),
                    false => format!(
                        "node {node_id} is a voter but process.roles does not include controller"
                    ),
                },
            ));
        }
        let controller_listeners: Vec<String> = config
            .get("controller.listener.names")
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if controller_listeners.is_empty() {
            return Err(Error::config(
                "controller.listener.names",
                "cluster mode needs the name of the listener controllers are reached on",
            ));
        }
        let listeners = config.listeners()?;
        let has = |name: &str| listeners.iter().any(|l| l.name.eq_ignore_ascii_case(name));
        if controller && !has(&controller_listeners[0]) {
            return Err(Error::config(
                "listeners",
                format!(
                    "a controller must listen on its controller listener {}",
                    controller_listeners[0]
                ),
            ));
        }
        if broker
            && !listeners.iter().any(|l| {
                !controller_listeners
                    .iter()
                    .any(|c| c.eq_ignore_ascii_case(&l.name))
            })
        {
            return Err(Error::config(
                "listeners",
                "a broker needs a listener for clients besides the controller listeners",
            ));
        }
        if !controller
            && listeners.iter().any(|l| {
                controller_listeners
                    .iter()
                    .any(|c| c.eq_ignore_ascii_case(&l.name))
            })
        {
            return Err(Error::config(
                "listeners",
                "only a controller listens on a controller listener",
            ));
        }
        let cluster_id = config.get("cluster.id").trim().to_string();
        if cluster_id.is_empty() {
            return Err(Error::config(
                "cluster.id",
                "every node of a cluster must be given the same cluster id",
            ));
        }
        let ms = |key: &str| u64::try_from(config.long(key)).unwrap_or(0);
        let mut quorum = odradek_quorum::Config::new(node_id, voters.keys().copied());
        quorum.election_timeout_ms = ms("controller.quorum.election.timeout.ms").max(1);
        quorum.election_backoff_max_ms = ms("controller.quorum.election.backoff.max.ms");
        quorum.fetch_timeout_ms = ms("controller.quorum.fetch.timeout.ms").max(1);
        quorum.request_timeout_ms = ms("controller.quorum.request.timeout.ms").max(1);
        quorum.retry_backoff_ms = ms("controller.quorum.retry.backoff.ms");
        quorum.fetch_max_wait_ms = (quorum.fetch_timeout_ms / 4).clamp(1, 500);
        quorum.seed = u64::from(node_id.unsigned_abs()) ^ u64::from(std::process::id());
        Ok(Some(ClusterSettings {
            node_id,
            broker,
            controller,
            voters,
            controller_listeners,
            quorum,
            heartbeat_interval_ms: ms("broker.heartbeat.interval.ms").max(1),
            session_timeout_ms: ms("broker.session.timeout.ms").max(1),
            cluster_id,
        }))
    }

    /// Whether `listener` is one of the controller listeners.
    pub fn is_controller_listener(&self, listener: &str) -> bool {
        self.controller_listeners
            .iter()
            .any(|c| c.eq_ignore_ascii_case(listener))
    }
}

/// `process.roles`: (broker, controller).
fn parse_roles(value: &str) -> Result<(bool, bool)> {
    let mut roles = (false, false);
    for role in value.split(',').map(str::trim).filter(|r| !r.is_empty()) {
        match role {
            "broker" => roles.0 = true,
            "controller" => roles.1 = true,
            other => {
                return Err(Error::config(
                    "process.roles",
                    format!("unknown role `{other}` (broker, controller)"),
                ))
            }
        }
    }
    if !roles.0 && !roles.1 {
        return Err(Error::config(
            "process.roles",
            "needs broker, controller or both",
        ));
    }
    Ok(roles)
}

/// `controller.quorum.voters`: `id@host:port` entries separated by commas.
fn parse_voters(value: &str) -> Result<BTreeMap<i32, (String, u16)>> {
    const KEY: &str = "controller.quorum.voters";
    let mut voters = BTreeMap::new();
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = || Error::config(KEY, format!("`{item}` is not id@host:port"));
        let (id, addr) = item.split_once('@').ok_or_else(bad)?;
        let id: i32 = id.trim().parse().map_err(|_| bad())?;
        let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
        let port: u16 = port.parse().map_err(|_| bad())?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if id < 0 || host.is_empty() || port == 0 {
            return Err(bad());
        }
        if voters.insert(id, (host.to_string(), port)).is_some() {
            return Err(Error::config(KEY, format!("voter {id} is listed twice")));
        }
    }
    Ok(voters)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &[(&str, &str)]) -> Result<BrokerConfig> {
        let mut entries = vec![
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:9093",
            ),
            ("controller.listener.names", "CONTROLLER"),
            (
                "listener.security.protocol.map",
                "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            ),
            ("node.id", "1"),
            ("cluster.id", "abc"),
        ];
        entries.extend_from_slice(extra);
        BrokerConfig::from_entries(entries)
    }

    #[test]
    fn no_voters_is_single_node_mode() {
        let c = config(&[]).unwrap();
        assert_eq!(ClusterSettings::from_config(&c).unwrap(), None);
    }

    #[test]
    fn voters_and_roles_are_read_with_kafkas_names() {
        let c = config(&[(
            "controller.quorum.voters",
            "1@127.0.0.1:9093,2@127.0.0.1:9094,3@localhost:9095",
        )])
        .unwrap();
        let s = ClusterSettings::from_config(&c).unwrap().unwrap();
        assert_eq!(s.node_id, 1);
        assert!(s.broker && s.controller);
        assert_eq!(s.voters.len(), 3);
        assert_eq!(s.voters[&3], ("localhost".to_string(), 9095));
        assert!(s.is_controller_listener("controller"));
        assert_eq!(s.quorum.election_timeout_ms, 1000);
    }

    #[test]
    fn inconsistent_settings_name_their_key() {
        let err = |extra: &[(&str, &str)]| match config(extra) {
            Ok(c) => ClusterSettings::from_config(&c).unwrap_err().to_string(),
            Err(e) => e.to_string(),
        };
        assert!(err(&[("controller.quorum.voters", "2@127.0.0.1:9094")])
            .contains("controller.quorum.voters"));
        assert!(err(&[("controller.quorum.voters", "1@127.0.0.1")]).contains("id@host:port"));
        assert!(err(&[
            ("controller.quorum.voters", "1@h:1"),
            ("process.roles", "broker,dancer")
        ])
        .contains("process.roles"));
        assert!(err(&[
            ("controller.quorum.voters", "1@h:1"),
            ("controller.quorum.bootstrap.servers", "h:1")
        ])
        .contains("controller.quorum.bootstrap.servers"));
        assert!(err(&[("controller.quorum.voters", "1@h:1,1@h:2")]).contains("twice"));
    }
}
