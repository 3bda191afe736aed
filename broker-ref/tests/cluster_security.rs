//! ACLs and SCRAM credentials in the metadata log of a 3-node local cluster (StandardAuthorizer,
//! `allow.everyone.if.no.acl.found=true`): an ACL created through one broker is enforced by the
//! partition's leader on another and listed by every broker, deleted through a third; a SCRAM
//! credential set through one broker is known to all, and both survive a node's restart.
//! And the nodes' own connections over SASL_SSL (controller and inter-broker listeners): a
//! cluster that replicates that way, the controller listener's authentication and
//! authorization, a node with a wrong password or an untrusted CA kept out (and logged, without
//! its secret).

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::cluster::LocalCluster;
use common::{eventually, one_record, produce_request, sb, Client};
use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::*;
use odradek::ErrorCode;

/// Once the three brokers are up, creates topic `t` (one partition, replication factor 3)
/// through node 1 and waits until all three replicas are in sync; its leader.
fn replicated_topic_t(cluster: &LocalCluster) -> usize {
    cluster.wait_brokers(1, 3, Duration::from_secs(30));
    let create = CreateTopicsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(common::topic_name("t"))
            .with_num_partitions(1)
            .with_replication_factor(3)]);
    assert_eq!(cluster.client(1).call(&create, 7).topics[0].error_code, 0);
    cluster
        .wait_partition(1, "t", 0, Duration::from_secs(15), |p| {
            p.leader > 0 && p.isr.len() == 3
        })
        .leader as usize
}

fn produce_code(client: &mut Client) -> ErrorCode {
    let r = client.call(&produce_request("t", -1, one_record(b"v")), 9);
    ErrorCode::from_code(r.responses[0].partition_responses[0].error_code)
}

fn acls_on(cluster: &LocalCluster, node: usize) -> usize {
    let r = cluster.client(node).call(
        &DescribeAclsRequest::default()
            .with_resource_type_filter(1)
            .with_resource_name_filter(None)
            .with_pattern_type_filter(1)
            .with_principal_filter(None)
            .with_host_filter(None)
            .with_operation(1)
            .with_permission_type(1),
        3,
    );
    assert_eq!(r.error_code, 0, "{r:?}");
    r.resources.iter().map(|x| x.acls.len()).sum()
}

fn scram_users_on(cluster: &LocalCluster, node: usize) -> Vec<String> {
    let r = cluster.client(node).call(
        &DescribeUserScramCredentialsRequest::default().with_users(None),
        0,
    );
    assert_eq!(r.error_code, 0, "{r:?}");
    r.results.iter().map(|x| x.user.to_string()).collect()
}

#[test]
fn acls_and_scram_credentials_are_the_clusters() {
    let mut cluster = LocalCluster::start(
        3,
        &[
            (
                "authorizer.class.name",
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            ),
            ("allow.everyone.if.no.acl.found", "true"),
        ],
    );
    let leader = replicated_topic_t(&cluster);
    let others: Vec<usize> = (1..=3).filter(|n| *n != leader).collect();
    assert_eq!(
        produce_code(&mut cluster.client(leader)),
        ErrorCode::NoError
    );

    // A DENY created through another broker is enforced by the leader and listed everywhere.
    let deny = CreateAclsRequest::default().with_creations(vec![AclCreation::default()
        .with_resource_type(2)
        .with_resource_name(sb("t"))
        .with_resource_pattern_type(3)
        .with_principal(sb("User:ANONYMOUS"))
        .with_host(sb("*"))
        .with_operation(4)
        .with_permission_type(2)]);
    let created = cluster.client(others[0]).call(&deny, 3);
    assert_eq!(created.results[0].error_code, 0, "{created:?}");
    assert_eq!(
        acls_on(&cluster, others[0]),
        1,
        "the creating broker lists it at once"
    );
    eventually("every broker lists the ACL", || {
        (1..=3).all(|n| acls_on(&cluster, n) == 1)
    });
    eventually("the leader denies the write", || {
        produce_code(&mut cluster.client(leader)) == ErrorCode::TopicAuthorizationFailed
    });

    // SCRAM credentials set through one broker are known to all.
    let upsert = AlterUserScramCredentialsRequest::default().with_upsertions(vec![
        ScramCredentialUpsertion::default()
            .with_name(sb("alice"))
            .with_mechanism(1)
            .with_iterations(8192)
            .with_salt(bytes::Bytes::from_static(b"0123456789abcdef"))
            .with_salted_password(bytes::Bytes::from(vec![7u8; 32])),
    ]);
    let altered = cluster.client(others[1]).call(&upsert, 0);
    assert_eq!(altered.results[0].error_code, 0, "{altered:?}");
    assert_eq!(scram_users_on(&cluster, others[1]), ["alice"]);
    eventually("every broker knows alice", || {
        (1..=3).all(|n| scram_users_on(&cluster, n) == ["alice"])
    });

    // Both come back with a restarted node (from the metadata log, not a local file).
    cluster.kill(leader);
    cluster.start_node(leader);
    cluster.wait_brokers(others[0], 3, Duration::from_secs(30));
    eventually("the restarted node lists the ACL and alice", || {
        acls_on(&cluster, leader) == 1 && scram_users_on(&cluster, leader) == ["alice"]
    });

    // Deleted through a third broker: writes are allowed again wherever t is led.
    let delete = DeleteAclsRequest::default().with_filters(vec![DeleteAclsFilter::default()
        .with_resource_type_filter(2)
        .with_resource_name_filter(Some(sb("t")))
        .with_pattern_type_filter(3)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_operation(1)
        .with_permission_type(1)]);
    let deleted = cluster.client(others[1]).call(&delete, 3);
    assert_eq!(deleted.filter_results[0].error_code, 0);
    assert_eq!(deleted.filter_results[0].matching_acls.len(), 1);
    assert_eq!(acls_on(&cluster, others[1]), 0);
    let now_leader = cluster
        .wait_partition(others[1], "t", 0, Duration::from_secs(30), |p| p.leader > 0)
        .leader as usize;
    eventually("the write is allowed again", || {
        produce_code(&mut cluster.client(now_leader)) == ErrorCode::NoError
    });
}

