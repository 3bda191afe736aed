//! The security settings as plain data: what `security.protocol`, `ssl.*` and `sasl.*` say,
//! after parsing (`super::config`) and before anything is built from them.

use std::path::PathBuf;
use std::sync::Arc;

use super::secret::Secret;
use super::token::TokenProvider;

/// `security.protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SecurityProtocol {
    /// No TLS, no SASL.
    #[default]
    Plaintext,
    /// TLS.
    Ssl,
    /// SASL without TLS.
    SaslPlaintext,
    /// SASL over TLS.
    SaslSsl,
}

impl SecurityProtocol {
    /// Whether connections use TLS.
    pub fn tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    /// Whether connections authenticate with SASL.
    pub fn sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }

    /// The protocol's name.
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }
}

/// A SASL mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaslMechanism {
    /// RFC 4616: user name and password in the clear (use it over TLS).
    Plain,
    /// RFC 5802 / 7677 with SHA-256.
    ScramSha256,
    /// RFC 5802 with SHA-512.
    ScramSha512,
    /// RFC 7628: an OAuth 2 bearer token.
    OAuthBearer,
}

impl SaslMechanism {
    /// The mechanism's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
            SaslMechanism::OAuthBearer => "OAUTHBEARER",
        }
    }
}

/// How an OAUTHBEARER client gets its tokens when the application gives no token callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OAuthMethod {
    /// librdkafka's `default`: an unsecured JWT built from `sasl.oauthbearer.config` (when
    /// `enable.sasl.oauthbearer.unsecure.jwt=true`; development only), or the application's
    /// token callback.
    #[default]
    Default,
    /// `oidc`: the OAuth 2 client-credentials grant against
    /// `sasl.oauthbearer.token.endpoint.url`.
    Oidc,
}

/// A TLS protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersion {
    /// TLS 1.2.
    Tls12,
    /// TLS 1.3.
    Tls13,
}

/// `ssl.*`: what TLS connections trust and present.
#[derive(Debug, Clone, Default)]
pub struct SslConfig {
    /// `ssl.ca.location` (a PEM file or a directory of them) / Java's `ssl.truststore.location`
    /// with `ssl.truststore.type=PEM`.
    pub ca_location: Option<PathBuf>,
    /// `ssl.ca.pem` / `ssl.truststore.certificates`: CA certificates inline.
    pub ca_pem: Option<String>,
    /// `ssl.certificate.location`: the client certificate chain (PEM).
    pub certificate_location: Option<PathBuf>,
    /// `ssl.certificate.pem` / `ssl.keystore.certificate.chain`.
    pub certificate_pem: Option<String>,
    /// `ssl.key.location`: the client's private key (PEM, PKCS#8 / PKCS#1 / SEC1; encrypted
    /// PKCS#8 with `ssl.key.password`). Java's `ssl.keystore.location` with
    /// `ssl.keystore.type=PEM` holds key and chain in one file and sets both.
    pub key_location: Option<PathBuf>,
    /// `ssl.key.pem` / `ssl.keystore.key`.
    pub key_pem: Option<Secret>,
    /// `ssl.key.password`: decrypts an encrypted PKCS#8 key.
    pub key_password: Option<Secret>,
    /// `ssl.endpoint.identification.algorithm`: `https` (default) checks that the broker's
    /// certificate names the host connected to; `none` (or empty) does not.
    pub verify_hostname: bool,
    /// `ssl.cipher.suites`: OpenSSL or IANA names, limited to what rustls implements.
    pub cipher_suites: Option<Vec<String>>,
    /// `ssl.enabled.protocols`: TLSv1.2 and/or TLSv1.3 (default both).
    pub protocols: Option<Vec<TlsVersion>>,
}

/// `sasl.*`: how SASL connections authenticate.
#[derive(Clone, Default)]
pub struct SaslConfig {
    /// `sasl.mechanism` / `sasl.mechanisms`; `None` means the default, GSSAPI, which is refused.
    pub mechanism: Option<SaslMechanism>,
    /// `sasl.username`.
    pub username: Option<String>,
    /// `sasl.password`.
    pub password: Option<Secret>,
    /// `sasl.oauthbearer.method`.
    pub oauth_method: OAuthMethod,
    /// `enable.sasl.oauthbearer.unsecure.jwt`.
    pub unsecure_jwt: bool,
    /// `sasl.oauthbearer.config`: `principal=... scope=... lifeSeconds=... extension_K=V`
    /// for the unsecured JWT.
    pub oauth_config: Option<String>,
    /// `sasl.oauthbearer.client.id`.
    pub oauth_client_id: Option<String>,
    /// `sasl.oauthbearer.client.secret`.
    pub oauth_client_secret: Option<Secret>,
    /// `sasl.oauthbearer.scope`.
    pub oauth_scope: Option<String>,
    /// `sasl.oauthbearer.extensions`: `K=V,K=V` sent with the token (RFC 7628 §3.1).
    pub oauth_extensions: Vec<(String, String)>,
    /// `sasl.oauthbearer.token.endpoint.url`.
    pub oauth_token_endpoint: Option<String>,
    /// `https.ca.location` / `https.ca.pem`: what the token endpoint's TLS trusts (default: the
    /// system trust store).
    pub https_ca_location: Option<PathBuf>,
    /// See `https_ca_location`.
    pub https_ca_pem: Option<String>,
    /// The application's token callback (set in code: confluent-kafka's `oauth_cb`, KafkaJS's
    /// `oauthBearerProvider`, a C callback), which wins over the configured methods.
    pub token_provider: Option<Arc<dyn TokenProvider>>,
}

impl std::fmt::Debug for SaslConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslConfig")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .field("password", &self.password)
            .field("oauth_method", &self.oauth_method)
            .field("unsecure_jwt", &self.unsecure_jwt)
            .field("oauth_client_id", &self.oauth_client_id)
            .field("oauth_client_secret", &self.oauth_client_secret)
            .field("oauth_token_endpoint", &self.oauth_token_endpoint)
            .field("token_provider", &self.token_provider.is_some())
            .finish_non_exhaustive()
    }
}
