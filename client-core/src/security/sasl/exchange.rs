//! What every mechanism implements: a message exchange, and its failures.

use crate::Result;

/// What a mechanism does after a server message.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Send this message next.
    Send(Vec<u8>),
    /// Authentication completed (the server's last message checked out).
    Done,
}

/// One authentication exchange of a mechanism.
pub trait Exchange: Send {
    /// The first client message.
    fn start(&mut self) -> Result<Vec<u8>>;
    /// Answers the server's message (`challenge` may be empty).
    fn step(&mut self, challenge: &[u8]) -> Result<Step>;
}

/// A SASL failure on the client side (a server message that does not check out).
pub(crate) fn failure(detail: impl Into<String>) -> crate::Error {
    crate::Error::SaslAuthentication {
        broker: String::new(),
        detail: detail.into(),
    }
}
