//! What storage holds of one consumer group: the encoded value of each of its records as last
//! written, so a write carries only what changed (`super::storage::changes`).

use std::collections::BTreeMap;

use bytes::Bytes;

/// What was last written for a group, to write only changes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Written {
    pub(super) epoch: Option<i32>,
    pub(super) assignment_epoch: Option<i32>,
    pub(super) metadata: Option<Bytes>,
    pub(super) members: BTreeMap<String, Bytes>,
    pub(super) targets: BTreeMap<String, Bytes>,
    pub(super) currents: BTreeMap<String, Bytes>,
}
