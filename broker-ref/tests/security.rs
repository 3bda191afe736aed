//! Security against a real `odradek-broker` process on ephemeral ports: TLS (server and client
//! certificates made here with rcgen), SASL PLAIN / SCRAM-SHA-256 / SCRAM-SHA-512 / OAUTHBEARER
//! driven byte by byte, re-authentication, ACLs and SCRAM credential APIs, startup refusals, and
//! the broker's log (captured at debug level) checked for secrets. Negative cases come first in
//! each test; after each, the broker must still serve other clients.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use hmac::Mac;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Request, StrBytes};
use odradek::protocol::{decode_response, encode_request};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "odradek-sec-{tag}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---------------------------------------------------------------------------------------------
// PKI made at test time

struct Pki {
    dir: PathBuf,
}

fn leaf(
    names: &[&str],
    dn: &[(rcgen::DnType, &str)],
    issuer: &rcgen::Issuer<'_, rcgen::KeyPair>,
    expired: bool,
) -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut p =
        rcgen::CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .unwrap();
    for (t, v) in dn {
        p.distinguished_name.push(t.clone(), *v);
    }
    if expired {
        p.not_before = rcgen::date_time_ymd(2019, 1, 1);
        p.not_after = rcgen::date_time_ymd(2020, 1, 1);
    }
    let cert = p.signed_by(&key, issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

use common::test_ca as ca;

impl Pki {
    fn make() -> Pki {
        let dir = temp_dir("pki");
        let (ca_pem, issuer) = ca("odradek test CA");
        let (other_pem, other) = ca("some other CA");
        let (broker, broker_key) = leaf(
            &["127.0.0.1", "localhost"],
            &[(rcgen::DnType::CommonName, "broker")],
            &issuer,
            false,
        );
        let client_dn = [
            (rcgen::DnType::OrganizationName, "odradek"),
            (rcgen::DnType::OrganizationalUnitName, "tests"),
            (rcgen::DnType::CommonName, "client"),
        ];
        let (client, client_key) = leaf(&[], &client_dn, &issuer, false);
        let (expired, expired_key) = leaf(
            &[],
            &[(rcgen::DnType::CommonName, "expired")],
            &issuer,
            true,
        );
        let (untrusted, untrusted_key) = leaf(&[], &client_dn, &other, false);
        let w = |n: &str, t: &str| std::fs::write(dir.join(n), t).unwrap();
        w("ca.pem", &ca_pem);
        w("other-ca.pem", &other_pem);
        w(
            "broker-keystore.pem",
            &format!("{broker_key}{broker}{ca_pem}"),
        );
        w("client.pem", &client);
        w("client.key", &client_key);
        w("expired.pem", &expired);
        w("expired.key", &expired_key);
        w("untrusted.pem", &untrusted);
        w("untrusted.key", &untrusted_key);
        Pki { dir }
    }

    fn path(&self, n: &str) -> String {
        self.dir.join(n).display().to_string()
    }
}

// ---------------------------------------------------------------------------------------------
// The broker process

struct Broker {
    child: Child,
    listeners: Vec<(String, String)>,
    log: PathBuf,
}

const PLAIN_JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\" user_alice=\"alice-secret\";";
const SCRAM_JAAS: &str = "org.apache.kafka.common.security.scram.ScramLoginModule required;";
const OAUTH_JAAS: &str = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"admin\";";

fn secure_overrides(pki: &Pki) -> Vec<(String, String)> {
    let mut o: Vec<(String, String)> = vec![
        ("listeners".into(), "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,MTLS://127.0.0.1:0,SASL_SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0".into()),
        ("listener.security.protocol.map".into(), "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL,SASL_PLAINTEXT:SASL_PLAINTEXT".into()),
        ("ssl.keystore.type".into(), "PEM".into()),
        ("ssl.keystore.location".into(), pki.path("broker-keystore.pem")),
        ("ssl.truststore.type".into(), "PEM".into()),
        ("ssl.truststore.location".into(), pki.path("ca.pem")),
        ("listener.name.mtls.ssl.client.auth".into(), "required".into()),
        ("sasl.enabled.mechanisms".into(), "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER".into()),
        ("authorizer.class.name".into(), "org.apache.kafka.metadata.authorizer.StandardAuthorizer".into()),
        ("super.users".into(), "User:ANONYMOUS;User:admin".into()),
        ("allow.everyone.if.no.acl.found".into(), "true".into()),
        ("connections.max.idle.ms".into(), "1500".into()),
        ("connection.failed.authentication.delay.ms".into(), "0".into()),
        ("listener.name.sasl_plaintext.connections.max.reauth.ms".into(), "1500".into()),
    ];
    for l in ["sasl_ssl", "sasl_plaintext"] {
        o.push((
            format!("listener.name.{l}.plain.sasl.jaas.config"),
            PLAIN_JAAS.into(),
        ));
        o.push((
            format!("listener.name.{l}.scram-sha-256.sasl.jaas.config"),
            SCRAM_JAAS.into(),
        ));
        o.push((
            format!("listener.name.{l}.scram-sha-512.sasl.jaas.config"),
            SCRAM_JAAS.into(),
        ));
        o.push((
            format!("listener.name.{l}.oauthbearer.sasl.jaas.config"),
            OAUTH_JAAS.into(),
        ));
    }
    o
}

impl Broker {
    fn start(data: &Path, overrides: &[(String, String)], extra_args: &[&str]) -> Broker {
        let log = data.with_extension("log");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_odradek-broker"));
        cmd.arg("--override")
            .arg(format!("log.dirs={}", data.display()));
        for (k, v) in overrides {
            cmd.arg("--override").arg(format!("{k}={v}"));
        }
        cmd.args(extra_args);
        let mut child = cmd
            .env("ODRADEK_LOG", "debug")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut listeners = Vec::new();
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let first = line
            .trim()
            .strip_prefix("odradek-broker listening on ")
            .unwrap_or_else(|| {
                panic!(
                    "broker did not start: {line:?}\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            });
        listeners.push(("FIRST".to_string(), first.to_string()));
        let n = overrides
            .iter()
            .find(|(k, _)| k == "listeners")
            .map_or(1, |(_, v)| v.split(',').count());
        if n > 1 {
            for _ in 0..n {
                line.clear();
                out.read_line(&mut line).unwrap();
                let parts: Vec<&str> = line.split_whitespace().collect();
                // odradek-broker listener NAME PROTOCOL ADDR
                listeners.push((parts[2].to_string(), parts[4].to_string()));
            }
        }
        std::thread::spawn(move || {
            let mut sink = String::new();
            while out.read_line(&mut sink).unwrap_or(0) > 0 {
                sink.clear();
            }
        });
        Broker {
            child,
            listeners,
            log,
        }
    }

    fn addr(&self, name: &str) -> String {
        self.listeners
            .iter()
            .find(|(n, _)| n == name)
            .unwrap()
            .1
            .clone()
    }

    fn stop(mut self) -> String {
        let _ = Command::new("kill")
            .arg("-15")
            .arg(self.child.id().to_string())
            .status();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "broker exited with {status}");
        std::fs::read_to_string(&self.log).unwrap()
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// A blocking client over TCP or TLS

trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

struct Client {
    stream: Box<dyn Stream>,
    correlation: i32,
}

fn tls_config(pki: &Pki, client_cert: Option<(&str, &str)>) -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_pemfile::certs(&mut std::fs::read(pki.dir.join("ca.pem")).unwrap().as_slice()) {
        roots.add(c.unwrap()).unwrap();
    }
    let b = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    Arc::new(match client_cert {
        None => b.with_no_client_auth(),
        Some((cert, key)) => {
            let certs =
                rustls_pemfile::certs(&mut std::fs::read(pki.dir.join(cert)).unwrap().as_slice())
                    .map(|c| c.unwrap())
                    .collect();
            let key = rustls_pemfile::private_key(
                &mut std::fs::read(pki.dir.join(key)).unwrap().as_slice(),
            )
            .unwrap()
            .unwrap();
            b.with_client_auth_cert(certs, key).unwrap()
        }
    })
}

impl Client {
    fn plain(addr: &str) -> Client {
        let tcp = TcpStream::connect(addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Client {
            stream: Box::new(tcp),
            correlation: 0,
        }
    }

    fn tls(addr: &str, config: Arc<rustls::ClientConfig>) -> Client {
        let tcp = TcpStream::connect(addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let name = rustls_pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let conn = rustls::ClientConnection::new(config, name).unwrap();
        Client {
            stream: Box::new(rustls::StreamOwned::new(conn, tcp)),
            correlation: 0,
        }
    }

    fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)?;
        self.stream.flush()
    }

    fn read_frame(&mut self) -> std::io::Result<Bytes> {
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size)?;
        let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
        self.stream.read_exact(&mut body)?;
        Ok(Bytes::from(body))
    }

    fn try_call<R: Request>(&mut self, body: &R, version: i16) -> std::io::Result<R::Response> {
        self.correlation += 1;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation)
            .with_client_id(Some(sb("security-it")));
        let frame = encode_request(&header, body).unwrap();
        let mut out = (frame.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(&frame);
        self.send_raw(&out)?;
        let frame = self.read_frame()?;
        let (h, r) = decode_response::<R::Response>(frame, version).unwrap();
        assert_eq!(h.correlation_id, self.correlation);
        Ok(r)
    }

    fn call<R: Request>(&mut self, body: &R, version: i16) -> R::Response {
        self.try_call(body, version).unwrap()
    }

    /// Whether the broker closed the connection (EOF or reset) within a few seconds.
    fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.stream.read(&mut b), Ok(0) | Err(_))
    }

    fn handshake(&mut self, mechanism: &str) -> SaslHandshakeResponse {
        self.call(
            &SaslHandshakeRequest::default().with_mechanism(sb(mechanism)),
            1,
        )
    }

    fn authenticate(
        &mut self,
        token: &[u8],
        version: i16,
    ) -> std::io::Result<SaslAuthenticateResponse> {
        self.try_call(
            &SaslAuthenticateRequest::default().with_auth_bytes(Bytes::copy_from_slice(token)),
            version,
        )
    }

    fn plain_login(&mut self, user: &str, password: &str) -> SaslAuthenticateResponse {
        assert_eq!(self.handshake("PLAIN").error_code, 0);
        self.authenticate(format!("\0{user}\0{password}").as_bytes(), 2)
            .unwrap()
    }

    fn scram_login(
        &mut self,
        mechanism: &str,
        user: &str,
        password: &str,
    ) -> SaslAuthenticateResponse {
        assert_eq!(self.handshake(mechanism).error_code, 0);
        let nonce = "fyko+d2lbbFgONRv9qkxdawL";
        let first_bare = format!("n={user},r={nonce}");
        let r = self
            .authenticate(format!("n,,{first_bare}").as_bytes(), 2)
            .unwrap();
        if r.error_code != 0 {
            return r;
        }
        let server_first = String::from_utf8(r.auth_bytes.to_vec()).unwrap();
        let fields: Vec<&str> = server_first.split(',').collect();
        let full_nonce = fields[0].strip_prefix("r=").unwrap();
        let salt = B64.decode(fields[1].strip_prefix("s=").unwrap()).unwrap();
        let iters: u32 = fields[2].strip_prefix("i=").unwrap().parse().unwrap();
        let without_proof = format!("c=biws,r={full_nonce}");
        let auth = format!("{first_bare},{server_first},{without_proof}");
        let proof = scram_proof(mechanism, password, &salt, iters, &auth);
        let r = self
            .authenticate(
                format!("{without_proof},p={}", B64.encode(proof)).as_bytes(),
                2,
            )
            .unwrap();
        if r.error_code == 0 {
            assert!(r.auth_bytes.starts_with(b"v="), "server signature");
        }
        r
    }

    fn metadata(&mut self, topics: Option<&[&str]>) -> std::io::Result<MetadataResponse> {
        let req = MetadataRequest::default()
            .with_topics(topics.map(|t| {
                t.iter()
                    .map(|n| {
                        metadata_request::MetadataRequestTopic::default()
                            .with_name(Some(TopicName(sb(n))))
                    })
                    .collect()
            }))
            .with_allow_auto_topic_creation(true)
            .with_include_topic_authorized_operations(true);
        self.try_call(&req, 12)
    }
}

fn scram_proof(mechanism: &str, password: &str, salt: &[u8], iters: u32, auth: &str) -> Vec<u8> {
    macro_rules! go {
        ($h:ty, $n:expr) => {{
            let mut salted = [0u8; $n];
            pbkdf2::pbkdf2_hmac::<$h>(password.as_bytes(), salt, iters, &mut salted);
            let mac = |k: &[u8], d: &[u8]| {
                let mut m = <hmac::Hmac<$h> as Mac>::new_from_slice(k).unwrap();
                m.update(d);
                m.finalize().into_bytes().to_vec()
            };
            let client_key = mac(&salted, b"Client Key");
            use sha2::Digest;
            let stored = <$h>::digest(&client_key).to_vec();
            let sig = mac(&stored, auth.as_bytes());
            client_key.iter().zip(&sig).map(|(a, b)| a ^ b).collect()
        }};
    }
    match mechanism {
        "SCRAM-SHA-512" => go!(sha2::Sha512, 64),
        _ => go!(sha2::Sha256, 32),
    }
}

fn unsecured_jwt(sub: &str, exp_offset_s: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let enc = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    format!(
        "{}.{}.",
        enc.encode(br#"{"alg":"none"}"#),
        enc.encode(format!(
            r#"{{"sub":"{sub}","exp":{},"iat":{}}}"#,
            now + exp_offset_s,
            now - 10
        ))
    )
}

fn alive(b: &Broker) {
    let mut c = Client::plain(&b.addr("PLAINTEXT"));
    let r = c.call(&ApiVersionsRequest::default(), 3);
    assert_eq!(r.error_code, 0, "the broker still serves PLAINTEXT clients");
}

fn secure_broker(tag: &str, pki: &Pki) -> Broker {
    let data = temp_dir(tag);
    Broker::start(
        &data,
        &secure_overrides(pki),
        &[
            "--add-scram",
            "SCRAM-SHA-256=[name=alice,password=alice-secret]",
            "--add-scram",
            "SCRAM-SHA-512=[name=alice,password=alice-secret]",
        ],
    )
}

// ---------------------------------------------------------------------------------------------
// Tests

#[test]
fn tls_listeners_refuse_plaintext_untrusted_expired_and_slow_clients() {
    let pki = Pki::make();
    let b = secure_broker("tls-neg", &pki);
    // A plaintext client on a TLS port: no ApiVersions answer, the connection closes.
    let mut c = Client::plain(&b.addr("SSL"));
    assert!(
        c.try_call(&ApiVersionsRequest::default(), 3).is_err(),
        "plaintext on SSL must not be served"
    );
    alive(&b);
    // A TLS client on the plaintext port: its ClientHello is a bad frame.
    let mut c = Client::tls(&b.addr("PLAINTEXT"), tls_config(&pki, None));
    assert!(c.try_call(&ApiVersionsRequest::default(), 3).is_err());
    alive(&b);
    // mTLS: no certificate, an expired one, an untrusted one.
    for cert in [
        None,
        Some(("expired.pem", "expired.key")),
        Some(("untrusted.pem", "untrusted.key")),
    ] {
        let mut c = Client::tls(&b.addr("MTLS"), tls_config(&pki, cert));
        assert!(
            c.try_call(&ApiVersionsRequest::default(), 3).is_err(),
            "{cert:?} accepted on MTLS"
        );
        alive(&b);
    }
    // A client that never finishes its handshake is closed after the deadline
    // (connections.max.idle.ms = 1.5 s here).
    let started = Instant::now();
    let mut tcp = TcpStream::connect(b.addr("SSL")).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
    let mut buf = [0u8; 8];
    assert_eq!(tcp.read(&mut buf).unwrap_or(0), 0);
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "closed after {:?}",
        started.elapsed()
    );
    // The broker still serves TLS clients.
    let mut ok = Client::tls(&b.addr("SSL"), tls_config(&pki, None));
    assert_eq!(ok.call(&ApiVersionsRequest::default(), 3).error_code, 0);
    let mut ok = Client::tls(
        &b.addr("MTLS"),
        tls_config(&pki, Some(("client.pem", "client.key"))),
    );
    assert_eq!(ok.call(&ApiVersionsRequest::default(), 3).error_code, 0);
    let log = b.stop();
    assert!(log.contains("TLS handshake failed"), "{log}");
    assert!(log.contains("TLS handshake not finished in time"), "{log}");
}

#[test]
fn certificate_subject_is_the_principal_the_authorizer_sees() {
    let pki = Pki::make();
    let b = secure_broker("tls-principal", &pki);
    let mut admin = Client::plain(&b.addr("PLAINTEXT"));
    assert_eq!(
        admin
            .metadata(Some(&["visible", "hidden"]))
            .unwrap()
            .topics
            .len(),
        2
    );
    let acl = create_acls_request::AclCreation::default()
        .with_resource_type(2)
        .with_resource_name(sb("hidden"))
        .with_resource_pattern_type(3)
        .with_principal(sb("User:CN=client,OU=tests,O=odradek"))
        .with_host(sb("*"))
        .with_operation(8)
        .with_permission_type(2);
    let r = admin.call(&CreateAclsRequest::default().with_creations(vec![acl]), 3);
    assert_eq!(
        r.results[0].error_code, 0,
        "{:?}",
        r.results[0].error_message
    );
    let mut c = Client::tls(
        &b.addr("MTLS"),
        tls_config(&pki, Some(("client.pem", "client.key"))),
    );
    let all = c.metadata(None).unwrap();
    let names: Vec<String> = all
        .topics
        .iter()
        .filter_map(|t| t.name.as_ref().map(|n| n.to_string()))
        .collect();
    assert!(
        names.contains(&"visible".to_string()) && !names.contains(&"hidden".to_string()),
        "{names:?}"
    );
    let named = c.metadata(Some(&["hidden", "visible"])).unwrap();
    let hidden = named
        .topics
        .iter()
        .find(|t| t.name.as_ref().map(|n| n.as_str()) == Some("hidden"))
        .unwrap();
    assert_eq!(hidden.error_code, 29, "TOPIC_AUTHORIZATION_FAILED");
    assert!(hidden.topic_id.is_nil() && hidden.partitions.is_empty());
    let visible = named
        .topics
        .iter()
        .find(|t| t.name.as_ref().map(|n| n.as_str()) == Some("visible"))
        .unwrap();
    assert_eq!(
        visible.topic_authorized_operations, 0xDF8,
        "no ACL on the topic: everything (allow.everyone.if.no.acl.found)"
    );
    // Over SSL without a certificate the client is User:ANONYMOUS, a super user.
    let mut anon = Client::tls(&b.addr("SSL"), tls_config(&pki, None));
    assert_eq!(
        anon.metadata(Some(&["hidden"])).unwrap().topics[0].error_code,
        0
    );
    b.stop();
}

#[test]
fn sasl_state_machine_refuses_what_kafka_refuses() {
    let pki = Pki::make();
    let b = secure_broker("sasl-neg", &pki);
    let addr = b.addr("SASL_PLAINTEXT");
    // Anything but ApiVersions / SaslHandshake before authentication closes the connection.
    let mut c = Client::plain(&addr);
    assert_eq!(c.call(&ApiVersionsRequest::default(), 3).error_code, 0);
    assert!(
        c.metadata(None).is_err(),
        "Metadata before authentication must close the connection"
    );
    // GSSAPI (and any mechanism not enabled): UNSUPPORTED_SASL_MECHANISM with the enabled list, then closed.
    let mut c = Client::plain(&addr);
    let r = c.handshake("GSSAPI");
    assert_eq!(r.error_code, 33);
    let mechs: Vec<String> = r.mechanisms.iter().map(|m| m.to_string()).collect();
    assert_eq!(
        mechs,
        ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
    );
    assert!(c.closed());
    // Wrong password and unknown user, PLAIN: Kafka's message, then closed.
    for (user, pw) in [("alice", "wrong-password-1"), ("mallory", "mallory-pw-2")] {
        let mut c = Client::plain(&addr);
        let r = c.plain_login(user, pw);
        assert_eq!(r.error_code, 58);
        assert_eq!(
            r.error_message.as_deref(),
            Some("Authentication failed: Invalid username or password")
        );
        assert!(c.closed());
    }
    // SCRAM: the generic message (nothing about the user leaks).
    for (user, pw) in [("alice", "wrong-password-3"), ("nobody", "x")] {
        let mut c = Client::plain(&addr);
        let r = c.scram_login("SCRAM-SHA-256", user, pw);
        assert_eq!(r.error_code, 58);
        assert_eq!(
            r.error_message.as_deref(),
            Some("Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")
        );
        assert!(c.closed());
    }
    // OAUTHBEARER with an expired token: the RFC 7628 error JSON, then failure.
    let mut c = Client::plain(&addr);
    assert_eq!(c.handshake("OAUTHBEARER").error_code, 0);
    let msg = format!("n,,\x01auth=Bearer {}\x01\x01", unsecured_jwt("alice", -60));
    let r = c.authenticate(msg.as_bytes(), 2).unwrap();
    assert_eq!(r.error_code, 0);
    assert_eq!(&r.auth_bytes[..], br#"{"status":"invalid_token"}"#);
    let r = c.authenticate(b"\x01", 2).unwrap();
    assert_eq!(r.error_code, 58);
    assert!(c.closed());
    // Another request in the middle of an exchange: answered ILLEGAL_SASL_STATE, then closed.
    let mut c = Client::plain(&addr);
    assert_eq!(c.handshake("PLAIN").error_code, 0);
    let r = c.metadata(Some(&["t"])).unwrap();
    assert_eq!(r.topics[0].error_code, 34, "ILLEGAL_SASL_STATE");
    assert!(c.closed());
    // SaslAuthenticate before SaslHandshake: closed.
    let mut c = Client::plain(&addr);
    assert!(c.authenticate(b"\0alice\0alice-secret", 2).is_err());
    // A frame larger than sasl.server.max.receive.size before authentication: closed without
    // the broker reading (or allocating) the body.
    let mut c = Client::plain(&addr);
    c.send_raw(&(600_000u32).to_be_bytes()).unwrap();
    assert!(c.closed());
    alive(&b);
    // Well-behaved clients are still served.
    let mut ok = Client::plain(&addr);
    assert_eq!(ok.plain_login("alice", "alice-secret").error_code, 0);
    assert_eq!(ok.metadata(None).unwrap().brokers.len(), 1);
    let log = b.stop();
    for secret in [
        "alice-secret",
        "wrong-password-1",
        "mallory-pw-2",
        "wrong-password-3",
        "admin-secret",
        "BEGIN PRIVATE KEY",
        "eyJ",
    ] {
        assert!(!log.contains(secret), "the broker log contains {secret:?}");
    }
    assert!(log.contains("SASL authentication failed"), "{log}");
}

#[test]
fn every_mechanism_authenticates_over_tls_and_plaintext() {
    let pki = Pki::make();
    let b = secure_broker("sasl-pos", &pki);
    for listener in ["SASL_SSL", "SASL_PLAINTEXT"] {
        let connect = || {
            if listener == "SASL_SSL" {
                Client::tls(&b.addr(listener), tls_config(&pki, None))
            } else {
                Client::plain(&b.addr(listener))
            }
        };
        let mut c = connect();
        assert_eq!(c.plain_login("alice", "alice-secret").error_code, 0);
        assert!(c.metadata(None).is_ok());
        for m in ["SCRAM-SHA-256", "SCRAM-SHA-512"] {
            let mut c = connect();
            let r = c.scram_login(m, "alice", "alice-secret");
            assert_eq!(r.error_code, 0, "{m}: {:?}", r.error_message);
            assert!(c.metadata(None).is_ok());
        }
        let mut c = connect();
        assert_eq!(c.handshake("OAUTHBEARER").error_code, 0);
        let msg = format!(
            "n,,\x01auth=Bearer {}\x01\x01",
            unsecured_jwt("alice", 3600)
        );
        let r = c.authenticate(msg.as_bytes(), 2).unwrap();
        assert_eq!(r.error_code, 0, "{:?}", r.error_message);
        assert!(
            r.session_lifetime_ms > 0,
            "a token's expiry bounds the session"
        );
        assert!(c.metadata(None).is_ok());
    }
    // SaslHandshake v0: raw tokens, no SaslAuthenticate headers.
    let mut c = Client::plain(&b.addr("SASL_PLAINTEXT"));
    assert_eq!(
        c.call(
            &SaslHandshakeRequest::default().with_mechanism(sb("PLAIN")),
            0
        )
        .error_code,
        0
    );
    let token = b"\0alice\0alice-secret";
    let mut raw = (token.len() as u32).to_be_bytes().to_vec();
    raw.extend_from_slice(token);
    c.send_raw(&raw).unwrap();
    assert_eq!(c.read_frame().unwrap().len(), 0, "empty final token");
    assert!(c.metadata(None).is_ok());
    b.stop();
}

#[test]
fn sessions_expire_and_reauthentication_keeps_the_principal() {
    let pki = Pki::make();
    let b = secure_broker("reauth", &pki);
    let addr = b.addr("SASL_PLAINTEXT");
    let mut c = Client::plain(&addr);
    let r = c.plain_login("alice", "alice-secret");
    assert_eq!(r.session_lifetime_ms, 1500, "connections.max.reauth.ms");
    assert!(c.metadata(None).is_ok());
    // Re-authenticate on the live connection before expiry, then keep working past the first
    // session's end.
    std::thread::sleep(Duration::from_millis(1000));
    let r = c.scram_login("SCRAM-SHA-256", "alice", "alice-secret");
    assert!(
        r.error_code != 0,
        "re-authentication must keep the mechanism"
    );
    let mut c = Client::plain(&addr);
    assert_eq!(c.plain_login("alice", "alice-secret").error_code, 0);
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(
        c.plain_login("alice", "alice-secret").error_code,
        0,
        "re-authenticated"
    );
    std::thread::sleep(Duration::from_millis(1000));
    assert!(c.metadata(None).is_ok(), "the new session runs");
    // A re-authentication long after the connection's first handshake deadline (1.5 s here)
    // has a deadline of its own.
    let mut c = Client::plain(&addr);
    assert_eq!(c.plain_login("alice", "alice-secret").error_code, 0);
    for round in 0..3 {
        std::thread::sleep(Duration::from_millis(1200));
        // A client that takes its time between the two requests.
        assert_eq!(c.handshake("PLAIN").error_code, 0);
        std::thread::sleep(Duration::from_millis(200));
        let r = c.authenticate(b"\0alice\0alice-secret", 2).unwrap();
        assert_eq!(r.error_code, 0, "re-authentication {round}");
        assert!(c.metadata(None).is_ok(), "re-authentication {round}");
    }
    // Re-authenticating as somebody else fails.
    let r = c.plain_login("admin", "admin-secret");
    assert_eq!(r.error_code, 58);
    assert!(r
        .error_message
        .unwrap()
        .contains("Cannot change principals during re-authentication"));
    // A session that expired without re-authentication is closed at its next request.
    let mut c = Client::plain(&addr);
    assert_eq!(c.plain_login("alice", "alice-secret").error_code, 0);
    std::thread::sleep(Duration::from_millis(1800));
    assert!(
        c.metadata(None).is_err(),
        "an expired session must be closed"
    );
    alive(&b);
    b.stop();
}

fn acl(
    rt: i8,
    name: &str,
    pattern: i8,
    principal: &str,
    op: i8,
    perm: i8,
) -> create_acls_request::AclCreation {
    create_acls_request::AclCreation::default()
        .with_resource_type(rt)
        .with_resource_name(sb(name))
        .with_resource_pattern_type(pattern)
        .with_principal(sb(principal))
        .with_host(sb("*"))
        .with_operation(op)
        .with_permission_type(perm)
}

fn produce(c: &mut Client, topic: &str) -> i16 {
    let mut builder = odradek::records::BatchBuilder::new(odradek::records::Compression::None);
    builder.append(0, None, Some(&b"v"[..]), &[]).unwrap();
    let batch = builder.build().unwrap();
    let req = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![produce_request::TopicProduceData::default()
            .with_name(TopicName(sb(topic)))
            .with_partition_data(vec![
                produce_request::PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(batch)),
            ])]);
    let r = c.call(&req, 9);
    r.responses
        .iter()
        .find(|t| t.name.as_str() == topic)
        .unwrap()
        .partition_responses[0]
        .error_code
}

