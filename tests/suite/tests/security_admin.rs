//! ACL and SCRAM credential administration against a secured broker, and their effect: a
//! super user creates ACLs that deny one principal writes to a topic (its produce then fails
//! with TOPIC_AUTHORIZATION_FAILED and succeeds again once they are deleted), and a SCRAM user
//! made through AlterUserScramCredentials can log in until its credential is deleted.
//!
//! Driven by `tests/security/client.sh` (see `secured`); skipped without it. Every principal
//! and user is fresh per run, and every ACL made here is deleted again, so other tests on the
//! same broker see no change.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use odradek::admin::{
    AclBinding, AclBindingFilter, AclOperation, AclPermission, NewTopic, PatternType, ResourceType,
    ScramAlteration, ScramCredentialInfo, ScramMechanism,
};
use odradek::security::Secret;
use odradek::{Admin, ClientConfig, ErrorCode, Producer, ProducerRecord};
use odradek_suite::topic_name;

mod secured;
use secured::{env, Env};

fn s(v: &str) -> String {
    v.to_string()
}

/// The super user `admin` over SASL_SSL with SCRAM-SHA-512.
fn super_user(e: &Env) -> Admin {
    Admin::new(scram_config(e, "admin", "admin-secret", "SCRAM-SHA-512"))
}

fn scram_config(e: &Env, user: &str, password: &str, mechanism: &str) -> ClientConfig {
    e.config(
        "SASL_SSL",
        &[
            ("security.protocol", s("SASL_SSL")),
            ("ssl.ca.location", e.file("ca.pem")),
            ("sasl.mechanism", s(mechanism)),
            ("sasl.username", s(user)),
            ("sasl.password", s(password)),
            ("default.api.timeout.ms", s("15000")),
        ],
    )
    .unwrap()
}

/// A client config logging in as `User:<name>` (unsecured OAUTHBEARER: the broker takes the
/// token's subject as the principal).
fn as_principal(e: &Env, name: &str) -> ClientConfig {
    e.config(
        "SASL_SSL",
        &[
            ("security.protocol", s("SASL_SSL")),
            ("ssl.ca.location", e.file("ca.pem")),
            ("sasl.mechanism", s("OAUTHBEARER")),
            ("enable.sasl.oauthbearer.unsecure.jwt", s("true")),
            ("sasl.oauthbearer.config", format!("principal={name}")),
            ("delivery.timeout.ms", s("12000")),
            ("retries", s("0")),
        ],
    )
    .unwrap()
}

/// Produces one record; the delivery outcome.
async fn produce(config: ClientConfig, topic: &str) -> odradek::Result<()> {
    let producer = Producer::new(config).unwrap();
    let result = match producer
        .send(ProducerRecord::new(topic, "v").partition(0))
        .await
    {
        Ok(delivery) => delivery.await.map(|_| ()),
        Err(e) => Err(e),
    };
    producer.close().await;
    result
}

fn acl(
    resource_type: ResourceType,
    name: &str,
    principal: &str,
    operation: AclOperation,
    permission: AclPermission,
) -> AclBinding {
    AclBinding {
        resource_type,
        name: name.into(),
        pattern_type: PatternType::Literal,
        principal: principal.into(),
        host: "*".into(),
        operation,
        permission,
    }
}

fn by_principal(principal: &str) -> AclBindingFilter {
    AclBindingFilter {
        principal: Some(principal.into()),
        ..AclBindingFilter::any()
    }
}

