//! (serde: in progress)
