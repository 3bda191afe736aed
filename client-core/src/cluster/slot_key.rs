//! Keys of the cluster view's connection slots: a broker's plain connection is keyed by its node
//! id, its group/transaction coordinator connection by a key counted down from `i32::MAX`.

/// The slot key of a broker's coordinator connection (its plain connection's key is its id).
pub(super) fn coordinator_slot(node_id: i32) -> i32 {
    i32::MAX - node_id
}

/// The broker a slot key belongs to (see [`coordinator_slot`]).
pub(super) fn slot_node(key: i32) -> i32 {
    if key > i32::MAX / 2 {
        i32::MAX - key
    } else {
        key
    }
}