// ---------------------------------------------------------------------------------------------
// Nodes talking to each other over SASL_SSL

const NODE_SECRET: &str = "node-pw-7f3a";
const GUEST_SECRET: &str = "guest-pw-91c2";

/// A CA, a node certificate for 127.0.0.1 (key and chain in one PEM key store) and another CA.
fn node_pki() -> std::path::PathBuf {
    use common::test_ca as ca;
    let dir = common::temp_dir("cluster-pki");
    let (ca_pem, issuer) = ca("odradek cluster test CA");
    let (other_pem, _) = ca("some other CA");
    let key = rcgen::KeyPair::generate().unwrap();
    let mut p =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".into()]).unwrap();
    p.distinguished_name
        .push(rcgen::DnType::CommonName, "odradek-node");
    let cert = p.signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.join("ca.pem"), ca_pem).unwrap();
    std::fs::write(dir.join("other-ca.pem"), other_pem).unwrap();
    std::fs::write(
        dir.join("node.pem"),
        format!("{}{}", key.serialize_pem(), cert.pem()),
    )
    .unwrap();
    dir
}

/// PLAIN's JAAS for a listener: this node logs in as `node` with `password`; the listener
/// accepts `node` and `guest`.
fn plain_jaas(password: &str) -> String {
    format!(
        "org.apache.kafka.common.security.plain.PlainLoginModule required \
         username=\"node\" password=\"{password}\" user_node=\"{NODE_SECRET}\" \
         user_guest=\"{GUEST_SECRET}\";"
    )
}

/// DescribeQuorum on node `id`'s controller listener as `user` over SASL_SSL: the top-level
/// error code, or the connection's error.
fn describe_quorum_as(
    cluster: &LocalCluster,
    id: usize,
    ca: &std::path::Path,
    user: &str,
    password: &str,
) -> Result<i16, String> {
    use odradek::net::{ConnectParams, Connection};
    use odradek::security::SecurityConfig;
    let mut security = SecurityConfig::default();
    for (k, v) in [
        ("security.protocol", "SASL_SSL"),
        ("ssl.ca.location", ca.to_str().unwrap()),
        ("sasl.mechanism", "PLAIN"),
        ("sasl.username", user),
        ("sasl.password", password),
    ] {
        security.set(k, v).unwrap();
    }
    security.prepare().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = Connection::connect(
            &format!("127.0.0.1:{}", cluster.controller_port(id)),
            ConnectParams {
                client_id: "cluster-security-test",
                setup_timeout: Duration::from_secs(5),
                request_timeout: Duration::from_secs(5),
                max_in_flight: 1,
                max_response_size: 1 << 20,
                security: &security,
                node_id: id as i32,
                on_throttle: None,
                on_request: None,
                socket: Default::default(),
            },
        )
        .await
        .map_err(|e| e.to_string())?;
        let request = DescribeQuorumRequest::default().with_topics(vec![
            describe_quorum_request::TopicData::default()
                .with_topic_name(common::topic_name("__cluster_metadata"))
                .with_partitions(vec![
                    describe_quorum_request::PartitionData::default().with_partition_index(0)
                ]),
        ]);
        c.send_versioned(&request, 1)
            .await
            .map(|r| r.error_code)
            .map_err(|e| e.to_string())
    })
}

