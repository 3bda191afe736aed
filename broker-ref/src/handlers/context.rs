//! What a handler knows about the request besides its body: who sent it, over which listener,
//! and the request header's fields.
//!
//! The connection task builds a [`ConnectionContext`] once, when it accepts the connection (the
//! security work will fill in the principal from TLS or SASL there). For each request the
//! dispatcher adds the header's fields, making a [`RequestContext`] that every handler receives.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::StrBytes;

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

    /// `User:ANONYMOUS`, what an unauthenticated (PLAINTEXT) connection is (Kafka's
    /// `KafkaPrincipal.ANONYMOUS`).
    pub fn anonymous() -> Principal {
        Principal::new(Self::USER_TYPE, "ANONYMOUS")
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
    /// Kafka's name for the protocol (`PLAINTEXT`, `SSL`, `SASL_PLAINTEXT`, `SASL_SSL`).
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What is known about a connection once it is accepted; the same for every request on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionContext {
    /// The client's address.
    pub peer: SocketAddr,
    /// Name of the listener the connection arrived on (e.g. `PLAINTEXT`).
    pub listener: Arc<str>,
    /// The listener's security protocol (PLAINTEXT until the security work adds the others).
    pub security_protocol: SecurityProtocol,
    /// Who the client is (`User:ANONYMOUS` until authentication exists).
    pub principal: Principal,
}

impl ConnectionContext {
    /// A PLAINTEXT connection from `peer` on `listener`, as `User:ANONYMOUS`.
    pub fn plaintext(peer: SocketAddr, listener: impl Into<Arc<str>>) -> ConnectionContext {
        ConnectionContext {
            peer,
            listener: listener.into(),
            security_protocol: SecurityProtocol::Plaintext,
            principal: Principal::anonymous(),
        }
    }
}

/// One request's context: its connection's and its header's fields. Handlers receive it by
/// reference; building it allocates nothing (the client id shares the request's buffer).
#[derive(Debug, Clone)]
pub struct RequestContext<'c> {
    /// The connection the request came on.
    pub connection: &'c ConnectionContext,
    /// The API.
    pub api_key: ApiKey,
    /// The request's version of that API.
    pub api_version: i16,
    /// The correlation id the response echoes.
    pub correlation_id: i32,
    /// The request header's client id (`None` when the client sent null).
    pub client_id: Option<StrBytes>,
}

impl RequestContext<'_> {
    /// The client's address.
    pub fn peer(&self) -> SocketAddr {
        self.connection.peer
    }
    /// The listener the request arrived on.
    pub fn listener(&self) -> &str {
        &self.connection.listener
    }
    /// Who sent the request.
    pub fn principal(&self) -> &Principal {
        &self.connection.principal
    }
    /// The connection's security protocol.
    pub fn security_protocol(&self) -> SecurityProtocol {
        self.connection.security_protocol
    }
    /// The client id, `""` when the client sent null (as Kafka reports it).
    pub fn client_id(&self) -> &str {
        self.client_id.as_deref().unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principal_and_protocol_print_as_kafka_does() {
        assert_eq!(Principal::anonymous().to_string(), "User:ANONYMOUS");
        assert_eq!(Principal::new("User", "alice").to_string(), "User:alice");
        assert_eq!(SecurityProtocol::SaslSsl.to_string(), "SASL_SSL");
    }

    #[test]
    fn request_context_reads_through_to_the_connection() {
        let conn = ConnectionContext::plaintext("10.0.0.7:5000".parse().unwrap(), "PLAINTEXT");
        let ctx = RequestContext {
            connection: &conn,
            api_key: ApiKey::Produce,
            api_version: 9,
            correlation_id: 4,
            client_id: None,
        };
        assert_eq!(ctx.client_id(), "");
        assert_eq!(ctx.peer().port(), 5000);
        assert_eq!(ctx.listener(), "PLAINTEXT");
        assert_eq!(ctx.principal(), &Principal::anonymous());
        assert_eq!(ctx.security_protocol(), SecurityProtocol::Plaintext);
    }
}
