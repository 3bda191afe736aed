//! ACLs and SCRAM credentials in the metadata log of a 3-node local cluster (StandardAuthorizer,
//! `allow.everyone.if.no.acl.found=true`): an ACL created through one broker is enforced by the
//! partition's leader on another and listed by every broker, deleted through a third; a SCRAM
//! credential set through one broker is known to all, and both survive a node's restart.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::cluster::LocalCluster;
use common::{one_record, produce_request, Client};
use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use odradek::ErrorCode;

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

fn eventually(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !ok() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
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
    cluster.wait_brokers(1, 3, Duration::from_secs(30));
    let create = CreateTopicsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(common::topic_name("t"))
            .with_num_partitions(1)
            .with_replication_factor(3)]);
    assert_eq!(cluster.client(1).call(&create, 7).topics[0].error_code, 0);
    let leader = cluster
        .wait_partition(1, "t", 0, Duration::from_secs(10), |p| {
            p.leader > 0 && p.isr.len() == 3
        })
        .leader as usize;
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
