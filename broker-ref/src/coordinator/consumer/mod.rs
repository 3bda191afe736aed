//! Consumer-protocol groups (KIP-848): the broker assigns partitions and members reconcile
//! towards their targets through ConsumerGroupHeartbeat, without stopping the group.
//! [`group`] holds one group's state machine, [`assignor`] the server-side assignors,
//! [`reconcile`] one member's step towards its target, [`storage`] the group's records in
//! `__consumer_offsets` (Kafka's record types 3 to 8).

pub mod assignor;
pub mod classic;
pub mod coordinate;
pub mod group;
pub mod reconcile;
pub mod storage;
pub mod topics;
pub mod written;
