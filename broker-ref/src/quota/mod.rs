//! Client quotas (Kafka's `ClientQuotaManager` family): byte rates for Produce and Fetch, a
//! request-time percentage, the controller mutation rate and the connection creation rate per
//! IP, configured per user / client-id / IP entity with Kafka's precedence, durable in the data
//! directory, and enforced as Kafka enforces them: the response carries `throttle_time_ms` and
//! the connection reads nothing more for that long (KIP-219; `server/throttle.rs`).

pub mod entity;
pub mod manager;
pub mod rate;
pub mod replication;
pub mod store;

pub use manager::{QuotaKind, QuotaMetrics, Quotas};
pub use rate::WindowConfig;
pub use store::{Alteration, Match, QuotaError, QuotaStore};
