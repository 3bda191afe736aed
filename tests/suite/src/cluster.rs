//! The fault harness from Rust: an N-node cluster started by `tests/cluster/kafka-cluster.sh`
//! (Apache Kafka, KRaft), or by any command with the same interface named in
//! `ODRADEK_CLUSTER_CMD`, whose nodes the tests kill, pause, restart and cut off.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A running multi-node cluster; stopped (and its files removed) on drop.
#[derive(Debug)]
pub struct FaultCluster {
    /// The bootstrap list (every node's client address, comma-separated).
    pub bootstrap: String,
    command: PathBuf,
    dir: PathBuf,
    nodes: Vec<i32>,
}

fn default_command() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../cluster/kafka-cluster.sh")
}

fn run(command: &Path, args: &[&str]) -> String {
    let out = Command::new(command)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", command.display()));
    assert!(
        out.status.success(),
        "{} {} failed ({})",
        command.display(),
        args.join(" "),
        out.status
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl FaultCluster {
    /// Starts `nodes` nodes (ids 1..=nodes) in a fresh temporary directory.
    pub fn start(nodes: usize) -> FaultCluster {
        crate::client_log_from_env();
        let command = std::env::var_os("ODRADEK_CLUSTER_CMD")
            .map(PathBuf::from)
            .unwrap_or_else(default_command);
        let dir = std::env::temp_dir().join(crate::unique("odradek-fault-cluster"));
        std::fs::create_dir_all(&dir).expect("cluster dir");
        let n = nodes.to_string();
        let bootstrap = run(&command, &["start", path_arg(&dir), &n]);
        assert!(
            !bootstrap.is_empty(),
            "the cluster printed no bootstrap list"
        );
        FaultCluster {
            bootstrap,
            command,
            dir,
            nodes: (1..=nodes as i32).collect(),
        }
    }

    /// The node ids.
    pub fn nodes(&self) -> &[i32] {
        &self.nodes
    }

    fn node_command(&self, verb: &str, node: i32) -> String {
        run(
            &self.command,
            &[verb, path_arg(&self.dir), &node.to_string()],
        )
    }

    /// SIGKILLs a node (its data stays for [`FaultCluster::restart`]).
    pub fn kill(&self, node: i32) {
        self.node_command("kill", node);
    }

    /// Freezes a node (SIGSTOP): it stops answering and heartbeating.
    pub fn pause(&self, node: i32) {
        self.node_command("pause", node);
    }

    /// Thaws a paused node.
    pub fn resume(&self, node: i32) {
        self.node_command("resume", node);
    }

    /// Starts a killed node again and waits until it is back in the cluster.
    pub fn restart(&self, node: i32) {
        self.node_command("restart", node);
    }

    /// Black-holes every client connection to a node (the cluster still reaches it).
    pub fn cut(&self, node: i32) {
        self.node_command("cut", node);
    }

    /// Ends a cut.
    pub fn heal(&self, node: i32) {
        self.node_command("heal", node);
    }

    /// The active controller's node id.
    pub fn controller(&self) -> i32 {
        let out = run(&self.command, &["controller", path_arg(&self.dir)]);
        out.parse()
            .unwrap_or_else(|_| panic!("controller id expected, got {out:?}"))
    }

    /// Elects a leader for `topic`-`partition` among its live replicas even if none is in
    /// sync (an unclean election: records only the old leader had are lost).
    pub fn elect_unclean(&self, topic: &str, partition: i32) {
        run(
            &self.command,
            &[
                "elect-unclean",
                path_arg(&self.dir),
                topic,
                &partition.to_string(),
            ],
        );
    }

    /// A node's client address.
    pub fn addr(&self, node: i32) -> String {
        self.node_command("addr", node)
    }
}

fn path_arg(p: &Path) -> &str {
    p.to_str().expect("temporary directory path is UTF-8")
}

impl Drop for FaultCluster {
    fn drop(&mut self) {
        let _ = Command::new(&self.command)
            .args(["stop", path_arg(&self.dir)])
            .stdin(Stdio::null())
            .status();
        if std::env::var_os("ODRADEK_KEEP_CLUSTER").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