#[test]
fn nodes_connect_to_each_other_over_sasl_ssl_and_refuse_wrong_logins_and_certificates() {
    let pki = node_pki();
    let store = pki.join("node.pem");
    let ca = pki.join("ca.pem");
    let (store, ca_text) = (store.to_str().unwrap(), ca.to_str().unwrap());
    let jaas = plain_jaas(NODE_SECRET);
    let mut cluster = LocalCluster::start_with_internal_listener(
        3,
        &[
            (
                "listener.security.protocol.map",
                "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL,CONTROLLER:SASL_SSL",
            ),
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
            ("sasl.mechanism.controller.protocol", "PLAIN"),
            ("listener.name.internal.plain.sasl.jaas.config", &jaas),
            ("listener.name.controller.plain.sasl.jaas.config", &jaas),
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", store),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", ca_text),
            (
                "authorizer.class.name",
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            ),
            ("allow.everyone.if.no.acl.found", "false"),
            // The nodes' login, and this test's client on the PLAINTEXT listener.
            ("super.users", "User:node;User:ANONYMOUS"),
        ],
    );
    let leader = replicated_topic_t(&cluster);
    assert_eq!(
        produce_code(&mut cluster.client(leader)),
        ErrorCode::NoError,
        "acks=all answered: every follower fetched over SASL_SSL"
    );

    // The controller listener authenticates and authorizes: a wrong password is refused, an
    // authenticated principal without CLUSTER_ACTION / DESCRIBE gets
    // CLUSTER_AUTHORIZATION_FAILED, a node's principal is served.
    let wrong = describe_quorum_as(&cluster, 1, &ca, "node", "not-the-password");
    assert!(wrong.is_err(), "{wrong:?}");
    assert_eq!(
        describe_quorum_as(&cluster, 1, &ca, "guest", GUEST_SECRET),
        Ok(ErrorCode::ClusterAuthorizationFailed.code())
    );
    assert_eq!(
        describe_quorum_as(&cluster, 1, &ca, "node", NODE_SECRET),
        Ok(0)
    );

    // A node that logs in with a wrong password, or trusts another CA, does not join.
    let others: Vec<usize> = (1..=3).filter(|n| *n != 3).collect();
    let bad_jaas = plain_jaas("not-the-password");
    let other_ca = pki.join("other-ca.pem");
    for bad in [
        vec![
            (
                "listener.name.controller.plain.sasl.jaas.config",
                bad_jaas.as_str(),
            ),
            (
                "listener.name.internal.plain.sasl.jaas.config",
                bad_jaas.as_str(),
            ),
        ],
        vec![("ssl.truststore.location", other_ca.to_str().unwrap())],
    ] {
        cluster.kill(3);
        cluster.wait_brokers(others[0], 2, Duration::from_secs(15));
        cluster.start_node_with(3, &bad);
        std::thread::sleep(Duration::from_secs(4));
        assert_eq!(
            cluster.metadata(others[0], &[]).brokers.len(),
            2,
            "node 3 joined with {:?}",
            bad.iter().map(|(k, _)| *k).collect::<Vec<_>>()
        );
    }
    let log = cluster.log(3);
    assert!(
        log.contains("refused this node's login") && log.contains("SASL_AUTHENTICATION_FAILED"),
        "the wrong login is logged"
    );
    assert!(
        log.contains("UnknownIssuer"),
        "the untrusted certificate is logged"
    );
    assert!(!log.contains(NODE_SECRET), "a secret in node 3's log");
    assert!(
        !log.contains("not-the-password"),
        "a secret in node 3's log"
    );

    // With its own settings back it joins again and catches up.
    cluster.kill(3);
    cluster.start_node(3);
    cluster.wait_brokers(others[0], 3, Duration::from_secs(30));
    cluster.wait_partition(others[0], "t", 0, Duration::from_secs(30), |p| {
        p.isr.len() == 3
    });
}
