//! A controller quorum of real `odradek-broker` processes (`process.roles=controller`,
//! `controller.quorum.voters`): they elect one leader, agree on it, replicate the metadata log
//! (the leader's DescribeQuorum shows every voter caught up), elect another when the leader is
//! killed, take the killed node back on its own data, refuse a node of another cluster, and a
//! controller missing from the voters fails at startup naming the key.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{free_ports, temp_dir, BrokerProcess, Client};
use kafka_protocol::messages::{describe_quorum_request, DescribeQuorumRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

/// What one controller says about the quorum.
#[derive(Debug, Clone)]
struct Seen {
    error: i16,
    leader: i32,
    epoch: i32,
    high_watermark: i64,
    /// (voter, log end offset) as the leader reports them.
    voters: Vec<(i32, i64)>,
}

fn voters(ports: &[u16]) -> String {
    ports
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{}@127.0.0.1:{p}", i + 1))
        .collect::<Vec<_>>()
        .join(",")
}

fn start(id: usize, ports: &[u16], dir: &Path, cluster: &str) -> BrokerProcess {
    let listeners = format!("CONTROLLER://127.0.0.1:{}", ports[id - 1]);
    let node = id.to_string();
    let voters = voters(ports);
    BrokerProcess::start(
        dir,
        &[
            ("listeners", &listeners),
            ("process.roles", "controller"),
            ("node.id", &node),
            ("controller.quorum.voters", &voters),
            ("controller.listener.names", "CONTROLLER"),
            ("listener.security.protocol.map", "CONTROLLER:PLAINTEXT"),
            ("cluster.id", cluster),
            ("controller.quorum.election.timeout.ms", "300"),
            ("controller.quorum.fetch.timeout.ms", "600"),
            ("controller.quorum.election.backoff.max.ms", "300"),
        ],
    )
}

fn describe(addr: &str) -> Option<Seen> {
    let stream = std::net::TcpStream::connect(addr).ok()?;
    drop(stream);
    let mut client = Client::connect(addr);
    let request = DescribeQuorumRequest::default().with_topics(vec![
        describe_quorum_request::TopicData::default()
            .with_topic_name(TopicName(StrBytes::from_static_str("__cluster_metadata")))
            .with_partitions(vec![
                describe_quorum_request::PartitionData::default().with_partition_index(0)
            ]),
    ]);
    let r = client.call(&request, 1);
    let p = r.topics.first()?.partitions.first()?.clone();
    Some(Seen {
        error: p.error_code,
        leader: p.leader_id.0,
        epoch: p.leader_epoch,
        high_watermark: p.high_watermark,
        voters: p
            .current_voters
            .iter()
            .map(|v| (v.replica_id.0, v.log_end_offset))
            .collect(),
    })
}

/// Waits until the live nodes agree on one leader among them whose DescribeQuorum shows
/// every one of `caught_up` at its log end; returns the leader's view.
fn settled(nodes: &[(usize, String)], caught_up: &[i32], within: Duration) -> Seen {
    let deadline = Instant::now() + within;
    let mut last = Vec::new();
    while Instant::now() < deadline {
        let seen: Vec<(usize, Option<Seen>)> =
            nodes.iter().map(|(id, a)| (*id, describe(a))).collect();
        let leaders: Vec<i32> = seen
            .iter()
            .filter_map(|(_, s)| s.as_ref().map(|s| s.leader))
            .collect();
        if let Some(first) = leaders.first().copied() {
            let agreed =
                first > 0 && leaders.len() == nodes.len() && leaders.iter().all(|l| *l == first);
            let leader_view = seen
                .iter()
                .find(|(id, _)| *id as i32 == first)
                .and_then(|(_, s)| s.clone());
            if let (true, Some(view)) = (agreed, leader_view) {
                let end = view.voters.iter().map(|(_, e)| *e).max().unwrap_or(-1);
                let all = caught_up
                    .iter()
                    .all(|id| view.voters.iter().any(|(v, e)| v == id && *e == end));
                if view.error == 0 && all && view.high_watermark == end {
                    return view;
                }
            }
        }
        last = seen;
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the quorum did not settle: {last:?}");
}

#[test]
fn three_controllers_elect_fail_over_and_take_a_node_back() {
    let ports = free_ports(3);
    let dirs: Vec<_> = (1..=3).map(|i| temp_dir(&format!("quorum-{i}"))).collect();
    let mut nodes: Vec<Option<BrokerProcess>> = (1..=3)
        .map(|id| Some(start(id, &ports, &dirs[id - 1], "quorum-test")))
        .collect();
    let addrs: Vec<(usize, String)> = (1..=3)
        .map(|id| (id, format!("127.0.0.1:{}", ports[id - 1])))
        .collect();
    let first = settled(&addrs, &[1, 2, 3], Duration::from_secs(20));
    assert!(first.epoch >= 1, "{first:?}");
    assert!(
        first.high_watermark >= 1,
        "the leader's epoch record committed: {first:?}"
    );
    // Non-leaders answer NOT_LEADER_OR_FOLLOWER naming the leader.
    for (id, addr) in &addrs {
        let s = describe(addr).unwrap();
        if *id as i32 != first.leader {
            assert_eq!(s.error, 6, "{s:?}");
            assert_eq!(s.leader, first.leader);
        }
    }

    // SIGKILL the leader: the other two elect a new one in a later epoch.
    let killed = first.leader as usize;
    nodes[killed - 1].take().unwrap().kill9();
    let rest: Vec<(usize, String)> = addrs
        .iter()
        .filter(|(id, _)| *id != killed)
        .cloned()
        .collect();
    let ids: Vec<i32> = rest.iter().map(|(id, _)| *id as i32).collect();
    let second = settled(&rest, &ids, Duration::from_secs(20));
    assert_ne!(second.leader, first.leader);
    assert!(second.epoch > first.epoch, "{first:?} then {second:?}");
    assert!(second.high_watermark > first.high_watermark, "{second:?}");

    // The killed node comes back on its data (its metadata log and vote are kept: a voter
    // that forgot them could vote twice) and catches up as a follower.
    let log = dirs[killed - 1].join("__cluster_metadata-0").join("log");
    let kept = std::fs::metadata(&log).unwrap().len();
    assert!(kept > 0, "the killed node had written its log");
    nodes[killed - 1] = Some(start(killed, &ports, &dirs[killed - 1], "quorum-test"));
    assert!(
        std::fs::metadata(&log).map_or(0, |m| m.len()) >= kept,
        "the metadata log survived the restart"
    );
    let third = settled(&addrs, &[1, 2, 3], Duration::from_secs(20));
    assert!(third.epoch >= second.epoch);
    assert!(third.high_watermark >= second.high_watermark);
    for n in nodes.into_iter().flatten() {
        n.stop();
    }
}

#[test]
fn a_node_of_another_cluster_is_refused() {
    let ports = free_ports(3);
    let dirs: Vec<_> = (1..=3)
        .map(|i| temp_dir(&format!("quorum-alien-{i}")))
        .collect();
    let _a = start(1, &ports, &dirs[0], "ours");
    let _b = start(2, &ports, &dirs[1], "ours");
    let _c = start(3, &ports, &dirs[2], "theirs");
    let ours: Vec<(usize, String)> = (1..=2)
        .map(|id| (id, format!("127.0.0.1:{}", ports[id - 1])))
        .collect();
    let view = settled(&ours, &[1, 2], Duration::from_secs(20));
    assert!(view.leader == 1 || view.leader == 2, "{view:?}");
    // Node 3 never replicates: the leader has no fetch from it.
    std::thread::sleep(Duration::from_millis(500));
    let leader_addr = &ours[(view.leader - 1) as usize].1;
    let again = describe(leader_addr).unwrap();
    let alien = again.voters.iter().find(|(v, _)| *v == 3).unwrap();
    assert_eq!(alien.1, -1, "{again:?}");
    let theirs = describe(&format!("127.0.0.1:{}", ports[2])).unwrap();
    assert!(
        theirs.leader != view.leader || theirs.epoch != view.epoch,
        "{theirs:?}"
    );
}

#[test]
fn a_controller_that_is_not_a_voter_is_refused_naming_the_key() {
    let ports = free_ports(2);
    let dir = temp_dir("quorum-roles");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_odradek-broker"))
        .args([
            "--override",
            &format!("listeners=CONTROLLER://127.0.0.1:{}", ports[0]),
            "--override",
            &format!("log.dirs={}", dir.display()),
            "--override",
            "process.roles=controller",
            "--override",
            "node.id=1",
            "--override",
            &format!("controller.quorum.voters=2@127.0.0.1:{}", ports[1]),
            "--override",
            "controller.listener.names=CONTROLLER",
            "--override",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT",
            "--override",
            "cluster.id=x",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("controller.quorum.voters"), "{err}");
}
