//! Dynamic broker configs against a real broker process: IncrementalAlterConfigs and
//! AlterConfigs on the BROKER resource through `odradek::Admin` (per-broker level) and the raw
//! protocol (cluster-wide default, synonyms), persistence across a restart, and errors.

// Test helpers fail the test by unwrapping; a panic is the assertion.
#![allow(clippy::unwrap_used)]

mod common;

use common::{temp_dir, BrokerProcess};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use odradek::admin::{Admin, AlterConfigOp, ConfigEntry, ConfigResource, ConfigSource, NewTopic};
use odradek::ErrorCode;

const BROKER: ConfigResource = ConfigResource::Broker(1);

fn admin(addr: &str) -> Admin {
    Admin::from_map([("bootstrap.servers", addr)]).unwrap()
}

async fn describe(admin: &Admin, resource: ConfigResource) -> Vec<ConfigEntry> {
    let mut out = admin.describe_configs(&[resource]).await.unwrap();
    out.remove(0).1.unwrap()
}

fn entry<'a>(entries: &'a [ConfigEntry], name: &str) -> &'a ConfigEntry {
    entries.iter().find(|e| e.name == name).unwrap()
}

async fn set(admin: &Admin, ops: Vec<AlterConfigOp>) -> Result<(), odradek::Error> {
    let mut out = admin
        .incremental_alter_configs(&[(BROKER, ops)], false)
        .await
        .unwrap();
    out.remove(0).1
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

#[test]
fn broker_configs_change_at_runtime_and_survive_a_restart() {
    let dir = temp_dir("dynamic-configs");
    let broker = BrokerProcess::start(&dir, &[("log.retention.ms", "5000")]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let admin = admin(&broker.addr);
        let before = describe(&admin, BROKER).await;
        let retention = entry(&before, "log.retention.ms");
        assert_eq!(retention.source, ConfigSource::StaticBroker);
        assert!(!retention.read_only);
        // read_only is Kafka's update mode: listeners can change per broker in Kafka (this
        // broker refuses that change, naming the key); num.partitions cannot.
        assert!(!entry(&before, "listeners").read_only);
        assert!(entry(&before, "num.partitions").read_only);
        assert_eq!(
            entry(&before, "log.segment.bytes").source,
            ConfigSource::Default
        );

        set(
            &admin,
            vec![AlterConfigOp::set("log.segment.bytes", "2000")],
        )
        .await
        .unwrap();
        let after = describe(&admin, BROKER).await;
        let seg = entry(&after, "log.segment.bytes");
        assert_eq!(seg.value.as_deref(), Some("2000"));
        assert_eq!(seg.source, ConfigSource::DynamicBroker);
        // Topics without an override follow the new default at once.
        admin
            .create_topics(&[NewTopic::new("dyn")], false)
            .await
            .unwrap()
            .remove(0)
            .1
            .unwrap();
        let topic = describe(&admin, ConfigResource::Topic("dyn".into())).await;
        let seg = entry(&topic, "segment.bytes");
        assert_eq!(seg.value.as_deref(), Some("2000"));
        assert_eq!(seg.source, ConfigSource::DynamicBroker);

        // Keys applied only at startup and unknown keys are refused, naming the key; a bad
        // value is INVALID_REQUEST, as Kafka answers on the BROKER resource.
        let err = set(&admin, vec![AlterConfigOp::set("listeners", "x")])
            .await
            .unwrap_err();
        assert_eq!(err.kafka_code(), ErrorCode::InvalidRequest, "{err}");
        let err = set(&admin, vec![AlterConfigOp::set("no.such.key", "1")])
            .await
            .unwrap_err();
        assert_eq!(err.kafka_code(), ErrorCode::InvalidConfig, "{err}");
        let err = set(&admin, vec![AlterConfigOp::set("log.segment.bytes", "big")])
            .await
            .unwrap_err();
        assert_eq!(err.kafka_code(), ErrorCode::InvalidRequest, "{err}");
    });

    // The cluster-wide default (empty resource name) and synonyms, over the raw protocol.
    let mut client = broker.client();
    let req = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(s(""))
            .with_configs(vec![AlterableConfig::default()
                .with_name(s("log.retention.ms"))
                .with_config_operation(0)
                .with_value(Some(s("7000")))]),
    ]);
    let resp = client.call(&req, 1);
    assert_eq!(resp.responses[0].error_code, 0);
    let describe_raw = |client: &mut common::Client| {
        let req = DescribeConfigsRequest::default()
            .with_resources(vec![DescribeConfigsResource::default()
                .with_resource_type(4)
                .with_resource_name(s("1"))
                .with_configuration_keys(Some(vec![
                    s("log.retention.ms"),
                    s("log.segment.bytes"),
                ]))])
            .with_include_synonyms(true);
        client.call(&req, 4).results.remove(0).configs
    };
    let configs = describe_raw(&mut client);
    let retention = configs
        .iter()
        .find(|c| c.name.as_str() == "log.retention.ms")
        .unwrap();
    assert_eq!(retention.value.as_deref(), Some("7000"));
    assert_eq!(retention.config_source, 3, "DYNAMIC_DEFAULT_BROKER_CONFIG");
    let levels: Vec<(i8, String)> = retention
        .synonyms
        .iter()
        .map(|s| (s.source, s.value.as_ref().unwrap().to_string()))
        .collect();
    assert_eq!(levels, vec![(3, "7000".into()), (4, "5000".into())]);
    drop(client);

    // Persisted: the same values after a restart; legacy AlterConfigs replaces the level.
    broker.stop();
    let broker = BrokerProcess::start(&dir, &[("log.retention.ms", "5000")]);
    let mut client = broker.client();
    let configs = describe_raw(&mut client);
    let seg = configs
        .iter()
        .find(|c| c.name.as_str() == "log.segment.bytes")
        .unwrap();
    assert_eq!((seg.value.as_deref(), seg.config_source), (Some("2000"), 2));
    rt.block_on(async {
        let admin = admin(&broker.addr);
        let mut out = admin
            .alter_configs(
                &[(BROKER, vec![("message.max.bytes".into(), "3000".into())])],
                false,
            )
            .await
            .unwrap();
        out.remove(0).1.unwrap();
        let after = describe(&admin, BROKER).await;
        assert_eq!(
            entry(&after, "log.segment.bytes").source,
            ConfigSource::Default
        );
        let max = entry(&after, "message.max.bytes");
        assert_eq!(
            (max.value.as_deref(), max.source),
            (Some("3000"), ConfigSource::DynamicBroker)
        );
        let topic = describe(&admin, ConfigResource::Topic("dyn".into())).await;
        assert_eq!(
            entry(&topic, "max.message.bytes").value.as_deref(),
            Some("3000")
        );
    });
    broker.stop();
}

