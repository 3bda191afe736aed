//! Establishing a connection to a broker: TCP (every address the name resolves to, in turn),
//! TLS when `security.protocol` says so, ApiVersions, and SASL authentication, all within
//! `socket.connection.setup.timeout.ms`. The connection itself (pipelining, timeouts) is
//! `connection`; authentication is `sasl`.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;

use super::connection::{conn_err, BoxRead, BoxWrite, Connection, ThrottleSink, TLS_FAILURE};
use super::request_events::RequestSink;
use super::sasl;
use crate::security::{tls, SecurityConfig};
use crate::{Error, Result};

/// How to reach and talk to a broker: the client's identity, limits and security.
#[derive(Debug, Clone, Copy)]
pub struct ConnectParams<'a> {
    /// `client.id`.
    pub client_id: &'a str,
    /// `socket.connection.setup.timeout.ms`: TCP, TLS, ApiVersions and SASL together.
    pub setup_timeout: Duration,
    /// `request.timeout.ms`.
    pub request_timeout: Duration,
    /// `max.in.flight.requests.per.connection`.
    pub max_in_flight: usize,
    /// `receive.message.max.bytes`: the largest response frame accepted.
    pub max_response_size: usize,
    /// `security.protocol`, `ssl.*`, `sasl.*` (prepared).
    pub security: &'a SecurityConfig,
    /// The broker's node id (-1 for a bootstrap server), for throttle reports.
    pub node_id: i32,
    /// Where throttle times are reported.
    pub on_throttle: Option<&'a ThrottleSink>,
    /// Where per-request instrumentation events are reported.
    pub on_request: Option<&'a RequestSink>,
    /// TCP options of the socket.
    pub socket: SocketOptions,
}

pub use crate::config::{AddressFamily, SocketOptions};

/// What [`ConnectParams::socket`] does to a connection.
trait ApplySocketOptions {
    /// Whether `addr` is of a family these options allow.
    fn allows(&self, addr: &std::net::SocketAddr) -> bool;
    /// Applies the options to a connected socket.
    fn apply(&self, stream: &TcpStream);
}

impl ApplySocketOptions for SocketOptions {
    fn allows(&self, addr: &std::net::SocketAddr) -> bool {
        match self.family {
            AddressFamily::Any => true,
            AddressFamily::V4 => addr.is_ipv4(),
            AddressFamily::V6 => addr.is_ipv6(),
        }
    }

    /// A failure is logged: the connection works without them, as librdkafka's does.
    fn apply(&self, stream: &TcpStream) {
        if let Err(e) = stream.set_nodelay(self.nodelay) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            let fd = stream.as_raw_fd();
            let set = |option: libc::c_int, value: libc::c_int, name: &str| {
                // SAFETY: `fd` is the open socket `stream` owns for the duration of this call;
                // the option value is a c_int the call only reads.
                let rc = unsafe {
                    libc::setsockopt(
                        fd,
                        libc::SOL_SOCKET,
                        option,
                        (&value as *const libc::c_int).cast(),
                        std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                    )
                };
                if rc != 0 {
                    tracing::debug!(option = name, error = %std::io::Error::last_os_error(), "cannot set a socket option");
                }
            };
            if self.keepalive {
                set(libc::SO_KEEPALIVE, 1, "SO_KEEPALIVE");
            }
            if self.send_buffer > 0 {
                set(
                    libc::SO_SNDBUF,
                    self.send_buffer.min(i32::MAX as u32) as libc::c_int,
                    "SO_SNDBUF",
                );
            }
            if self.receive_buffer > 0 {
                set(
                    libc::SO_RCVBUF,
                    self.receive_buffer.min(i32::MAX as u32) as libc::c_int,
                    "SO_RCVBUF",
                );
            }
        }
    }
}

