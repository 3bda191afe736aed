//! Which brokers the client can reach, from each broker's latest connection attempt, and the
//! state changes an application hears of through its error callback (librdkafka's
//! `error_cb`): a broker that went down (`_TRANSPORT`), and every known broker down at once
//! (`_ALL_BROKERS_DOWN`), told once per episode, until some broker answers again.

use std::collections::HashSet;
use std::sync::Mutex;

/// Broker reachability of one client instance.
#[derive(Debug, Default)]
pub(crate) struct BrokerHealth {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Brokers whose latest connection attempt failed.
    down: HashSet<i32>,
    /// Whether the current all-down episode was told already.
    all_down_told: bool,
}

/// What one failed connection attempt changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Failure {
    /// The broker was up (or untried) before: tell that it went down.
    pub went_down: bool,
    /// Every known broker is down now and this episode was not told yet: `(down, total)`.
    pub all_down: Option<(usize, usize)>,
}

impl BrokerHealth {
    /// A connection to `node` succeeded: it is up, and an all-down episode is over.
    pub fn up(&self, node: i32) {
        if let Ok(mut s) = self.state.lock() {
            s.down.remove(&node);
            s.all_down_told = false;
        }
    }

    /// Whether `node`'s latest connection attempt failed.
    pub fn is_down(&self, node: i32) -> bool {
        self.state.lock().is_ok_and(|s| s.down.contains(&node))
    }

    /// A connection attempt to `node` failed. `reachable` are the known brokers still counted
    /// as up for another reason (an open connection in another slot); `known` every broker
    /// in the metadata.
    pub fn failed(&self, node: i32, known: &[i32], reachable: &[i32]) -> Failure {
        let Ok(mut s) = self.state.lock() else {
            return Failure::default();
        };
        let went_down = s.down.insert(node);
        let all = !known.is_empty()
            && known
                .iter()
                .all(|n| s.down.contains(n) && !reachable.contains(n));
        let all_down = (all && !s.all_down_told).then(|| {
            s.all_down_told = true;
            (known.len(), known.len())
        });
        Failure {
            went_down,
            all_down,
        }
    }

    /// No bootstrap server of `servers` could be reached: the start of an all-down episode
    /// when nothing else is known, told once.
    pub fn bootstrap_failed(&self, servers: usize) -> Option<(usize, usize)> {
        let mut s = self.state.lock().ok()?;
        if s.all_down_told || servers == 0 {
            return None;
        }
        s.all_down_told = true;
        Some((servers, servers))
    }

    /// A bootstrap server answered: an all-down episode is over.
    pub fn bootstrap_up(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.all_down_told = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broker_going_down_is_told_once_and_all_down_once_per_episode() {
        let h = BrokerHealth::default();
        let known = [1, 2, 3];
        let f = h.failed(1, &known, &[]);
        assert_eq!(
            f,
            Failure {
                went_down: true,
                all_down: None
            }
        );
        // Failing again while down tells nothing new.
        assert_eq!(h.failed(1, &known, &[]), Failure::default());
        assert!(h.failed(2, &known, &[]).all_down.is_none());
        assert_eq!(h.failed(3, &known, &[]).all_down, Some((3, 3)));
        assert_eq!(h.failed(3, &known, &[]).all_down, None, "told once");
        // One broker back ends the episode; all down again is a new one.
        h.up(2);
        assert_eq!(h.failed(2, &known, &[]).all_down, Some((3, 3)));
    }

    #[test]
    fn a_broker_with_another_open_connection_is_not_down_for_the_count() {
        let h = BrokerHealth::default();
        let known = [1, 2];
        h.failed(1, &known, &[]);
        assert_eq!(h.failed(2, &known, &[2]).all_down, None);
    }

    #[test]
    fn unreachable_bootstrap_servers_are_told_once_until_one_answers() {
        let h = BrokerHealth::default();
        assert_eq!(h.bootstrap_failed(2), Some((2, 2)));
        assert_eq!(h.bootstrap_failed(2), None);
        h.bootstrap_up();
        assert_eq!(h.bootstrap_failed(2), Some((2, 2)));
        assert_eq!(BrokerHealth::default().bootstrap_failed(0), None);
    }
}
