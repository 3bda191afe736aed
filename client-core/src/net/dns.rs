//! `client.dns.lookup`: how broker names become addresses.
//!
//! `use_all_dns_ips` (the default) is what [`super::Connection::connect`] does for every name:
//! each address it resolves to is tried in turn. `resolve_canonical_bootstrap_servers_only`
//! (Kafka's KIP-235, librdkafka's same-named value) first expands each bootstrap server into
//! the canonical host names of its addresses (a reverse lookup of each), so TLS host checks
//! and SASL/GSSAPI principals see the real host behind an alias or a load balancer's name.

use std::net::{IpAddr, SocketAddr};

use crate::config::DnsLookup;
use crate::{Error, Result};

/// The `host:port` servers to bootstrap from under `lookup`: `servers` unchanged, or each one
/// replaced by the canonical names of the addresses it resolves to (duplicates dropped, order
/// kept). A server that does not resolve stays as given, so its connect attempt reports why.
pub async fn bootstrap_servers(lookup: DnsLookup, servers: &[String]) -> Vec<String> {
    if lookup == DnsLookup::UseAllDnsIps {
        return servers.to_vec();
    }
    let mut out: Vec<String> = Vec::new();
    for server in servers {
        let expanded = match canonical(server).await {
            Ok(names) if !names.is_empty() => names,
            Ok(_) => vec![server.clone()],
            Err(e) => {
                tracing::debug!(server = %server, error = %e, "canonical lookup failed");
                vec![server.clone()]
            }
        };
        for name in expanded {
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// The canonical `host:port` names of every address `server` resolves to.
async fn canonical(server: &str) -> Result<Vec<String>> {
    let port = server
        .rsplit_once(':')
        .map(|(_, p)| p)
        .ok_or_else(|| Error::config("bootstrap.servers", format!("`{server}` has no port")))?;
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host(server)
        .await
        .map_err(|e| Error::Connection {
            broker: server.to_string(),
            detail: format!("cannot resolve: {e}"),
        })?
        .collect();
    let mut out = Vec::new();
    for addr in addrs {
        let ip = addr.ip();
        let name = tokio::task::spawn_blocking(move || host_name_of(ip))
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| ip.to_string());
        let joined = if name.contains(':') {
            format!("[{name}]:{port}")
        } else {
            format!("{name}:{port}")
        };
        if !out.contains(&joined) {
            out.push(joined);
        }
    }
    Ok(out)
}

/// The host name a reverse lookup gives for `ip` (None when there is none), as Java's
/// `InetAddress.getCanonicalHostName` (which falls back to the address itself).
#[cfg(unix)]
fn host_name_of(ip: IpAddr) -> Option<String> {
    let mut host = [0 as libc::c_char; 1025];
    // SAFETY: the sockaddr values are fully initialised (zeroed, then the family, port and
    // address set), their lengths are passed with them, and `host` is a writable buffer of the
    // length given; getnameinfo writes a NUL-terminated string into it on success.
    let rc = unsafe {
        match ip {
            IpAddr::V4(v4) => {
                let mut sa: libc::sockaddr_in = std::mem::zeroed();
                sa.sin_family = libc::AF_INET as libc::sa_family_t;
                sa.sin_addr.s_addr = u32::from_ne_bytes(v4.octets());
                libc::getnameinfo(
                    (&sa as *const libc::sockaddr_in).cast(),
                    std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                    host.as_mut_ptr(),
                    host.len() as libc::socklen_t,
                    std::ptr::null_mut(),
                    0,
                    libc::NI_NAMEREQD,
                )
            }
            IpAddr::V6(v6) => {
                let mut sa: libc::sockaddr_in6 = std::mem::zeroed();
                sa.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                sa.sin6_addr.s6_addr = v6.octets();
                libc::getnameinfo(
                    (&sa as *const libc::sockaddr_in6).cast(),
                    std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
                    host.as_mut_ptr(),
                    host.len() as libc::socklen_t,
                    std::ptr::null_mut(),
                    0,
                    libc::NI_NAMEREQD,
                )
            }
        }
    };
    if rc != 0 {
        return None;
    }
    // SAFETY: getnameinfo succeeded, so `host` holds a NUL-terminated string.
    let name = unsafe { std::ffi::CStr::from_ptr(host.as_ptr()) };
    name.to_str()
        .ok()
        .map(str::to_string)
        .filter(|n| !n.is_empty())
}

#[cfg(not(unix))]
fn host_name_of(_ip: IpAddr) -> Option<String> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_and_unknown_ones_are_refused_by_name() {
        assert_eq!(
            DnsLookup::parse("use_all_dns_ips").ok(),
            Some(DnsLookup::UseAllDnsIps)
        );
        assert_eq!(
            DnsLookup::parse("resolve_canonical_bootstrap_servers_only").ok(),
            Some(DnsLookup::ResolveCanonicalBootstrapServersOnly)
        );
        let e = DnsLookup::parse("default").err().map(|e| e.to_string());
        assert!(
            e.as_deref()
                .is_some_and(|e| e.contains("client.dns.lookup")),
            "{e:?}"
        );
    }

    #[tokio::test]
    async fn use_all_dns_ips_keeps_the_servers_as_given() {
        let servers = vec!["localhost:9092".to_string(), "127.0.0.1:9093".to_string()];
        assert_eq!(
            bootstrap_servers(DnsLookup::UseAllDnsIps, &servers).await,
            servers
        );
    }

    #[tokio::test]
    async fn canonical_names_replace_the_bootstrap_servers() {
        // /etc/hosts names 127.0.0.1 (the first name on its line is the canonical one); with
        // no such line the address itself stands, as in Java.
        let hosts = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
        let want = hosts
            .lines()
            .map(|l| {
                l.split('#')
                    .next()
                    .unwrap_or("")
                    .split_whitespace()
                    .collect::<Vec<_>>()
            })
            .find(|f| f.first() == Some(&"127.0.0.1"))
            .and_then(|f| f.get(1).map(|n| n.to_string()))
            .unwrap_or_else(|| "127.0.0.1".to_string());
        let got = bootstrap_servers(
            DnsLookup::ResolveCanonicalBootstrapServersOnly,
            &["127.0.0.1:9092".to_string(), "127.0.0.1:9092".to_string()],
        )
        .await;
        assert_eq!(got, vec![format!("{want}:9092")], "one entry per name");
        // A name that does not resolve stays, so connecting to it reports the failure.
        let unknown = "no-such-host.invalid:9092".to_string();
        assert_eq!(
            bootstrap_servers(
                DnsLookup::ResolveCanonicalBootstrapServersOnly,
                std::slice::from_ref(&unknown)
            )
            .await,
            vec![unknown]
        );
    }
}
