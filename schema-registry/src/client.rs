//! (client: in progress)