/// Creates the internal topic of a coordinator type (0 = groups, 1 = transactions).
fn find_coordinator(c: &mut Client, key_type: i8) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = c.call(
            &FindCoordinatorRequest::default()
                .with_key(sb("k"))
                .with_key_type(key_type),
            3,
        );
        if r.error_code == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "FindCoordinator: {}",
            r.error_code
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn acls_are_enforced_managed_and_durable() {
    let pki = Pki::make();
    let data = temp_dir("acls");
    let overrides = secure_overrides(&pki);
    let b = Broker::start(&data, &overrides, &[]);
    let mut admin = Client::plain(&b.addr("PLAINTEXT"));
    admin
        .metadata(Some(&["orders", "pfx-ok", "pfx-secret"]))
        .unwrap();
    // Validation first.
    let bad = admin.call(
        &CreateAclsRequest::default().with_creations(vec![
            acl(1, "x", 3, "User:a", 3, 3),
            acl(4, "not-the-cluster", 3, "User:a", 3, 3),
            acl(2, "", 3, "User:a", 3, 3),
            acl(2, "x", 2, "User:a", 3, 3),
            acl(2, "x", 3, "nobody", 3, 3),
        ]),
        3,
    );
    assert!(
        bad.results.iter().all(|r| r.error_code == 42),
        "INVALID_REQUEST: {:?}",
        bad.results
    );
    let r = admin.call(
        &CreateAclsRequest::default().with_creations(vec![
            acl(2, "orders", 3, "User:alice", 4, 2), // DENY WRITE orders
            acl(2, "pfx-", 4, "User:alice", 2, 3),   // ALLOW ALL pfx-*
            acl(2, "pfx-secret", 3, "User:alice", 4, 2), // DENY WRITE pfx-secret
            acl(3, "g", 3, "User:alice", 3, 2),      // DENY READ group g
            acl(4, "kafka-cluster", 3, "User:alice", 5, 2), // DENY CREATE cluster
            acl(2, "new-", 4, "User:alice", 5, 2),   // DENY CREATE new-*
        ]),
        3,
    );
    assert!(
        r.results.iter().all(|r| r.error_code == 0),
        "{:?}",
        r.results
    );
    let mut alice = Client::plain(&b.addr("SASL_PLAINTEXT"));
    assert_eq!(alice.plain_login("alice", "alice-secret").error_code, 0);
    assert_eq!(
        produce(&mut alice, "orders"),
        29,
        "TOPIC_AUTHORIZATION_FAILED"
    );
    assert_eq!(produce(&mut alice, "pfx-ok"), 0);
    assert_eq!(
        produce(&mut alice, "pfx-secret"),
        29,
        "literal DENY beats prefixed ALLOW"
    );
    find_coordinator(&mut admin, 0);
    assert_eq!(
        produce(&mut admin, "__consumer_offsets"),
        17,
        "INVALID_TOPIC_EXCEPTION, even for a super user"
    );
    let join = alice.call(
        &JoinGroupRequest::default()
            .with_group_id(GroupId(sb("g")))
            .with_session_timeout_ms(10000)
            .with_rebalance_timeout_ms(10000)
            .with_protocol_type(sb("consumer")),
        5,
    );
    assert_eq!(join.error_code, 30, "GROUP_AUTHORIZATION_FAILED");
    let create = alice.call(
        &CreateTopicsRequest::default().with_topics(vec![
            create_topics_request::CreatableTopic::default()
                .with_name(TopicName(sb("new-topic")))
                .with_num_partitions(1)
                .with_replication_factor(1),
        ]),
        5,
    );
    assert_eq!(
        create.topics[0].error_code, 29,
        "no CREATE on the cluster or topic"
    );
    let describe = alice.call(
        &DescribeAclsRequest::default()
            .with_resource_type_filter(1)
            .with_pattern_type_filter(1)
            .with_operation(1)
            .with_permission_type(1),
        3,
    );
    assert_eq!(
        describe.error_code, 31,
        "CLUSTER_AUTHORIZATION_FAILED: the cluster has ACLs, none lets alice DESCRIBE it"
    );
    // Transaction markers are the brokers' (CLUSTER_ACTION): a client cannot end anyone's
    // transaction with them.
    let markers = alice.call(
        &WriteTxnMarkersRequest::default().with_markers(vec![
            write_txn_markers_request::WritableTxnMarker::default()
                .with_producer_id(ProducerId(1))
                .with_transaction_result(false)
                .with_topics(vec![
                    write_txn_markers_request::WritableTxnMarkerTopic::default()
                        .with_name(TopicName(sb("orders")))
                        .with_partition_indexes(vec![0]),
                ]),
        ]),
        1,
    );
    assert_eq!(
        markers.markers[0].topics[0].partitions[0].error_code, 31,
        "CLUSTER_AUTHORIZATION_FAILED for WriteTxnMarkers without CLUSTER_ACTION"
    );
    // DescribeTopicPartitions: a named topic alice may not DESCRIBE is answered
    // TOPIC_AUTHORIZATION_FAILED after the others, without its id; asked for every topic, it
    // is left out.
    let dtp = |c: &mut Client, names: &[&str]| {
        c.call(
            &DescribeTopicPartitionsRequest::default()
                .with_topics(
                    names
                        .iter()
                        .map(|n| {
                            describe_topic_partitions_request::TopicRequest::default()
                                .with_name(TopicName(sb(n)))
                        })
                        .collect(),
                )
                .with_response_partition_limit(100),
            0,
        )
    };
    let named = dtp(&mut alice, &["orders", "pfx-ok"]);
    let summary: Vec<(String, i16, bool, usize)> = named
        .topics
        .iter()
        .map(|t| {
            (
                t.name.as_deref().map_or(String::new(), |n| n.to_string()),
                t.error_code,
                t.topic_id.is_nil(),
                t.partitions.len(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("pfx-ok".to_string(), 0, false, 1),
            ("orders".to_string(), 29, true, 0)
        ]
    );
    let all = dtp(&mut alice, &[]);
    let listed: Vec<String> = all
        .topics
        .iter()
        .filter_map(|t| t.name.as_deref().map(|n| n.to_string()))
        .collect();
    assert!(
        listed.contains(&"pfx-ok".to_string()) && !listed.contains(&"orders".to_string()),
        "{listed:?}"
    );
    let cluster = alice.call(
        &DescribeClusterRequest::default().with_include_cluster_authorized_operations(true),
        1,
    );
    assert_eq!(
        cluster.cluster_authorized_operations, 0,
        "no DESCRIBE on the cluster"
    );
    let cluster = admin.call(
        &DescribeClusterRequest::default().with_include_cluster_authorized_operations(true),
        1,
    );
    assert_eq!(cluster.cluster_authorized_operations, 0x1FA0);
    // DescribeAcls with a MATCH filter finds the literal and the prefixed ACL for pfx-secret.
    let m = admin.call(
        &DescribeAclsRequest::default()
            .with_resource_type_filter(2)
            .with_resource_name_filter(Some(sb("pfx-secret")))
            .with_pattern_type_filter(2)
            .with_principal_filter(None)
            .with_host_filter(None)
            .with_operation(1)
            .with_permission_type(1),
        3,
    );
    assert_eq!(m.error_code, 0);
    assert_eq!(m.resources.len(), 2, "{:?}", m.resources);
    b.stop();
    // Durable: after a restart alice is still denied, then DeleteAcls lifts it.
    let b = Broker::start(&data, &overrides, &[]);
    let mut admin = Client::plain(&b.addr("PLAINTEXT"));
    let mut alice = Client::plain(&b.addr("SASL_PLAINTEXT"));
    assert_eq!(alice.plain_login("alice", "alice-secret").error_code, 0);
    assert_eq!(produce(&mut alice, "orders"), 29);
    let del = admin.call(
        &DeleteAclsRequest::default().with_filters(vec![
            delete_acls_request::DeleteAclsFilter::default()
                .with_resource_type_filter(2)
                .with_resource_name_filter(Some(sb("orders")))
                .with_pattern_type_filter(3)
                .with_principal_filter(None)
                .with_host_filter(None)
                .with_operation(1)
                .with_permission_type(1),
        ]),
        3,
    );
    assert_eq!(del.filter_results[0].matching_acls.len(), 1);
    assert_eq!(produce(&mut alice, "orders"), 0);
    b.stop();
}

#[test]
fn scram_credentials_are_managed_like_kafka() {
    let pki = Pki::make();
    let data = temp_dir("scram");
    let overrides = secure_overrides(&pki);
    let b = Broker::start(&data, &overrides, &[]);
    let salt = b"0123456789abcdef".to_vec();
    let salted = |pw: &str, i: u32| {
        let mut out = [0u8; 32];
        pbkdf2::pbkdf2_hmac::<sha2::Sha256>(pw.as_bytes(), &salt, i, &mut out);
        Bytes::copy_from_slice(&out)
    };
    let up = |name: &str, mech: i8, iters: i32| {
        alter_user_scram_credentials_request::ScramCredentialUpsertion::default()
            .with_name(sb(name))
            .with_mechanism(mech)
            .with_iterations(iters)
            .with_salt(Bytes::from(salt.clone()))
            .with_salted_password(salted("bob-secret", iters.max(1) as u32))
    };
    // Salting is slow in a debug build: both requests are made before connecting, so the
    // connection never idles past connections.max.idle.ms (1.5 s here) on a busy machine.
    let refused = AlterUserScramCredentialsRequest::default()
        .with_upsertions(vec![
            up("few", 1, 100),
            up("many", 1, 20000),
            up("mech", 9, 4096),
            up("dup", 1, 4096),
            up("dup", 2, 4096),
            up("", 1, 4096),
        ])
        .with_deletions(vec![
            alter_user_scram_credentials_request::ScramCredentialDeletion::default()
                .with_name(sb("ghost"))
                .with_mechanism(1),
        ]);
    let bob_credential =
        AlterUserScramCredentialsRequest::default().with_upsertions(vec![up("bob", 1, 8192)]);
    let eve_credential =
        AlterUserScramCredentialsRequest::default().with_upsertions(vec![up("eve", 1, 4096)]);
    let mut admin = Client::plain(&b.addr("PLAINTEXT"));
    let r = admin.call(&refused, 0);
    let code = |u: &str| {
        r.results
            .iter()
            .find(|x| x.user.as_str() == u)
            .unwrap()
            .error_code
    };
    assert_eq!(code("few"), 93, "UNACCEPTABLE_CREDENTIAL");
    assert_eq!(code("many"), 93);
    assert_eq!(code("mech"), 33, "UNSUPPORTED_SASL_MECHANISM");
    assert_eq!(code("dup"), 92, "DUPLICATE_RESOURCE");
    assert_eq!(code(""), 93);
    assert_eq!(code("ghost"), 91, "RESOURCE_NOT_FOUND");
    let r = admin.call(&bob_credential, 0);
    assert_eq!(r.results[0].error_code, 0);
    let mut bob = Client::plain(&b.addr("SASL_PLAINTEXT"));
    assert_eq!(
        bob.scram_login("SCRAM-SHA-256", "bob", "bob-secret")
            .error_code,
        0
    );
    b.stop();
    let b = Broker::start(&data, &overrides, &[]);
    let mut admin = Client::plain(&b.addr("PLAINTEXT"));
    let d = admin.call(
        &DescribeUserScramCredentialsRequest::default().with_users(Some(vec![
            describe_user_scram_credentials_request::UserName::default().with_name(sb("bob")),
            describe_user_scram_credentials_request::UserName::default().with_name(sb("nobody")),
        ])),
        0,
    );
    assert_eq!(d.results[0].credential_infos[0].mechanism, 1);
    assert_eq!(d.results[0].credential_infos[0].iterations, 8192);
    assert_eq!(d.results[1].error_code, 91);
    let mut bob = Client::plain(&b.addr("SASL_PLAINTEXT"));
    assert_eq!(
        bob.scram_login("SCRAM-SHA-256", "bob", "bob-secret")
            .error_code,
        0,
        "credentials survive a restart"
    );
    let mut alice = Client::plain(&b.addr("SASL_PLAINTEXT"));
    assert_eq!(alice.plain_login("alice", "alice-secret").error_code, 0);
    let r = admin.call(&eve_credential, 0);
    assert_eq!(r.results[0].error_code, 0, "ANONYMOUS is a super user");
    let r = alice.call(&DescribeUserScramCredentialsRequest::default(), 0);
    assert_eq!(
        r.error_code, 0,
        "no ACL on the cluster: allow.everyone.if.no.acl.found"
    );
    let file = std::fs::read_to_string(data.join("security-scram-credentials.json")).unwrap();
    assert!(!file.contains("bob-secret") && !file.contains("alice-secret"));
    let log = b.stop();
    assert!(!log.contains("bob-secret") && !log.contains("alice-secret"));
}

#[test]
fn without_an_authorizer_the_broker_answers_as_kafka_does() {
    let data = temp_dir("noauth");
    let b = Broker::start(
        &data,
        &[("listeners".into(), "PLAINTEXT://127.0.0.1:0".into())],
        &[],
    );
    let mut c = Client::plain(&b.addr("FIRST"));
    let d = c.call(
        &DescribeAclsRequest::default()
            .with_resource_type_filter(1)
            .with_pattern_type_filter(1)
            .with_operation(1)
            .with_permission_type(1),
        3,
    );
    assert_eq!(d.error_code, 54, "SECURITY_DISABLED");
    let r = c.call(
        &CreateAclsRequest::default().with_creations(vec![acl(2, "t", 3, "User:a", 3, 3)]),
        3,
    );
    assert_eq!(r.results[0].error_code, 54);
    let cluster = c.call(
        &DescribeClusterRequest::default().with_include_cluster_authorized_operations(true),
        1,
    );
    assert_eq!(cluster.cluster_authorized_operations, 0x1FA0);
    let m = c.metadata(Some(&["t"])).unwrap();
    assert_eq!(m.topics[0].topic_authorized_operations, 0xDF8);
    let h = c.call(
        &SaslHandshakeRequest::default().with_mechanism(sb("PLAIN")),
        1,
    );
    assert_eq!(
        h.error_code, 34,
        "ILLEGAL_SASL_STATE on a PLAINTEXT listener"
    );
    find_coordinator(&mut c, 1);
    assert_eq!(produce(&mut c, "__transaction_state"), 17);
    b.stop();
}

#[test]
fn misconfigured_security_fails_at_startup_naming_the_problem() {
    let pki = Pki::make();
    let base = secure_overrides(&pki);
    let cases: Vec<(Vec<(&str, String)>, &str)> = vec![
        (vec![("sasl.enabled.mechanisms", "GSSAPI".into())], "GSSAPI (Kerberos) is not supported"),
        (vec![("listeners", "PLAINTEXT://127.0.0.1:0,SECRET://127.0.0.1:0".into())], "no security protocol defined for listener SECRET"),
        (vec![("ssl.keystore.location", String::new())], "ssl.keystore.location"),
        (vec![("ssl.keystore.type", "JKS".into())], "set ssl.keystore.type=PEM"),
        (vec![("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer".into())], "not supported in KRaft mode"),
        (vec![("ssl.enabled.protocols", "TLSv1.1".into())], "TLSv1.1 is not supported"),
        (vec![("ssl.cipher.suites", "TLS_RSA_WITH_RC4_128_SHA".into())], "TLS_RSA_WITH_RC4_128_SHA is not supported"),
        (vec![("listener.name.sasl_ssl.plain.sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required user_a=\"unterminated;".into())], "unterminated"),
        (vec![("listener.name.mtls.ssl.client.auth", "sometimes".into())], "ssl.client.auth"),
        (vec![("listeners", "PLAINTEXT://0.0.0.0:0".into())], "never advertises a wildcard"),
        (vec![("listener.name.plaintext.bogus.key", "1".into())], "listener.name.plaintext.bogus.key"),
        (
            vec![(
                "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class",
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler".into(),
            )],
            "needs sasl.oauthbearer.jwks.endpoint.url",
        ),
    ];
    for (changes, expected) in cases {
        let mut o: Vec<(String, String)> = base.clone();
        for (k, v) in &changes {
            o.retain(|(ok, _)| ok != k);
            if !v.is_empty() {
                o.push((k.to_string(), v.clone()));
            }
        }
        if changes.iter().any(|(k, _)| *k == "listeners") {
            o.retain(|(k, _)| k != "listener.security.protocol.map");
            o.retain(|(k, _)| {
                !k.starts_with("listener.name.sasl") && !k.starts_with("listener.name.mtls")
            });
        }
        let data = temp_dir("startup");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_odradek-broker"));
        cmd.arg("--override")
            .arg(format!("log.dirs={}", data.display()));
        for (k, v) in &o {
            cmd.arg("--override").arg(format!("{k}={v}"));
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{changes:?} started");
        assert!(stderr.contains(expected), "{changes:?}: {stderr}");
        assert!(
            !stderr.contains("admin-secret") && !stderr.contains("alice-secret"),
            "{stderr}"
        );
    }
    // In cluster mode a node's local SCRAM file is not read: --add-scram is refused, naming
    // the way that works, and the password is not echoed.
    let data = temp_dir("startup-cluster");
    let out = Command::new(env!("CARGO_BIN_EXE_odradek-broker"))
        .arg("--override")
        .arg(format!("log.dirs={}", data.display()))
        .args([
            "--override",
            "node.id=1",
            "--override",
            "process.roles=broker,controller",
        ])
        .args(["--override", "controller.quorum.voters=1@127.0.0.1:1"])
        .args([
            "--add-scram",
            "SCRAM-SHA-256=[name=alice,password=alice-secret]",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot be used in cluster mode"),
        "{stderr}"
    );
    assert!(!stderr.contains("alice-secret"), "{stderr}");
}

#[test]
fn dev_security_starts_a_secured_broker_and_prints_client_settings() {
    let dir = temp_dir("dev");
    let data = temp_dir("dev-data");
    let mut child = Command::new(env!("CARGO_BIN_EXE_odradek-broker"))
        .arg("--dev-security")
        .arg(&dir)
        .arg("--override")
        .arg(format!("log.dirs={}", data.display()))
        .arg("--override")
        .arg("listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut text = String::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !text.contains("ssl.ca.location") || text.matches("ssl.ca.location").count() < 2 {
        assert!(Instant::now() < deadline, "{text}");
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        text.push_str(&line);
    }
    let _ = child.kill();
    let _ = child.wait();
    let password = std::fs::read_to_string(dir.join("dev-password.txt")).unwrap();
    assert!(
        text.contains("security.protocol=SASL_SSL") && text.contains(password.trim()),
        "{text}"
    );
    assert!(
        text.contains("sasl.mechanism=SCRAM-SHA-512") && text.contains("ssl.certificate.location"),
        "{text}"
    );
    let sasl = text
        .lines()
        .find(|l| l.contains("listener SASL_SSL"))
        .unwrap()
        .split_whitespace()
        .last()
        .unwrap()
        .to_string();
    let pki = Pki { dir: dir.clone() };
    let _ = pki;
    assert!(sasl.starts_with("127.0.0.1:"));
}

/// A JWKS endpoint: serves whatever `body` holds, counts requests.
fn jwks_server(
    body: Arc<std::sync::Mutex<String>>,
    hits: Arc<std::sync::atomic::AtomicUsize>,
) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            hits.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let b = body.lock().unwrap().clone();
            let _ = write!(s, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}", b.len());
        }
    });
    format!("http://{addr}/jwks")
}

