//! Security: listeners' protocols, TLS, SASL, principals and the authorizer.
//!
//! A connection's path (`server` drives it, `handlers` consult the result):
//! listener ([`listeners`]: name → security protocol) → TLS handshake ([`tls`], rustls; the
//! principal comes from the client certificate's subject through [`dn`]'s mapping rules) →
//! SASL ([`sasl`] with [`plain`], [`scram`] + [`credentials`], [`oauth`]; the state machine that
//! allows only ApiVersions / SaslHandshake / SaslAuthenticate before authentication is
//! `server::sasl`) → the principal in the connection's `RequestContext` → [`authorizer`]
//! (StandardAuthorizer semantics, [`acl`] model) in the handlers. Secrets travel as
//! [`secret::Secret`], which never prints.
//!
//! Layering: `security` comes after `partition` (it writes its files atomically through it) and
//! before `handlers` and `server`.

pub mod acl;
pub mod authorizer;
pub mod credentials;
pub mod dev;
pub mod dn;
pub mod inter_node;
pub mod jaas;
pub mod listeners;
pub mod oauth;
pub mod plain;
pub mod principal;
pub mod sasl;
pub mod scram;
pub mod secret;
pub mod tls;

use std::path::Path;
use std::sync::Arc;

pub use authorizer::{Authorizer, Subject};
pub use credentials::CredentialStore;
pub use listeners::ListenerSpec;
pub use principal::{Principal, SecurityProtocol};
pub use secret::Secret;

use crate::config::BrokerConfig;
use crate::Result;

/// The broker-wide security state handlers use: the authorizer (if configured) and the SCRAM
/// credentials.
#[derive(Debug)]
pub struct SecurityState {
    /// `None` when no `authorizer.class.name` is set: every request is allowed, and the ACL
    /// APIs answer SECURITY_DISABLED, as Kafka does.
    pub authorizer: Option<Authorizer>,
    /// SCRAM credentials (AlterUserScramCredentials / DescribeUserScramCredentials, SCRAM logins).
    pub credentials: Arc<CredentialStore>,
}

impl SecurityState {
    /// Opens the durable state in the data directory.
    pub fn open(config: &BrokerConfig, dir: &Path) -> Result<SecurityState> {
        Ok(SecurityState {
            authorizer: Authorizer::from_config(config, Some(dir))?,
            credentials: Arc::new(CredentialStore::open(dir)?),
        })
    }

    /// No authorizer, no credentials (tests).
    pub fn disabled() -> SecurityState {
        SecurityState {
            authorizer: None,
            credentials: Arc::new(CredentialStore::in_memory()),
        }
    }
}

/// Everything a listener needs to accept a connection.
#[derive(Debug)]
pub struct ListenerSecurity {
    /// Name, address and protocol.
    pub spec: ListenerSpec,
    /// TLS settings (SSL, SASL_SSL).
    pub tls: Option<tls::TlsSettings>,
    /// SASL settings (SASL_PLAINTEXT, SASL_SSL).
    pub sasl: Option<Arc<sasl::SaslSettings>>,
    /// `ssl.principal.mapping.rules`.
    pub mapper: dn::PrincipalMapper,
}

impl ListenerSecurity {
    /// A PLAINTEXT listener named `name` (no TLS, no SASL; the in-process test cluster's).
    pub fn plaintext(name: &str) -> Result<ListenerSecurity> {
        Ok(ListenerSecurity {
            spec: ListenerSpec {
                name: name.to_string(),
                host: String::new(),
                port: 0,
                protocol: SecurityProtocol::Plaintext,
                advertised_host: None,
                advertised_port: 0,
            },
            tls: None,
            sasl: None,
            mapper: dn::PrincipalMapper::parse("DEFAULT")?,
        })
    }
}

/// Builds every listener's security from the configuration; any listener that cannot be served
/// as configured fails here, naming the key.
pub fn listener_security(
    config: &BrokerConfig,
    credentials: &Arc<CredentialStore>,
) -> Result<Vec<ListenerSecurity>> {
    let mut out = Vec::new();
    let builder = config.get("principal.builder.class").trim();
    if builder != "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder" {
        return Err(crate::Error::config(
            "principal.builder.class",
            format!("{builder} is not supported (only DefaultKafkaPrincipalBuilder)"),
        ));
    }
    for spec in listeners::resolve(config)? {
        let tls = if spec.protocol.uses_tls() {
            Some(tls::server_settings(config, &spec.name)?)
        } else {
            None
        };
        let sasl = if spec.protocol.uses_sasl() {
            Some(Arc::new(sasl::SaslSettings::build(
                config,
                &spec.name,
                credentials.clone(),
            )?))
        } else {
            None
        };
        let mapper = dn::PrincipalMapper::parse(config.listener_get(
            &spec.name,
            None,
            "ssl.principal.mapping.rules",
        ))?;
        out.push(ListenerSecurity {
            spec,
            tls,
            sasl,
            mapper,
        });
    }
    Ok(out)
}
