//! `metadata.recovery.strategy` (KIP-899): once no broker the client knows from metadata can be
//! reached, `rebootstrap` (the default) goes back to `bootstrap.servers`; `none` keeps to the
//! known brokers. The broker advertises an address nobody listens on, so after the first
//! metadata only the bootstrap address still answers. A broker answering REBOOTSTRAP_REQUIRED,
//! and metadata failing for `metadata.recovery.rebootstrap.trigger.ms` (KIP-1102), also send
//! the client back to the bootstrap servers (a [`BrokerProxy`] whose bootstrap listener is not
//! the broker's makes the known broker's Metadata answers fail).

#![allow(clippy::unwrap_used)]

use std::net::TcpListener;

use std::time::{Duration, Instant};

use odradek::cluster::Cluster;
use odradek::{ClientConfig, Error, ErrorCode};
use odradek_suite::broker_proxy::{BrokerProxy, MetadataFault};
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

/// A client whose first metadata came through `proxy`'s bootstrap listener, so later refreshes
/// go to the broker it names (a listener of its own).
async fn client_behind(proxy: &BrokerProxy, extra: &[(&str, &str)]) -> std::sync::Arc<Cluster> {
    let mut conf = vec![("bootstrap.servers", proxy.bootstrap.as_str())];
    conf.extend_from_slice(extra);
    let cluster = Cluster::new(ClientConfig::from_map(conf).unwrap());
    cluster
        .refresh()
        .await
        .expect("first metadata through the bootstrap listener");
    assert_eq!(proxy.metadata_forwarded(), (1, 0));
    cluster
}

/// KIP-1102: a known broker answering Metadata with REBOOTSTRAP_REQUIRED sends a
/// `rebootstrap` client to the bootstrap servers for the same request; a `none` client reports
/// the error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rebootstrap_required_sends_the_client_back_to_the_bootstrap_servers() {
    let target = Target::start(&[]);
    let required = MetadataFault::Error(ErrorCode::RebootstrapRequired.code());

    let proxy = BrokerProxy::start_apart(&target.bootstrap);
    let cluster = client_behind(&proxy, &[]).await;
    proxy.broker_metadata_fault(Some(required));
    cluster
        .refresh()
        .await
        .expect("metadata from the bootstrap servers");
    assert_eq!(
        proxy.metadata_forwarded(),
        (2, 1),
        "one answer from the broker (REBOOTSTRAP_REQUIRED), then the bootstrap listener's"
    );
    proxy.stop();

    let proxy = BrokerProxy::start_apart(&target.bootstrap);
    let cluster = client_behind(&proxy, &[("metadata.recovery.strategy", "none")]).await;
    proxy.broker_metadata_fault(Some(required));
    let e = cluster
        .refresh()
        .await
        .expect_err("none keeps to the known broker");
    assert!(
        matches!(e, Error::Kafka(ErrorCode::RebootstrapRequired)),
        "{e:?}"
    );
    assert_eq!(proxy.metadata_forwarded(), (1, 1), "no rebootstrap");
    proxy.stop();
}

/// KIP-1102: a known broker that accepts connections and never answers Metadata keeps the
/// client without metadata; once every metadata request has failed for
/// `metadata.recovery.rebootstrap.trigger.ms`, the client asks the bootstrap servers. With the
/// default trigger (5 minutes) it is still asking the broker 3 s later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_failing_for_the_rebootstrap_trigger_goes_back_to_the_bootstrap_servers() {
    let target = Target::start(&[]);
    let timeouts = [("request.timeout.ms", "200"), ("retry.backoff.ms", "20")];
    // Refreshes until one succeeds or `within` passes; when, since the first failure.
    async fn refresh_until_ok(cluster: &Cluster, within: Duration) -> Option<Duration> {
        let started = Instant::now();
        while started.elapsed() < within {
            if cluster.refresh().await.is_ok() {
                return Some(started.elapsed());
            }
        }
        None
    }

    let proxy = BrokerProxy::start_apart(&target.bootstrap);
    let cluster = client_behind(
        &proxy,
        &[
            timeouts[0],
            timeouts[1],
            ("metadata.recovery.rebootstrap.trigger.ms", "1000"),
        ],
    )
    .await;
    proxy.broker_metadata_fault(Some(MetadataFault::Stall));
    let recovered = refresh_until_ok(&cluster, Duration::from_secs(20)).await;
    let after = recovered.expect("metadata from the bootstrap servers after the trigger");
    assert!(
        after >= Duration::from_millis(1000),
        "not before the trigger: {after:?}"
    );
    assert_eq!(proxy.metadata_forwarded(), (2, 0));
    proxy.stop();

    let proxy = BrokerProxy::start_apart(&target.bootstrap);
    let cluster = client_behind(&proxy, &timeouts).await;
    proxy.broker_metadata_fault(Some(MetadataFault::Stall));
    assert_eq!(
        refresh_until_ok(&cluster, Duration::from_secs(3)).await,
        None,
        "the default trigger is 5 minutes"
    );
    assert_eq!(proxy.metadata_forwarded(), (1, 0));
    proxy.stop();
}