/// GROUP config resources over the raw protocol: set, validated against the broker's bounds,
/// kept across a restart, deleted.
#[test]
fn group_configs_survive_a_restart() {
    let dir = temp_dir("group-configs");
    let broker = BrokerProcess::start(&dir, &[]);
    let alter = |client: &mut common::Client, op: i8, value: Option<&str>| {
        let req = IncrementalAlterConfigsRequest::default().with_resources(vec![
            AlterConfigsResource::default()
                .with_resource_type(32)
                .with_resource_name(s("payments"))
                .with_configs(vec![AlterableConfig::default()
                    .with_name(s("consumer.session.timeout.ms"))
                    .with_config_operation(op)
                    .with_value(value.map(s))]),
        ]);
        let r = client.call(&req, 1).responses.remove(0);
        (r.error_code, r.error_message.map(|m| m.to_string()))
    };
    let session = |client: &mut common::Client| {
        let req = DescribeConfigsRequest::default().with_resources(vec![
            DescribeConfigsResource::default()
                .with_resource_type(32)
                .with_resource_name(s("payments"))
                .with_configuration_keys(Some(vec![s("consumer.session.timeout.ms")])),
        ]);
        let c = client.call(&req, 4).results.remove(0).configs.remove(0);
        (c.value.map(|v| v.to_string()), c.config_source)
    };
    let mut client = broker.client();
    let (code, message) = alter(&mut client, 0, Some("1000"));
    assert_eq!(code, 40, "below group.consumer.min.session.timeout.ms");
    assert!(message.unwrap().contains("45000 to 60000"));
    assert_eq!(alter(&mut client, 0, Some("50000")).0, 0);
    assert_eq!(session(&mut client), (Some("50000".into()), 8));
    drop(client);
    broker.stop();

    let broker = BrokerProcess::start(&dir, &[]);
    let mut client = broker.client();
    assert_eq!(session(&mut client), (Some("50000".into()), 8));
    assert_eq!(alter(&mut client, 1, None).0, 0);
    assert_eq!(session(&mut client), (Some("45000".into()), 5));
}
