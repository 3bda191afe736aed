//! The client over TLS and SASL against a secured broker: round trips on every listener and
//! mechanism, a consumer group and a transaction over SASL_SSL, and the failures a user must see
//! quickly and clearly (wrong password, unknown user, untrusted / expired / wrongly named
//! certificates, plaintext on a TLS port, TLS on a plaintext port).
//!
//! Driven by `tests/security/run.sh`, which makes the certificates (`tests/security/certs.sh`)
//! and starts the broker: `ODRADEK_SECURITY_LISTENERS` names a file of `NAME=host:port` lines
//! (PLAINTEXT, SSL, MTLS, SASL_SSL, SASL_PLAINTEXT) and `ODRADEK_SECURITY_PKI` the certificate
//! directory. Without them the tests say so and return.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use odradek::producer::TopicPartition;
use odradek::security::{TokenFuture, TokenProvider};
use odradek::{ClientConfig, Consumer, Error, Producer, ProducerRecord};
use odradek_suite::topic_name;

mod secured;
use secured::{env, Env};

const T: Duration = Duration::from_secs(30);

fn s(v: &str) -> String {
    v.to_string()
}

/// Sends `n` records to a fresh topic and reads them back from partition 0.
async fn round_trip(config: ClientConfig, tag: &str) {
    let topic = topic_name(tag);
    let producer = Producer::new(config.clone()).unwrap();
    let mut futures = Vec::new();
    for i in 0..20 {
        let r = ProducerRecord::new(&topic, format!("{tag}-{i}")).partition(0);
        futures.push(
            producer
                .send(r)
                .await
                .unwrap_or_else(|e| panic!("{tag}: send: {e}")),
        );
    }
    for f in futures {
        f.await.unwrap_or_else(|e| panic!("{tag}: delivery: {e}"));
    }
    producer.close().await;
    let mut c = config;
    c.consumer.auto_offset_reset = odradek::config::OffsetReset::Earliest;
    let consumer = Consumer::new(c).unwrap();
    consumer.assign(&[TopicPartition::new(topic.as_str(), 0)]);
    let mut got = Vec::new();
    let deadline = Instant::now() + T;
    while got.len() < 20 {
        assert!(Instant::now() < deadline, "{tag}: read {} of 20", got.len());
        for r in consumer.poll(Duration::from_millis(500)).await.unwrap() {
            got.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
        }
    }
    consumer.close().await;
    let want: Vec<String> = (0..20).map(|i| format!("{tag}-{i}")).collect();
    assert_eq!(got, want, "{tag}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trips_on_every_listener_and_mechanism() {
    let Some(e) = env() else { return };
    let ca = e.file("ca.pem");
    type Case<'a> = (&'a str, &'a str, Vec<(&'a str, String)>);
    let cases: Vec<Case<'_>> = vec![
        (
            "ssl",
            "SSL",
            vec![
                ("security.protocol", s("SSL")),
                ("ssl.ca.location", ca.clone()),
            ],
        ),
        (
            "ssl-ca-dir-and-pem",
            "SSL",
            vec![
                ("security.protocol", s("ssl")),
                ("ssl.ca.pem", std::fs::read_to_string(&ca).unwrap()),
            ],
        ),
        (
            "mtls",
            "MTLS",
            vec![
                ("security.protocol", s("SSL")),
                ("ssl.ca.location", ca.clone()),
                ("ssl.certificate.location", e.file("client.pem")),
                ("ssl.key.location", e.file("client.key")),
            ],
        ),
        (
            "mtls-encrypted-key",
            "MTLS",
            vec![
                ("security.protocol", s("SSL")),
                ("ssl.ca.location", ca.clone()),
                ("ssl.certificate.location", e.file("client.pem")),
                ("ssl.key.location", e.file("client-encrypted.key")),
                (
                    "ssl.key.password",
                    std::fs::read_to_string(e.file("client-key-password.txt"))
                        .unwrap()
                        .trim()
                        .to_string(),
                ),
            ],
        ),
        (
            "mtls-java-pem-keystore",
            "MTLS",
            vec![
                ("security.protocol", s("SSL")),
                ("ssl.truststore.type", s("PEM")),
                ("ssl.truststore.location", ca.clone()),
                ("ssl.keystore.type", s("PEM")),
                ("ssl.keystore.location", e.file("client-keystore.pem")),
            ],
        ),
        (
            "sasl-ssl-plain",
            "SASL_SSL",
            vec![
                ("security.protocol", s("SASL_SSL")),
                ("ssl.ca.location", ca.clone()),
                ("sasl.mechanism", s("PLAIN")),
                ("sasl.username", s("alice")),
                ("sasl.password", s("alice-secret")),
            ],
        ),
        (
            "sasl-ssl-scram-256",
            "SASL_SSL",
            vec![
                ("security.protocol", s("SASL_SSL")),
                ("ssl.ca.location", ca.clone()),
                ("sasl.mechanism", s("SCRAM-SHA-256")),
                ("sasl.username", s("alice")),
                ("sasl.password", s("alice-secret")),
            ],
        ),
        (
            "sasl-ssl-scram-512-jaas",
            "SASL_SSL",
            vec![
                ("security.protocol", s("SASL_SSL")),
                ("ssl.ca.location", ca.clone()),
                ("sasl.mechanism", s("SCRAM-SHA-512")),
                (
                    "sasl.jaas.config",
                    s(
                        r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";"#,
                    ),
                ),
            ],
        ),
        (
            "sasl-plaintext-scram-512",
            "SASL_PLAINTEXT",
            vec![
                ("security.protocol", s("SASL_PLAINTEXT")),
                ("sasl.mechanism", s("SCRAM-SHA-512")),
                ("sasl.username", s("alice")),
                ("sasl.password", s("alice-secret")),
            ],
        ),
        (
            "sasl-ssl-oauthbearer-unsecured",
            "SASL_SSL",
            vec![
                ("security.protocol", s("SASL_SSL")),
                ("ssl.ca.location", ca.clone()),
                ("sasl.mechanism", s("OAUTHBEARER")),
                ("enable.sasl.oauthbearer.unsecure.jwt", s("true")),
                ("sasl.oauthbearer.config", s("principal=alice scope=kafka")),
            ],
        ),
    ];
    for (tag, listener, extra) in cases {
        let config = e
            .config(listener, &extra)
            .unwrap_or_else(|err| panic!("{tag}: {err}"));
        round_trip(config, tag).await;
    }
}

