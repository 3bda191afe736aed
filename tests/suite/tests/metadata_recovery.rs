//! `metadata.recovery.strategy` (KIP-899): once no broker the client knows from metadata can be
//! reached, `rebootstrap` (the default) goes back to `bootstrap.servers`; `none` keeps to the
//! known brokers. The broker advertises an address nobody listens on, so after the first
//! metadata only the bootstrap address still answers.

#![allow(clippy::unwrap_used)]

use std::net::TcpListener;

use std::time::Duration;

use odradek::cluster::Cluster;
use odradek::{ClientConfig, Error};
use odradek_suite::broker_proxy::BrokerProxy;
use odradek_suite::{create_topic, topic_name, Target};

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

/// A topic added to the interest while a refresh that did not ask for it is in flight: the
/// next `refresh()` asks for it rather than sharing the older refresh's answer (it shared it,
/// and a caller that had just added a topic saw metadata without it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_in_flight_is_shared_only_when_it_asked_for_the_callers_topics() {
    let target = Target::start(&[]);
    let proxy = BrokerProxy::start(&target.bootstrap);
    let cluster = Cluster::new(
        ClientConfig::from_map([("bootstrap.servers", proxy.bootstrap.as_str())]).unwrap(),
    );
    let topic = topic_name("late-interest");
    create_topic(&cluster, &topic, 2).await;
    let older = topic_name("early-interest");
    create_topic(&cluster, &older, 1).await;
    cluster.add_interest(std::slice::from_ref(&older));
    proxy.delay_metadata(Duration::from_millis(600));
    let slow = {
        let cluster = cluster.clone();
        tokio::spawn(async move { cluster.refresh().await.map(|m| m.topics.len()) })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    cluster.add_interest(std::slice::from_ref(&topic));
    let meta = cluster.refresh().await.unwrap();
    let partitions = meta.topics.get(&topic).map_or(0, |t| t.partitions.len());
    assert_eq!(
        partitions, 2,
        "the refresh after add_interest answers for {topic}"
    );
    slow.await.unwrap().unwrap();
}

/// `client.dns.lookup=resolve_canonical_bootstrap_servers_only`: the bootstrap server given as
/// an address is replaced by its canonical name, and the client still reaches the broker
/// through it; a value Kafka does not have is refused by name.
#[tokio::test]
async fn canonical_bootstrap_names_still_reach_the_broker() {
    let target = Target::start(&[]);
    let port = target
        .bootstrap
        .rsplit_once(':')
        .map(|(_, p)| p.to_string());
    let Some(port) = port.filter(|_| target.bootstrap.starts_with("127.0.0.1:")) else {
        return; // Needs a loopback address to reverse-resolve.
    };
    let cluster = Cluster::new(
        ClientConfig::from_map([
            ("bootstrap.servers", format!("127.0.0.1:{port}").as_str()),
            (
                "client.dns.lookup",
                "resolve_canonical_bootstrap_servers_only",
            ),
        ])
        .unwrap(),
    );
    let meta = cluster
        .refresh()
        .await
        .expect("metadata through the canonical name");
    assert!(!meta.brokers.is_empty());
    let e = ClientConfig::from_map([
        ("bootstrap.servers", "127.0.0.1:9092"),
        ("client.dns.lookup", "default"),
    ])
    .expect_err("`default` was removed from Kafka (KIP-602)");
    assert!(e.to_string().contains("client.dns.lookup"), "{e}");
}
