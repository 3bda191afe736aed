//! What a handler knows about the request besides its body: who sent it, over which listener,
//! and the request header's fields.
//!
//! The connection task builds a [`ConnectionContext`] once the connection is authenticated: the
//! principal comes from the TLS client certificate (SSL) or the SASL exchange (SASL_*), else it
//! is `User:ANONYMOUS`. For each request the
//! dispatcher adds the header's fields, making a [`RequestContext`] that every handler receives.

use std::net::SocketAddr;
use std::sync::Arc;

use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::StrBytes;

pub use crate::security::{Principal, SecurityProtocol};

/// What is known about a connection once it is accepted; the same for every request on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionContext {
    /// The client's address.
    pub peer: SocketAddr,
    /// Name of the listener the connection arrived on (e.g. `PLAINTEXT`).
    pub listener: Arc<str>,
    /// The listener's security protocol.
    pub security_protocol: SecurityProtocol,
    /// Who the client is (`User:ANONYMOUS` without a client certificate or SASL).
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

    /// A connection on a listener of `security_protocol`, authenticated as `principal`.
    pub fn new(
        peer: SocketAddr,
        listener: impl Into<Arc<str>>,
        security_protocol: SecurityProtocol,
        principal: Principal,
    ) -> ConnectionContext {
        ConnectionContext {
            peer,
            listener: listener.into(),
            security_protocol,
            principal,
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
