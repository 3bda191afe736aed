//! librdkafka (confluent-kafka, from the compatibility tier's venv) as a step-by-step peer:
//! `peers/rdkafka_peer.py` runs as a child process and executes one JSON command per line.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

/// A running librdkafka peer.
#[derive(Debug)]
pub struct RdkafkaPeer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// What the peer answered.
#[derive(Debug, Clone)]
pub struct PeerReply(pub Value);

impl PeerReply {
    /// Whether the call succeeded.
    pub fn ok(&self) -> bool {
        self.0["ok"].as_bool().unwrap_or(false)
    }
    /// librdkafka's `KafkaError.fatal()`.
    pub fn fatal(&self) -> bool {
        self.0["fatal"].as_bool().unwrap_or(false)
    }
    /// librdkafka's error name (e.g. `_FENCED`, `PRODUCER_FENCED`).
    pub fn code(&self) -> String {
        self.0["code"].as_str().unwrap_or_default().to_string()
    }
    /// The values a `consume` returned.
    pub fn values(&self) -> Vec<String> {
        self.0["values"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The compatibility tier's Python with confluent-kafka (`ODRADEK_PEER_PYTHON`, else the venv
/// `tests/compat/python-peers.sh install` creates), if there is one.
pub fn peer_python() -> Option<PathBuf> {
    python()
}

fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ODRADEK_PEER_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../compat/.cache/venv/bin/python");
    venv.exists().then_some(venv)
}

impl RdkafkaPeer {
    /// Starts the peer with the compatibility tier's Python (`tests/compat/python-peers.sh
    /// install`, or `ODRADEK_PEER_PYTHON`); `None`, saying so, when there is none.
    pub fn start() -> Option<RdkafkaPeer> {
        let Some(python) = python() else {
            eprintln!(
                "skipped: no confluent-kafka venv (run tests/compat/python-peers.sh install)"
            );
            return None;
        };
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers/rdkafka_peer.py");
        let mut child = Command::new(&python)
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", python.display()));
        let stdin = child.stdin.take().expect("peer stdin");
        let stdout = BufReader::new(child.stdout.take().expect("peer stdout"));
        Some(RdkafkaPeer {
            child,
            stdin,
            stdout,
        })
    }

    /// Runs one command and returns the answer (needs a multi-threaded runtime).
    pub fn call(&mut self, command: Value) -> PeerReply {
        // The peer may take seconds: keep the runtime's other tasks (our clients) running.
        tokio::task::block_in_place(|| {
            writeln!(self.stdin, "{command}").expect("write to peer");
            self.stdin.flush().expect("flush peer stdin");
            let mut line = String::new();
            self.stdout.read_line(&mut line).expect("read from peer");
            assert!(!line.is_empty(), "peer exited on {command}");
            PeerReply(serde_json::from_str(&line).expect("peer answers JSON"))
        })
    }

    /// Runs a command that must succeed.
    pub fn must(&mut self, command: Value) -> PeerReply {
        let reply = self.call(command.clone());
        assert!(reply.ok(), "librdkafka peer: {command} -> {:?}", reply.0);
        reply
    }

    /// A transactional producer with `transactional_id`, initialised.
    pub fn transactional_producer(&mut self, bootstrap: &str, transactional_id: &str) {
        self.must(
            json!({"op": "producer", "bootstrap": bootstrap, "transactional_id": transactional_id}),
        );
        self.must(json!({"op": "init"}));
    }
}

impl Drop for RdkafkaPeer {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "{}", json!({"op": "close"}));
        let _ = self.stdin.flush();
        let _ = self.child.wait();
    }
}
