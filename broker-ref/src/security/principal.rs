//! Who a connection is ([`Principal`], Kafka's `KafkaPrincipal`) and how it arrived
//! ([`SecurityProtocol`]).

use std::fmt;

/// An authenticated identity, as Kafka's `KafkaPrincipal`: a principal type and a name, written
/// `Type:name` (e.g. `User:alice`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    /// The principal type; Kafka's authenticators produce [`Principal::USER_TYPE`].
    pub principal_type: String,
    /// The name within that type.
    pub name: String,
}

impl Principal {
    /// The principal type of users (Kafka's `KafkaPrincipal.USER_TYPE`).
    pub const USER_TYPE: &'static str = "User";

    /// A principal of `principal_type` named `name`.
    pub fn new(principal_type: impl Into<String>, name: impl Into<String>) -> Principal {
        Principal {
            principal_type: principal_type.into(),
            name: name.into(),
        }
    }

    /// `User:<name>`.
    pub fn user(name: impl Into<String>) -> Principal {
        Principal::new(Self::USER_TYPE, name)
    }

    /// `User:ANONYMOUS`, what an unauthenticated (PLAINTEXT) connection is (Kafka's
    /// `KafkaPrincipal.ANONYMOUS`).
    pub fn anonymous() -> Principal {
        Principal::user("ANONYMOUS")
    }

    /// Parses `Type:name` (Kafka's `SecurityUtils.parseKafkaPrincipal`): the type is what comes
    /// before the first `:`, and neither part may be empty.
    pub fn parse(text: &str) -> Option<Principal> {
        let (t, n) = text.split_once(':')?;
        (!t.is_empty() && !n.is_empty()).then(|| Principal::new(t, n))
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.principal_type, self.name)
    }
}

/// The security protocol of a listener (Kafka's `SecurityProtocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecurityProtocol {
    /// No encryption, no authentication.
    Plaintext,
    /// TLS.
    Ssl,
    /// SASL authentication without encryption.
    SaslPlaintext,
    /// SASL authentication over TLS.
    SaslSsl,
}

impl SecurityProtocol {
    /// Every protocol.
    pub const ALL: [SecurityProtocol; 4] = [
        SecurityProtocol::Plaintext,
        SecurityProtocol::Ssl,
        SecurityProtocol::SaslPlaintext,
        SecurityProtocol::SaslSsl,
    ];

    /// Kafka's name for the protocol (`PLAINTEXT`, `SSL`, `SASL_PLAINTEXT`, `SASL_SSL`).
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// The protocol named `name` (case-insensitive, as Kafka's `SecurityProtocol.forName`).
    pub fn from_name(name: &str) -> Option<SecurityProtocol> {
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name.trim()))
    }

    /// Whether the listener speaks TLS.
    pub fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    /// Whether clients authenticate with SASL.
    pub fn uses_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
