//! Broker state changes reach the cluster's error listener (what the bindings' error
//! callbacks receive, librdkafka's `error_cb` events): a broker that cannot be reached any more
//! once, and every known broker down at once (`AllBrokersDown`) once per episode; bootstrap
//! servers that cannot be reached before any metadata count as all brokers down.

#![allow(clippy::unwrap_used)]

use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use odradek::cluster::Cluster;
use odradek::{ClientConfig, Error};
use odradek_suite::broker_proxy::BrokerProxy;
use odradek_suite::Target;

/// A cluster handle whose listener's errors land in the returned list, as their Display text.
fn listened(bootstrap: &str) -> (Arc<Cluster>, Arc<Mutex<Vec<String>>>) {
    let cluster = Cluster::new(
        ClientConfig::from_map([
            ("bootstrap.servers", bootstrap),
            ("reconnect.backoff.ms", "10"),
            ("reconnect.backoff.max.ms", "20"),
            ("retry.backoff.ms", "10"),
        ])
        .unwrap(),
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    cluster.set_error_listener(Arc::new(move |e: &Error| {
        let kind = match e {
            Error::AllBrokersDown { .. } => "all-down",
            Error::Connection { .. } => "down",
            _ => "other",
        };
        sink.lock().unwrap().push(format!("{kind}: {e}"));
    }));
    (cluster, seen)
}

#[tokio::test]
async fn unreachable_bootstrap_servers_are_all_brokers_down_once() {
    let dead = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let (cluster, seen) = listened(&dead);
    assert!(cluster.refresh().await.is_err());
    assert!(cluster.refresh().await.is_err());
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, vec!["all-down: 1/1 brokers are down".to_string()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_lost_after_metadata_is_told_as_down_then_all_down() {
    let target = Target::start(&[]);
    let proxy = BrokerProxy::start(&target.bootstrap);
    let (cluster, seen) = listened(&proxy.bootstrap);
    let meta = cluster.refresh().await.unwrap();
    let node = *meta.brokers.keys().next().unwrap();
    cluster.connection(node).await.unwrap();
    assert!(seen.lock().unwrap().is_empty(), "nothing to tell while up");
    // The broker goes away: open connections are cut, new ones refused.
    proxy.stop();
    // Reconnects (the cut reaches the client's reader a moment later) fail from now on.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < deadline
        && !seen
            .lock()
            .unwrap()
            .iter()
            .any(|s| s.starts_with("all-down"))
    {
        let _ = cluster.connection(node).await;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // More failed attempts in the same episode tell nothing new.
    for _ in 0..5 {
        let _ = cluster.connection(node).await;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.first().is_some_and(|s| s.starts_with("down: ")),
        "the broker going down comes first: {seen:?}"
    );
    assert_eq!(
        seen.iter().filter(|s| s.starts_with("all-down")).count(),
        1,
        "every known broker down, once: {seen:?}"
    );
    // Each broker is told down once (one on a single broker; every broker of a cluster, all
    // behind the stopped proxy, once the client tried them all).
    let downs: Vec<&String> = seen.iter().filter(|s| s.starts_with("down")).collect();
    let distinct: std::collections::BTreeSet<&&String> = downs.iter().collect();
    assert_eq!(
        distinct.len(),
        downs.len(),
        "the same broker down again is not told again: {seen:?}"
    );
    assert!(
        (1..=meta.brokers.len()).contains(&downs.len()),
        "one line per broker at most: {seen:?}"
    );
}