impl Connection {
    /// Connects to `addr` (`host:port`), trying every address it resolves to in turn; runs the
    /// TLS handshake when the protocol uses TLS, negotiates API versions, and authenticates when
    /// it uses SASL, all within `socket.connection.setup.timeout.ms`.
    pub async fn connect(addr: &str, params: ConnectParams<'_>) -> Result<Arc<Connection>> {
        let deadline = tokio::time::Instant::now() + params.setup_timeout;
        let resolved: Vec<std::net::SocketAddr> =
            tokio::time::timeout_at(deadline, tokio::net::lookup_host(addr))
                .await
                .map_err(|_| conn_err(addr, "name resolution timed out"))?
                .map_err(|e| conn_err(addr, format!("cannot resolve: {e}")))?
                .collect();
        let mut last_err = conn_err(addr, "resolved to no address");
        if !resolved.is_empty() && !resolved.iter().any(|a| params.socket.allows(a)) {
            last_err = conn_err(
                addr,
                format!(
                    "no address of the family broker.address.family allows ({:?})",
                    params.socket.family
                ),
            );
        }
        let mut stream = None;
        for sa in resolved.into_iter().filter(|a| params.socket.allows(a)) {
            match tokio::time::timeout_at(deadline, TcpStream::connect(sa)).await {
                Ok(Ok(s)) => {
                    stream = Some(s);
                    break;
                }
                Ok(Err(e)) => last_err = conn_err(addr, format!("{sa}: {e}")),
                Err(_) => last_err = conn_err(addr, format!("{sa}: connect timed out")),
            }
        }
        let stream = stream.ok_or(last_err)?;
        params.socket.apply(&stream);
        let security = params.security;
        let (read, write): (BoxRead, BoxWrite) = if security.protocol.tls() {
            let config = security
                .prepared
                .as_ref()
                .and_then(|p| p.tls.clone())
                .ok_or_else(|| {
                    Error::config("security.protocol", "TLS settings were not prepared")
                })?;
            let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
            let name = tls::server_name(host)?;
            let connector = tokio_rustls::TlsConnector::from(config);
            let tls = match tokio::time::timeout_at(deadline, connector.connect(name, stream)).await {
                Ok(Ok(t)) => t,
                Ok(Err(e)) => return Err(tls_error(addr, &e)),
                Err(_) => {
                    return Err(Error::SslHandshake {
                        broker: addr.to_string(),
                        detail: "no TLS answer within socket.connection.setup.timeout.ms (is this a TLS listener?)".into(),
                    })
                }
            };
            let (r, w) = tokio::io::split(tls);
            (Box::new(r), Box::new(w))
        } else {
            let (r, w) = stream.into_split();
            (Box::new(r), Box::new(w))
        };
        let mut conn = Connection::start(
            addr,
            params.client_id,
            read,
            write,
            params.request_timeout,
            params.max_in_flight,
            params.max_response_size,
        );
        conn.set_throttle_sink(params.node_id, params.on_throttle.cloned());
        if let Some(sink) = params.on_request {
            conn.set_request_sink(sink.clone());
        }
        let versions = match tokio::time::timeout_at(deadline, conn.negotiate()).await {
            Ok(Ok(v)) => v,
            Ok(Err(Error::Connection { broker, detail })) if detail.contains(TLS_FAILURE) => {
                return Err(Error::SslHandshake {
                    broker,
                    detail: format!(
                        "{} (the broker refused the client certificate, or requires one: ssl.certificate.location / ssl.key.location)",
                        detail.replace(TLS_FAILURE, "")
                    ),
                })
            }
            Ok(Err(e)) => return Err(hint_protocol(e, security)),
            Err(_) => return Err(conn_err(addr, "no ApiVersions answer within socket.connection.setup.timeout.ms")),
        };
        conn.set_versions(versions);
        let conn = Arc::new(conn);
        if security.protocol.sasl() {
            let lifetime =
                match tokio::time::timeout_at(deadline, sasl::authenticate(&conn, security, false))
                    .await
                {
                    Ok(r) => r?,
                    Err(_) => {
                        return Err(Error::SaslAuthentication {
                            broker: addr.to_string(),
                            detail: "not finished within socket.connection.setup.timeout.ms".into(),
                        })
                    }
                };
            if let Some(lifetime) = lifetime {
                sasl::schedule_reauthentication(&conn, security.clone(), lifetime);
            }
        }
        Ok(conn)
    }
}

/// An SSL handshake failure from the I/O error rustls reports, in words a user can act on.
fn tls_error(addr: &str, e: &std::io::Error) -> Error {
    let detail = match e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
        Some(rustls::Error::InvalidCertificate(c)) => {
            format!("the broker's certificate was refused: {c:?} (check ssl.ca.location and ssl.endpoint.identification.algorithm)")
        }
        Some(rustls::Error::AlertReceived(alert)) => format!(
            "the broker refused the handshake ({alert:?}; a client certificate may be required or not trusted: ssl.certificate.location / ssl.key.location)"
        ),
        Some(other) => other.to_string(),
        None if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            "the broker closed the connection during the handshake (is this a TLS listener?)".into()
        }
        None => e.to_string(),
    };
    Error::SslHandshake {
        broker: addr.to_string(),
        detail,
    }
}

/// Adds what a connection closed during ApiVersions usually means: a TLS or SASL listener that
/// a PLAINTEXT / SSL client reached.
fn hint_protocol(e: Error, security: &SecurityConfig) -> Error {
    match e {
        Error::Connection { broker, detail } if !security.protocol.tls() => Error::Connection {
            broker,
            detail: format!(
                "{detail} (security.protocol is {}: if the listener expects TLS, set SSL or SASL_SSL; a broker shutting down closes connections this way too)",
                security.protocol.name()
            ),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn option(stream: &TcpStream, level: libc::c_int, name: libc::c_int) -> libc::c_int {
        use std::os::fd::AsRawFd;
        let mut value: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: the socket is open and `value` / `len` are valid for the call to write.
        let rc = unsafe {
            libc::getsockopt(
                stream.as_raw_fd(),
                level,
                name,
                (&mut value as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
        value
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn socket_options_reach_the_socket() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let plain = TcpStream::connect(addr).await.unwrap();
        SocketOptions::default().apply(&plain);
        assert_eq!(option(&plain, libc::SOL_SOCKET, libc::SO_KEEPALIVE), 0);
        assert!(
            plain.nodelay().unwrap(),
            "Nagle is off by default, as in librdkafka"
        );

        let tuned = TcpStream::connect(addr).await.unwrap();
        let options = SocketOptions {
            nodelay: false,
            keepalive: true,
            send_buffer: 100_000,
            receive_buffer: 100_000,
            family: AddressFamily::V4,
        };
        options.apply(&tuned);
        assert_ne!(option(&tuned, libc::SOL_SOCKET, libc::SO_KEEPALIVE), 0);
        assert!(!tuned.nodelay().unwrap());
        // An explicit size is what the socket reports (Linux doubles it for its bookkeeping).
        for name in [libc::SO_SNDBUF, libc::SO_RCVBUF] {
            let v = option(&tuned, libc::SOL_SOCKET, name);
            assert!(v == 100_000 || v == 200_000, "{v}");
        }
        assert!(options.allows(&addr));
        let v6: std::net::SocketAddr = "[::1]:9092".parse().unwrap();
        assert!(!options.allows(&v6));
    }
}
