//! State the broker keeps per client between requests (not per connection, not per partition):
//! incremental fetch sessions (KIP-227). Pure state machines with no I/O; the handlers ask them
//! what a request means and report back what they read.

pub mod fetch;

pub use fetch::FetchSessionCache;