fn es256_jwk(key: &rcgen::KeyPair, kid: &str) -> String {
    let raw = key.public_key_raw();
    let enc = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    format!(
        r#"{{"kty":"EC","crv":"P-256","kid":"{kid}","use":"sig","alg":"ES256","x":"{}","y":"{}"}}"#,
        enc.encode(&raw[1..33]),
        enc.encode(&raw[33..65])
    )
}

fn signed(key: &rcgen::KeyPair, kid: &str, claims: serde_json::Value) -> String {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    header.kid = Some(kid.to_string());
    let k = jsonwebtoken::EncodingKey::from_ec_der(&key.serialize_der());
    jsonwebtoken::encode(&header, &claims, &k).unwrap()
}

fn oauth_login(addr: &str, token: &str) -> SaslAuthenticateResponse {
    let mut c = Client::plain(addr);
    assert_eq!(c.handshake("OAUTHBEARER").error_code, 0);
    let r = c
        .authenticate(format!("n,,\x01auth=Bearer {token}\x01\x01").as_bytes(), 2)
        .unwrap();
    if r.error_code == 0 && r.auth_bytes.is_empty() {
        assert!(c.metadata(None).is_ok());
        return r;
    }
    if r.error_code == 0 {
        // The RFC 7628 error JSON: acknowledge it and read the failure.
        return c.authenticate(b"\x01", 2).unwrap();
    }
    r
}

