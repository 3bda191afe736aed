//! The client side of the SASL mechanisms Kafka speaks, as message exchanges: each mechanism
//! produces its first message, then answers each server message until it is done. The
//! connection carries the messages in SaslAuthenticate requests (KIP-152).

mod exchange;
mod oauthbearer;
mod plain;
mod scram;

pub use exchange::{Exchange, Step};
pub use oauthbearer::OAuthBearer;
pub use plain::Plain;
pub use scram::{Scram, ScramHash};