/// Describes `filter` until it matches `count` bindings (Kafka applies ACL changes through its
/// metadata log after answering), failing after 20 s with what was last described.
async fn described_until(
    admin: &Admin,
    filter: &AclBindingFilter,
    count: usize,
) -> Vec<AclBinding> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let described = admin.describe_acls(filter).await.unwrap();
        if described.len() == count {
            return described;
        }
        assert!(
            Instant::now() < deadline,
            "expected {count} ACLs, still described: {described:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn sorted(mut acls: Vec<AclBinding>) -> Vec<AclBinding> {
    acls.sort_by_key(|a| (a.name.clone(), a.operation.wire(), a.permission.wire()));
    acls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acls_are_created_described_enforced_and_deleted() {
    let Some(e) = env() else { return };
    let admin = super_user(&e);
    let topic = topic_name("acl");
    let results = admin
        .create_topics(&[NewTopic::new(&topic).partitions(1)], false)
        .await
        .unwrap();
    results[0].1.as_ref().unwrap();
    let name = topic_name("acl-user");
    let principal = format!("User:{name}");

    // Before any ACL names the topic, everyone may write (allow.everyone.if.no.acl.found).
    produce(as_principal(&e, &name), &topic).await.unwrap();

    let wanted = vec![
        acl(
            ResourceType::Topic,
            &topic,
            &principal,
            AclOperation::Describe,
            AclPermission::Allow,
        ),
        acl(
            ResourceType::Topic,
            &topic,
            &principal,
            AclOperation::Write,
            AclPermission::Deny,
        ),
    ];
    for (binding, result) in admin.create_acls(&wanted).await.unwrap() {
        result.unwrap_or_else(|err| panic!("{binding:?}: {err}"));
    }
    // Bindings Kafka would refuse are refused locally, each on its own.
    let mut bad = wanted[0].clone();
    bad.pattern_type = PatternType::Match;
    let mut unnamed = wanted[0].clone();
    unnamed.principal = s("nobody");
    let refused = admin.create_acls(&[bad, unnamed]).await.unwrap();
    for (binding, result) in refused {
        let err = result.expect_err("refused");
        assert_eq!(
            err.kafka_code(),
            ErrorCode::InvalidRequest,
            "{binding:?}: {err}"
        );
    }

    // Kafka answers CreateAcls/DeleteAcls before every broker's authorizer has applied the change
    // from its metadata log: a describe right after may still see the old set, so ask until it
    // settles.
    let described = described_until(&admin, &by_principal(&principal), wanted.len()).await;
    assert_eq!(sorted(described), sorted(wanted.clone()));
    let on_topic = AclBindingFilter {
        resource_type: ResourceType::Topic,
        name: Some(topic.clone()),
        pattern_type: PatternType::Match,
        operation: AclOperation::Write,
        ..AclBindingFilter::any()
    };
    assert_eq!(
        admin.describe_acls(&on_topic).await.unwrap(),
        vec![wanted[1].clone()]
    );

    // The DENY takes effect (Kafka applies ACL changes through its metadata log, so allow a
    // moment), and the error names the cause.
    let deadline = Instant::now() + Duration::from_secs(20);
    let err = loop {
        match produce(as_principal(&e, &name), &topic).await {
            Err(err) => break err,
            Ok(()) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await
            }
            Ok(()) => panic!("the DENY WRITE ACL was not enforced"),
        }
    };
    assert_eq!(
        err.kafka_code(),
        ErrorCode::TopicAuthorizationFailed,
        "{err}"
    );
    // Others are unaffected: the super user still writes.
    produce(
        scram_config(&e, "admin", "admin-secret", "SCRAM-SHA-512"),
        &topic,
    )
    .await
    .unwrap();

    let deleted = admin
        .delete_acls(&[by_principal(&principal)])
        .await
        .unwrap();
    let matched: Vec<AclBinding> = deleted[0]
        .1
        .as_ref()
        .unwrap()
        .iter()
        .map(|(binding, result)| {
            assert!(result.is_ok(), "{binding:?}: {result:?}");
            binding.clone()
        })
        .collect();
    assert_eq!(sorted(matched), sorted(wanted));
    assert!(described_until(&admin, &by_principal(&principal), 0)
        .await
        .is_empty());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match produce(as_principal(&e, &name), &topic).await {
            Ok(()) => break,
            Err(err) if Instant::now() < deadline => {
                assert_eq!(
                    err.kafka_code(),
                    ErrorCode::TopicAuthorizationFailed,
                    "{err}"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(err) => panic!("still denied after the ACLs were deleted: {err}"),
        }
    }
    admin.delete_topics(&[topic.as_str()]).await.unwrap();
    admin.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_credentials_are_made_listed_used_and_deleted() {
    let Some(e) = env() else { return };
    let admin = super_user(&e);
    let user = topic_name("scram-user");
    let password = format!("{user}-pw");
    let upsert = ScramAlteration::Upsert {
        user: user.clone(),
        info: ScramCredentialInfo {
            mechanism: ScramMechanism::Sha256,
            iterations: 8192,
        },
        password: Secret::new(password.clone()),
        salt: None,
    };
    assert!(
        !format!("{upsert:?}").contains(&password),
        "the password leaks through Debug"
    );
    let results = admin.alter_user_scram_credentials(&[upsert]).await.unwrap();
    assert_eq!(results.len(), 1);
    results[0].1.as_ref().unwrap();

    let described = admin
        .describe_user_scram_credentials(Some(&[user.as_str()]))
        .await
        .unwrap();
    assert_eq!(described.len(), 1);
    assert_eq!(described[0].0, user);
    assert_eq!(
        described[0].1.as_ref().unwrap(),
        &vec![ScramCredentialInfo {
            mechanism: ScramMechanism::Sha256,
            iterations: 8192
        }]
    );
    let everyone = admin.describe_user_scram_credentials(None).await.unwrap();
    let names: Vec<&str> = everyone.iter().map(|(u, _)| u.as_str()).collect();
    for wanted in ["alice", "admin", user.as_str()] {
        assert!(names.contains(&wanted), "{wanted} missing from {names:?}");
    }

    // The new user logs in with its password (the broker derived the keys from the salted
    // password the client sent), and not with another.
    let login = |password: &str| {
        let config = scram_config(&e, &user, password, "SCRAM-SHA-256");
        async move {
            let a = Admin::new(config);
            let r = a.describe_cluster().await.map(|_| ());
            a.close();
            r
        }
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match login(&password).await {
            Ok(()) => break,
            Err(err) if err.is_authentication() && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await
            }
            Err(err) => panic!("the new SCRAM user cannot log in: {err}"),
        }
    }
    let err = login("wrong").await.unwrap_err();
    assert!(err.is_authentication(), "{err}");

    // Per-user errors: iterations out of range (refused before sending), deleting a credential
    // the user does not have, and an unknown user.
    let results = admin
        .alter_user_scram_credentials(&[
            ScramAlteration::Upsert {
                user: s("too-few-iterations"),
                info: ScramCredentialInfo {
                    mechanism: ScramMechanism::Sha512,
                    iterations: 10,
                },
                password: Secret::new("x"),
                salt: None,
            },
            ScramAlteration::Delete {
                user: user.clone(),
                mechanism: ScramMechanism::Sha512,
            },
        ])
        .await
        .unwrap();
    let code = |i: usize| results[i].1.as_ref().unwrap_err().kafka_code();
    assert_eq!(code(0), ErrorCode::UnacceptableCredential);
    assert_eq!(code(1), ErrorCode::ResourceNotFound);
    let missing = admin
        .describe_user_scram_credentials(Some(&["no-such-user-at-all"]))
        .await
        .unwrap();
    let err = missing[0].1.as_ref().unwrap_err();
    assert_eq!(err.kafka_code(), ErrorCode::ResourceNotFound, "{err}");

    let results = admin
        .alter_user_scram_credentials(&[ScramAlteration::Delete {
            user: user.clone(),
            mechanism: ScramMechanism::Sha256,
        }])
        .await
        .unwrap();
    results[0].1.as_ref().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match login(&password).await {
            Err(err) if err.is_authentication() => break,
            Ok(()) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await
            }
            other => panic!("the deleted SCRAM user can still log in: {other:?}"),
        }
    }
    admin.close();
}