#[test]
fn oauthbearer_tokens_are_checked_against_a_jwks_endpoint() {
    let key1 = rcgen::KeyPair::generate().unwrap();
    let key2 = rcgen::KeyPair::generate().unwrap();
    let body = Arc::new(std::sync::Mutex::new(format!(
        r#"{{"keys":[{}]}}"#,
        es256_jwk(&key1, "k1")
    )));
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let url = jwks_server(body.clone(), hits.clone());
    let overrides: Vec<(String, String)> = vec![
        (
            "listeners".into(),
            "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0".into(),
        ),
        ("sasl.enabled.mechanisms".into(), "OAUTHBEARER".into()),
        (
            "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config".into(),
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;".into(),
        ),
        (
            "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class".into(),
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
                .into(),
        ),
        ("sasl.oauthbearer.jwks.endpoint.url".into(), url),
        (
            "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms".into(),
            "0".into(),
        ),
        (
            "sasl.oauthbearer.expected.issuer".into(),
            "https://issuer.test".into(),
        ),
        ("sasl.oauthbearer.expected.audience".into(), "kafka".into()),
        ("sasl.oauthbearer.sub.claim.name".into(), "client_id".into()),
        ("sasl.oauthbearer.clock.skew.seconds".into(), "0".into()),
        (
            "connection.failed.authentication.delay.ms".into(),
            "0".into(),
        ),
    ];
    let b = Broker::start(&temp_dir("jwks"), &overrides, &[]);
    let addr = b.addr("SASL_PLAINTEXT");
    assert!(
        hits.load(std::sync::atomic::Ordering::SeqCst) >= 1,
        "fetched at startup"
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let claims = |iss: &str, aud: &str, exp: i64| serde_json::json!({"iss": iss, "aud": aud, "exp": exp, "iat": now, "client_id": "alice", "sub": "ignored"});
    // Negative cases first: each gets the invalid_token JSON, then SASL_AUTHENTICATION_FAILED.
    let cases = [
        (
            "wrong issuer",
            signed(&key1, "k1", claims("https://other", "kafka", now + 600)),
        ),
        (
            "wrong audience",
            signed(
                &key1,
                "k1",
                claims("https://issuer.test", "other", now + 600),
            ),
        ),
        (
            "expired",
            signed(
                &key1,
                "k1",
                claims("https://issuer.test", "kafka", now - 60),
            ),
        ),
        (
            "unknown key",
            signed(
                &key2,
                "k2",
                claims("https://issuer.test", "kafka", now + 600),
            ),
        ),
        ("unsigned", unsecured_jwt("alice", 600)),
        (
            "wrong signature",
            signed(
                &key2,
                "k1",
                claims("https://issuer.test", "kafka", now + 600),
            ),
        ),
    ];
    for (what, token) in &cases {
        let r = oauth_login(&addr, token);
        assert_eq!(r.error_code, 58, "{what}");
        assert_eq!(
            r.error_message.as_deref(),
            Some(r#"{"status":"invalid_token"}"#),
            "{what}"
        );
    }
    let r = oauth_login(
        &addr,
        &signed(
            &key1,
            "k1",
            claims("https://issuer.test", "kafka", now + 600),
        ),
    );
    assert_eq!(r.error_code, 0);
    assert!(
        r.session_lifetime_ms > 500_000 && r.session_lifetime_ms <= 600_000,
        "{}",
        r.session_lifetime_ms
    );
    // A rotated key: the first token with its id fetches the key set again.
    *body.lock().unwrap() = format!(
        r#"{{"keys":[{},{}]}}"#,
        es256_jwk(&key1, "k1"),
        es256_jwk(&key2, "k2")
    );
    let before = hits.load(std::sync::atomic::Ordering::SeqCst);
    let r = oauth_login(
        &addr,
        &signed(
            &key2,
            "k2",
            claims("https://issuer.test", "kafka", now + 600),
        ),
    );
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    assert!(hits.load(std::sync::atomic::Ordering::SeqCst) > before);
    let log = b.stop();
    assert!(!log.contains("eyJ"), "no token in the log");
    assert!(log.contains("JWKS loaded"), "{log}");
}