/// A token callback that counts its calls (an application's `oauth_cb`).
#[derive(Debug, Default)]
struct Callback(Arc<std::sync::atomic::AtomicUsize>);

impl TokenProvider for Callback {
    fn token(&self) -> TokenFuture {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async {
            let jwt = odradek::security::oauth::UnsecuredJwt::parse_config(
                "sasl.oauthbearer.config",
                "principal=callback-user",
            )?;
            jwt.token(odradek_now_ms())
        })
    }
}

fn odradek_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauthbearer_token_callback_and_oidc_client_credentials() {
    let Some(e) = env() else { return };
    let ca = e.file("ca.pem");
    let base = vec![
        ("security.protocol", s("SASL_SSL")),
        ("ssl.ca.location", ca),
        ("sasl.mechanism", s("OAUTHBEARER")),
    ];
    // Without a token source the client says what to configure.
    let err = ClientConfig::from_map([
        ("bootstrap.servers", e.addr("SASL_SSL")),
        ("security.protocol", "SASL_SSL"),
        ("sasl.mechanism", "OAUTHBEARER"),
        ("sasl.oauthbearer.method", "oidc"),
    ])
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("sasl.oauthbearer.token.endpoint.url"),
        "{err}"
    );
    // A callback set in code.
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut config = e.config("SASL_SSL", &base).unwrap();
    config
        .set_token_provider(Arc::new(Callback(calls.clone())))
        .unwrap();
    round_trip(config, "oauth-callback").await;
    assert!(calls.load(std::sync::atomic::Ordering::SeqCst) >= 1);
    // OIDC against a token endpoint started here (it hands out tokens Kafka's unsecured
    // validator accepts, after checking the grant and the client's credentials).
    let endpoint = TokenEndpoint::start("app", "app-secret").await;
    let mut oidc = base.clone();
    oidc.extend([
        ("sasl.oauthbearer.method", s("oidc")),
        ("sasl.oauthbearer.token.endpoint.url", endpoint.url.clone()),
        ("sasl.oauthbearer.client.id", s("app")),
        ("sasl.oauthbearer.client.secret", s("app-secret")),
        ("sasl.oauthbearer.scope", s("kafka")),
    ]);
    round_trip(e.config("SASL_SSL", &oidc).unwrap(), "oauth-oidc").await;
    assert!(endpoint.served() >= 1);
    // Wrong client secret: the endpoint refuses, and the client reports it quickly.
    let mut wrong = oidc.clone();
    wrong.retain(|(k, _)| *k != "sasl.oauthbearer.client.secret");
    wrong.push(("sasl.oauthbearer.client.secret", s("nope")));
    let p = Producer::new(e.config("SASL_SSL", &wrong).unwrap()).unwrap();
    let started = Instant::now();
    let err = p
        .send(ProducerRecord::new(topic_name("oidc-wrong"), "x"))
        .await
        .unwrap_err();
    assert!(err.is_authentication(), "{err}");
    assert!(
        !err.to_string().contains("nope"),
        "the secret leaked: {err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

/// What a connection attempt with `extra` on `listener` fails with, and how long it took.
async fn failure(e: &Env, listener: &str, extra: &[(&str, String)]) -> (Error, Duration) {
    let config = e.config(listener, extra).unwrap();
    let producer = Producer::new(config).unwrap();
    let started = Instant::now();
    let err = match producer
        .send(ProducerRecord::new(topic_name("denied"), "x"))
        .await
    {
        Err(err) => err,
        Ok(f) => f.await.unwrap_err(),
    };
    (err, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authentication_failures_are_fast_typed_and_secret_free() {
    let Some(e) = env() else { return };
    let ca = e.file("ca.pem");
    let sasl = |user: &str, password: &str, mechanism: &str| {
        vec![
            ("security.protocol", s("SASL_SSL")),
            ("ssl.ca.location", ca.clone()),
            ("sasl.mechanism", mechanism.to_string()),
            ("sasl.username", user.to_string()),
            ("sasl.password", password.to_string()),
        ]
    };
    for (tag, extra, secret) in [
        (
            "wrong password, SCRAM",
            sasl("alice", "Xq7-not-hers", "SCRAM-SHA-512"),
            "Xq7-not-hers",
        ),
        (
            "unknown user, SCRAM",
            sasl("mallory", "Zz9-whatever", "SCRAM-SHA-256"),
            "Zz9-whatever",
        ),
        (
            "wrong password, PLAIN",
            sasl("alice", "Xq7-not-hers", "PLAIN"),
            "Xq7-not-hers",
        ),
    ] {
        let (err, took) = failure(&e, "SASL_SSL", &extra).await;
        assert!(
            matches!(err, Error::SaslAuthentication { .. }),
            "{tag}: {err}"
        );
        assert!(!err.is_retriable(), "{tag}");
        assert!(
            !err.to_string().contains(secret),
            "{tag}: a secret in {err}"
        );
        assert!(
            !format!("{err:?}").contains(secret),
            "{tag}: a secret in {err:?}"
        );
        assert!(took < Duration::from_secs(8), "{tag}: {took:?}");
    }
    fn tls(extra: Vec<(&'static str, String)>) -> Vec<(&'static str, String)> {
        let mut v = vec![("security.protocol", s("SSL"))];
        v.extend(extra);
        v
    }
    // The broker's certificate is not signed by the CA we trust.
    let (err, _) = failure(
        &e,
        "SSL",
        &tls(vec![("ssl.ca.location", e.file("other-ca.pem"))]),
    )
    .await;
    assert!(
        matches!(err, Error::SslHandshake { .. }),
        "untrusted broker: {err}"
    );
    // Client certificates the MTLS listener refuses: expired, and from another CA.
    for (tag, cert, key) in [
        ("expired", "expired.pem", "expired.key"),
        ("untrusted", "untrusted.pem", "untrusted.key"),
    ] {
        let extra = tls(vec![
            ("ssl.ca.location", ca.clone()),
            ("ssl.certificate.location", e.file(cert)),
            ("ssl.key.location", e.file(key)),
        ]);
        let (err, took) = failure(&e, "MTLS", &extra).await;
        assert!(
            matches!(err, Error::SslHandshake { .. } | Error::Connection { .. }),
            "{tag} client certificate: {err}"
        );
        assert!(
            !err.is_retriable() || matches!(err, Error::Connection { .. }),
            "{tag}"
        );
        assert!(took < Duration::from_secs(12), "{tag}: {took:?}");
    }
    // No client certificate on a listener that requires one.
    let (err, _) = failure(&e, "MTLS", &tls(vec![("ssl.ca.location", ca.clone())])).await;
    assert!(
        matches!(err, Error::SslHandshake { .. } | Error::Connection { .. }),
        "no client certificate: {err}"
    );
    // A TLS client on the plaintext listener.
    let (err, took) = failure(&e, "PLAINTEXT", &tls(vec![("ssl.ca.location", ca.clone())])).await;
    assert!(
        matches!(err, Error::SslHandshake { .. }),
        "TLS on plaintext: {err}"
    );
    assert!(took < Duration::from_secs(8), "{took:?}");
    // A plaintext client on a TLS listener: the error says what to check.
    let (err, took) = failure(&e, "SSL", &[]).await;
    assert!(
        err.to_string().contains("security.protocol"),
        "plaintext on TLS: {err}"
    );
    assert!(took < Duration::from_secs(12), "{took:?}");
    // GSSAPI is refused when the client is created.
    let err = e
        .config(
            "SASL_SSL",
            &[
                ("security.protocol", s("SASL_SSL")),
                ("sasl.mechanism", s("GSSAPI")),
            ],
        )
        .unwrap_err();
    assert!(err.to_string().contains("GSSAPI"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_and_transaction_over_sasl_ssl() {
    let Some(e) = env() else { return };
    let extra = vec![
        ("security.protocol", s("SASL_SSL")),
        ("ssl.ca.location", e.file("ca.pem")),
        ("sasl.mechanism", s("SCRAM-SHA-512")),
        ("sasl.username", s("alice")),
        ("sasl.password", s("alice-secret")),
    ];
    let topic = topic_name("sec-txn");
    let mut txn = extra.clone();
    txn.push(("transactional.id", topic_name("sec-txn-id")));
    let producer = Producer::new(e.config("SASL_SSL", &txn).unwrap()).unwrap();
    producer.init_transactions(T).await.unwrap();
    producer.begin_transaction().unwrap();
    for i in 0..10 {
        producer
            .send(ProducerRecord::new(&topic, format!("c{i}")).partition(0))
            .await
            .unwrap();
    }
    producer.commit_transaction(T).await.unwrap();
    producer.begin_transaction().unwrap();
    producer
        .send(ProducerRecord::new(&topic, "aborted").partition(0))
        .await
        .unwrap();
    producer.abort_transaction(T).await.unwrap();
    producer.close().await;
    let mut group = extra.clone();
    group.extend([
        ("group.id", topic_name("sec-group")),
        ("auto.offset.reset", s("earliest")),
        ("isolation.level", s("read_committed")),
    ]);
    let consumer = Consumer::new(e.config("SASL_SSL", &group).unwrap()).unwrap();
    consumer.subscribe(&[topic.as_str()], None).unwrap();
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while got.len() < 10 {
        assert!(Instant::now() < deadline, "read {got:?}");
        for r in consumer.poll(Duration::from_millis(500)).await.unwrap() {
            got.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
        }
    }
    consumer.commit_sync(None).await.unwrap();
    consumer.close().await;
    assert_eq!(got, (0..10).map(|i| format!("c{i}")).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_name_is_checked_unless_turned_off() {
    let Some(e) = env() else { return };
    // A TLS server here with a certificate for wrong.invalid only.
    let server = WrongHostServer::start(&e).await;
    let base = [
        ("security.protocol", s("SSL")),
        ("ssl.ca.location", e.file("ca.pem")),
    ];
    let config = |extra: &[(&str, String)]| {
        let mut entries: Vec<(String, String)> = vec![
            ("bootstrap.servers".into(), server.addr.clone()),
            ("socket.connection.setup.timeout.ms".into(), "3000".into()),
        ];
        entries.extend(
            base.iter()
                .chain(extra)
                .map(|(k, v)| (k.to_string(), v.clone())),
        );
        ClientConfig::from_map(entries).unwrap()
    };
    let cluster = odradek::cluster::Cluster::new(config(&[]));
    let err = cluster.refresh().await.unwrap_err();
    assert!(matches!(err, Error::SslHandshake { .. }), "{err}");
    assert!(err.to_string().contains("NotValidForName"), "{err}");
    // With the check off the handshake succeeds (the server then closes: it is no broker).
    let cluster = odradek::cluster::Cluster::new(config(&[(
        "ssl.endpoint.identification.algorithm",
        s("none"),
    )]));
    let err = cluster.refresh().await.unwrap_err();
    assert!(!matches!(err, Error::SslHandshake { .. }), "{err}");
    assert!(server.handshakes() >= 1);
}

/// A TLS server presenting `broker-wronghost.pem`, closing each connection after its
/// handshake.
struct WrongHostServer {
    addr: String,
    done: Arc<std::sync::atomic::AtomicUsize>,
}

impl WrongHostServer {
    async fn start(e: &Env) -> WrongHostServer {
        use rustls_pki_types::pem::PemObject;
        let certs: Vec<_> =
            rustls_pki_types::CertificateDer::pem_file_iter(e.file("broker-wronghost.pem"))
                .unwrap()
                .map(|c| c.unwrap())
                .collect();
        let key =
            rustls_pki_types::PrivateKeyDer::from_pem_file(e.file("broker-wronghost.key")).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = done.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let counter = counter.clone();
                tokio::spawn(async move {
                    if acceptor.accept(tcp).await.is_ok() {
                        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                });
            }
        });
        WrongHostServer { addr, done }
    }

    fn handshakes(&self) -> usize {
        self.done.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// A minimal OAuth 2 token endpoint: POST with `grant_type=client_credentials` and HTTP Basic
/// credentials; answers an unsecured JWT for the client id.
struct TokenEndpoint {
    url: String,
    served: Arc<std::sync::atomic::AtomicUsize>,
}

impl TokenEndpoint {
    async fn start(client_id: &'static str, secret: &'static str) -> TokenEndpoint {
        use base64::Engine;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/token", listener.local_addr().unwrap());
        let served = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = served.clone();
        let expected = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{client_id}:{secret}"))
        );
        tokio::spawn(async move {
            while let Ok((mut tcp, _)) = listener.accept().await {
                let expected = expected.clone();
                let counter = counter.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 16384];
                    let mut n = 0;
                    // Read the head and the (small) body.
                    loop {
                        let Ok(k) = tcp.read(&mut buf[n..]).await else {
                            return;
                        };
                        if k == 0 {
                            return;
                        }
                        n += k;
                        let text = String::from_utf8_lossy(&buf[..n]);
                        if let Some(head_end) = text.find("\r\n\r\n") {
                            let len = text
                                .lines()
                                .find_map(|l| {
                                    l.to_ascii_lowercase()
                                        .strip_prefix("content-length:")
                                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                                })
                                .unwrap_or(0);
                            if n >= head_end + 4 + len {
                                break;
                            }
                        }
                    }
                    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                    let authorized = text
                        .lines()
                        .any(|l| l.eq_ignore_ascii_case(&format!("authorization: {expected}")));
                    let grant = text.contains("grant_type=client_credentials")
                        && text.contains("scope=kafka");
                    let (status, body) = if authorized && grant {
                        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        let jwt = odradek::security::oauth::UnsecuredJwt::parse_config(
                            "t",
                            "principal=app lifeSeconds=600",
                        )
                        .unwrap()
                        .token(odradek_now_ms())
                        .unwrap();
                        (
                            "200 OK",
                            format!(
                                r#"{{"access_token":"{}","token_type":"bearer","expires_in":600}}"#,
                                jwt.value.expose()
                            ),
                        )
                    } else {
                        ("401 Unauthorized", r#"{"error":"invalid_client","error_description":"bad client credentials"}"#.to_string())
                    };
                    let reply = format!(
                        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = tcp.write_all(reply.as_bytes()).await;
                    let _ = tcp.shutdown().await;
                });
            }
        });
        TokenEndpoint { url, served }
    }

    fn served(&self) -> usize {
        self.served.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_renewed_on_the_same_connection() {
    // The SASL_PLAINTEXT listener grants 3 s sessions (connections.max.reauth.ms): a client
    // that did not re-authenticate would be disconnected every 3 s.
    let Some(e) = env() else { return };
    let extra = vec![
        ("security.protocol", s("SASL_PLAINTEXT")),
        ("sasl.mechanism", s("SCRAM-SHA-256")),
        ("sasl.username", s("alice")),
        ("sasl.password", s("alice-secret")),
    ];
    let producer = Producer::new(e.config("SASL_PLAINTEXT", &extra).unwrap()).unwrap();
    let topic = topic_name("reauth");
    let started = Instant::now();
    let mut sent = 0;
    while started.elapsed() < Duration::from_secs(8) {
        producer
            .send(ProducerRecord::new(&topic, format!("r{sent}")).partition(0))
            .await
            .unwrap()
            .await
            .unwrap_or_else(|err| panic!("record {sent} after {:?}: {err}", started.elapsed()));
        sent += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stats = producer.stats();
    let renewed: u64 = stats.brokers.iter().map(|b| b.reauthentications).sum();
    assert!(
        renewed >= 2,
        "{sent} records, re-authentications {renewed}: {:?}",
        stats.brokers
    );
    producer.close().await;
}
