//! Dynamic broker and group configs in the metadata log of a 3-node local cluster: a cluster-wide
//! default set through one broker is in effect on every broker, a per-broker value only on its
//! broker, a group's config set through one broker is the one every broker (so whichever
//! coordinates the group) describes; all survive a node's restart, and a value the forwarding
//! broker refuses never reaches the cluster.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::cluster::LocalCluster;
use common::{eventually, sb};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::*;
use odradek::ErrorCode;

const BROKER: i8 = 4;
const GROUP: i8 = 32;
/// Kafka's ConfigSource codes.
const DYNAMIC_BROKER: i8 = 2;
const DYNAMIC_DEFAULT_BROKER: i8 = 3;

/// Sets (`Some`) or deletes (`None`) one key of one resource through `node`; the error code.
fn alter(
    cluster: &LocalCluster,
    node: usize,
    (kind, name): (i8, &str),
    key: &str,
    value: Option<&str>,
    validate_only: bool,
) -> ErrorCode {
    let request = IncrementalAlterConfigsRequest::default()
        .with_validate_only(validate_only)
        .with_resources(vec![AlterConfigsResource::default()
            .with_resource_type(kind)
            .with_resource_name(sb(name))
            .with_configs(vec![AlterableConfig::default()
                .with_name(sb(key))
                .with_config_operation(if value.is_some() { 0 } else { 1 })
                .with_value(value.map(sb))])]);
    let r = cluster.client(node).call(&request, 1);
    ErrorCode::from_code(r.responses[0].error_code)
}

/// A key's value and source as `node` describes it.
fn describe(
    cluster: &LocalCluster,
    node: usize,
    (kind, name): (i8, &str),
    key: &str,
) -> (Option<String>, i8) {
    let request =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(kind)
            .with_resource_name(sb(name))
            .with_configuration_keys(Some(vec![sb(key)]))]);
    let r = cluster.client(node).call(&request, 4);
    assert_eq!(r.results[0].error_code, 0, "{r:?}");
    let c = &r.results[0].configs[0];
    (c.value.as_ref().map(|v| v.to_string()), c.config_source)
}

fn value_on(
    cluster: &LocalCluster,
    node: usize,
    resource: (i8, &str),
    key: &str,
) -> Option<String> {
    describe(cluster, node, resource, key).0
}

#[test]
fn broker_and_group_configs_are_the_clusters() {
    let mut cluster = LocalCluster::start(3, &[]);
    cluster.wait_brokers(1, 3, Duration::from_secs(30));
    let day = Some("86400000".to_string());

    // Negative first: a refused value and a validate-only change reach no broker.
    assert_eq!(
        alter(
            &cluster,
            1,
            (BROKER, ""),
            "log.retention.ms",
            Some("soon"),
            false
        ),
        ErrorCode::InvalidRequest
    );
    assert_eq!(
        alter(
            &cluster,
            1,
            (BROKER, ""),
            "log.retention.ms",
            Some("86400000"),
            true
        ),
        ErrorCode::NoError
    );
    assert_eq!(
        alter(
            &cluster,
            1,
            (GROUP, ""),
            "consumer.session.timeout.ms",
            Some("50000"),
            false
        ),
        ErrorCode::InvalidRequest,
        "Kafka refuses the default group resource"
    );
    std::thread::sleep(Duration::from_millis(500));
    for n in 1..=3 {
        assert_ne!(
            value_on(&cluster, n, (BROKER, &n.to_string()), "log.retention.ms"),
            day
        );
    }

    // The cluster-wide default, set through broker 1, is in effect on all three.
    assert_eq!(
        alter(
            &cluster,
            1,
            (BROKER, ""),
            "log.retention.ms",
            Some("86400000"),
            false
        ),
        ErrorCode::NoError
    );
    assert_eq!(
        describe(&cluster, 1, (BROKER, "1"), "log.retention.ms"),
        (day.clone(), DYNAMIC_DEFAULT_BROKER),
        "the broker that forwarded it answers once it has it"
    );
    eventually("every broker has the cluster-wide default", || {
        (1..=3).all(|n| {
            describe(&cluster, n, (BROKER, &n.to_string()), "log.retention.ms")
                == (day.clone(), DYNAMIC_DEFAULT_BROKER)
        })
    });

    // A per-broker value (sent to its broker, as admin clients do) overrides it there only.
    assert_eq!(
        alter(
            &cluster,
            2,
            (BROKER, "2"),
            "log.retention.ms",
            Some("3600000"),
            false
        ),
        ErrorCode::NoError
    );
    assert_eq!(
        describe(&cluster, 2, (BROKER, "2"), "log.retention.ms"),
        (Some("3600000".into()), DYNAMIC_BROKER)
    );
    std::thread::sleep(Duration::from_millis(300));
    for n in [1, 3] {
        assert_eq!(
            describe(&cluster, n, (BROKER, &n.to_string()), "log.retention.ms"),
            (day.clone(), DYNAMIC_DEFAULT_BROKER)
        );
    }

    // A group's config set through broker 3 is every broker's.
    assert_eq!(
        alter(
            &cluster,
            3,
            (GROUP, "g1"),
            "consumer.session.timeout.ms",
            Some("50000"),
            false
        ),
        ErrorCode::NoError
    );
    eventually("every broker describes the group's config", || {
        (1..=3).all(|n| {
            value_on(&cluster, n, (GROUP, "g1"), "consumer.session.timeout.ms")
                == Some("50000".into())
        })
    });

    // All of it comes back with a restarted node (from the metadata log).
    cluster.kill(2);
    cluster.start_node(2);
    cluster.wait_brokers(1, 3, Duration::from_secs(30));
    eventually(
        "the restarted node has its own value and the group's",
        || {
            describe(&cluster, 2, (BROKER, "2"), "log.retention.ms")
                == (Some("3600000".into()), DYNAMIC_BROKER)
                && value_on(&cluster, 2, (GROUP, "g1"), "consumer.session.timeout.ms")
                    == Some("50000".into())
        },
    );

    // Deleting the default through another broker removes it everywhere it was the source.
    assert_eq!(
        alter(&cluster, 3, (BROKER, ""), "log.retention.ms", None, false),
        ErrorCode::NoError
    );
    eventually("the default is gone from brokers 1 and 3", || {
        [1, 3].iter().all(|n| {
            describe(&cluster, *n, (BROKER, &n.to_string()), "log.retention.ms").1
                != DYNAMIC_DEFAULT_BROKER
        })
    });
    assert_eq!(
        describe(&cluster, 2, (BROKER, "2"), "log.retention.ms"),
        (Some("3600000".into()), DYNAMIC_BROKER)
    );
}
