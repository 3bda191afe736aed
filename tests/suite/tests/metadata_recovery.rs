//! `metadata.recovery.strategy` (KIP-899): once no broker the client knows from metadata can be
//! reached, `rebootstrap` (the default) goes back to `bootstrap.servers`; `none` keeps to the
//! known brokers. The broker advertises an address nobody listens on, so after the first
//! metadata only the bootstrap address still answers.

#![allow(clippy::unwrap_used)]

use std::net::TcpListener;

use odradek::cluster::Cluster;
use odradek::Error;
use odradek_suite::Target;

fn dead_address() -> String {
    // Bound and released: nothing listens there afterwards.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// First metadata through the bootstrap server, then a second refresh once the known broker
/// (the dead advertised address) has been tried.
async fn second_refresh(strategy: &str) -> Option<Result<(), Error>> {
    let advertised = format!("PLAINTEXT://{}", dead_address());
    let target = Target::start(&[("advertised.listeners", advertised.as_str())]);
    if !target.is_own_broker() {
        return None; // Needs our broker to advertise an address of the test's choosing.
    }
    let cluster = Cluster::new(target.config(&[
        ("metadata.recovery.strategy", strategy),
        ("reconnect.backoff.ms", "10"),
        ("reconnect.backoff.max.ms", "20"),
    ]));
    let first = cluster.refresh().await.unwrap();
    assert_eq!(
        first.brokers.len(),
        1,
        "the broker is known from the first metadata"
    );
    cluster.invalidate();
    Some(cluster.refresh().await.map(|_| ()))
}

#[tokio::test]
async fn rebootstrap_reaches_the_bootstrap_servers_when_no_known_broker_answers() {
    if let Some(result) = second_refresh("rebootstrap").await {
        result.expect("metadata through the bootstrap server again");
    }
}

#[tokio::test]
async fn strategy_none_keeps_to_the_known_brokers() {
    if let Some(result) = second_refresh("none").await {
        let e = result.expect_err("only the dead advertised address may be tried");
        assert!(matches!(e, Error::Connection { .. }), "{e:?}");
    }
}

#[test]
fn an_unknown_strategy_is_refused_by_name() {
    let e = odradek::ClientConfig::from_map([
        ("bootstrap.servers", "127.0.0.1:9092"),
        ("metadata.recovery.strategy", "sometimes"),
    ])
    .unwrap_err();
    assert!(e.to_string().contains("metadata.recovery.strategy"), "{e}");
}
