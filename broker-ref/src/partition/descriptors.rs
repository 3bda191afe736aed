//! Topic creation within the broker's file descriptors.
//!
//! Every partition holds one descriptor while the broker runs (its active segment's log file;
//! index files are opened only while written, sealed segments keep their log file open for
//! reads). A create or partition increase that would leave too few descriptors for connections,
//! segment rolls and checkpoints is refused up front with POLICY_VIOLATION and a message naming
//! the limit, instead of failing half-way with "Too many open files".

use odradek::ErrorCode;

use crate::{Error, Result};

/// Descriptors one new partition holds.
const PER_PARTITION: u64 = 1;

/// Refuses adding `partitions` partitions when the descriptors they need, plus a reserve for
/// everything else, exceed the process's open files limit.
pub(crate) fn check_room_for(partitions: u64) -> Result<()> {
    let Some((open, limit)) = usage() else {
        return Ok(());
    };
    let needed = partitions.saturating_mul(PER_PARTITION);
    let reserve = reserve_for(limit);
    if open.saturating_add(needed).saturating_add(reserve) <= limit {
        return Ok(());
    }
    Err(Error::kafka(
        ErrorCode::PolicyViolation,
        format!(
            "{partitions} new partitions need {needed} file descriptors, but the broker has {open} \
             of its open files limit {limit} in use and keeps {reserve} for connections: raise \
             the limit (ulimit -n) or create fewer partitions"
        ),
    ))
}

/// Descriptors kept free for connections, rolls, index writes and checkpoints.
fn reserve_for(limit: u64) -> u64 {
    (limit / 8).clamp(16, 1024)
}

/// Open descriptors and the soft limit, where the platform tells them.
#[cfg(target_os = "linux")]
fn usage() -> Option<(u64, u64)> {
    let open = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct passed to it.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0
        || limit.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    Some((open, limit.rlim_cur))
}

#[cfg(not(target_os = "linux"))]
fn usage() -> Option<(u64, u64)> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_create_beyond_the_limit_is_refused_naming_it() {
        let err = check_room_for(u64::MAX / 2).unwrap_err();
        assert_eq!(err.code(), ErrorCode::PolicyViolation);
        assert!(err.to_string().contains("open files limit"), "{err}");
        check_room_for(1).unwrap();
    }

    #[test]
    fn the_reserve_scales_with_the_limit() {
        assert_eq!(reserve_for(64), 16);
        assert_eq!(reserve_for(4096), 512);
        assert_eq!(reserve_for(1 << 20), 1024);
    }
}
