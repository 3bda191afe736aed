use super::*;
use crate::coordinator::consumer::assignor::ASSIGNORS;

struct Catalog(Vec<(&'static str, u128, i32)>);

impl Topics for Catalog {
    fn lookup(&self, name: &str) -> Option<(Uuid, i32)> {
        self.0
            .iter()
            .find(|(n, ..)| *n == name)
            .map(|(_, id, p)| (Uuid::from_u128(*id), *p))
    }
    fn names(&self) -> Vec<String> {
        self.0.iter().map(|(n, ..)| n.to_string()).collect()
    }
    fn name_of(&self, id: Uuid) -> Option<String> {
        self.0
            .iter()
            .find(|(_, i, _)| Uuid::from_u128(*i) == id)
            .map(|(n, ..)| n.to_string())
    }
}

fn limits() -> Limits {
    Limits {
        session_timeout: Duration::from_secs(45),
        heartbeat_interval_ms: 5000,
        max_size: 3,
        default_assignor: "uniform",
    }
}

fn join(id: &str, topics: &[&str]) -> Heartbeat {
    Heartbeat {
        version: 1,
        member_id: id.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(topics.iter().map(|t| t.to_string()).collect()),
        owned: Some(Assignment::new()),
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        ..Heartbeat::default()
    }
}

fn beat(id: &str, epoch: i32, owned: &Assignment) -> Heartbeat {
    Heartbeat {
        version: 1,
        member_id: id.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        owned: Some(owned.clone()),
        ..Heartbeat::default()
    }
}

fn count(a: &Assignment) -> usize {
    a.values().map(|p| p.len()).sum()
}

fn t() -> Catalog {
    Catalog(vec![("t", 1, 6), ("other", 2, 2)])
}

#[test]
fn the_first_member_gets_every_partition_at_epoch_one() {
    let mut g = ConsumerGroup::new("g");
    let now = Instant::now();
    let a = g.heartbeat(join("a", &["t"]), &t(), limits(), now);
    assert_eq!(a.error, ErrorCode::NoError);
    assert_eq!((a.member_id.as_str(), a.member_epoch), ("a", 1));
    assert_eq!(a.heartbeat_interval_ms, 5000);
    assert_eq!(count(a.assignment.as_ref().expect("a full answer")), 6);
    assert_eq!(g.state(), State::Stable);
    // A plain heartbeat with nothing new answers no assignment.
    let owned = a.assignment.unwrap();
    let again = g.heartbeat(beat("a", 1, &owned), &t(), limits(), now);
    assert_eq!(again.member_epoch, 1);
    assert!(again.assignment.is_none());
}

#[test]
fn a_second_member_waits_until_the_first_revokes() {
    let mut g = ConsumerGroup::new("g");
    let now = Instant::now();
    let a1 = g.heartbeat(join("a", &["t"]), &t(), limits(), now);
    let a_owned = a1.assignment.unwrap();
    let b1 = g.heartbeat(join("b", &["t"]), &t(), limits(), now);
    assert_eq!(b1.member_epoch, 2, "b is at the new epoch");
    assert!(
        b1.assignment.as_ref().is_some_and(|a| a.is_empty()),
        "b's partitions are still a's: {b1:?}"
    );
    assert_eq!(g.state(), State::Reconciling);
    // a learns what to give up, at its old epoch.
    let a2 = g.heartbeat(beat("a", 1, &a_owned), &t(), limits(), now);
    assert_eq!(a2.member_epoch, 1);
    let kept = a2.assignment.unwrap();
    assert_eq!(count(&kept), 3);
    // a confirms: it moves to epoch 2.
    let a3 = g.heartbeat(beat("a", 1, &kept), &t(), limits(), now);
    assert_eq!(a3.member_epoch, 2);
    // b now gets the freed partitions; nobody owns a partition twice.
    let b2 = g.heartbeat(beat("b", 2, &Assignment::new()), &t(), limits(), now);
    let b_owned = b2.assignment.unwrap();
    assert_eq!(count(&b_owned), 3);
    assert!(!reconcile::intersects(&kept, &b_owned));
    assert_eq!(g.state(), State::Stable);
}

#[test]
fn epochs_are_fenced_as_kafka_fences_them() {
    let mut g = ConsumerGroup::new("g");
    let now = Instant::now();
    let a1 = g.heartbeat(join("a", &["t"]), &t(), limits(), now);
    let owned = a1.assignment.unwrap();
    let ahead = g.heartbeat(beat("a", 5, &owned), &t(), limits(), now);
    assert_eq!(ahead.error, ErrorCode::FencedMemberEpoch);
    let unknown = g.heartbeat(beat("zz", 1, &owned), &t(), limits(), now);
    assert_eq!(unknown.error, ErrorCode::UnknownMemberId);
    // The previous epoch with a subset of the assignment is accepted (a lost answer).
    g.heartbeat(join("b", &["t"]), &t(), limits(), now);
    let a2 = g.heartbeat(beat("a", 1, &owned), &t(), limits(), now);
    let kept = a2.assignment.unwrap();
    let a3 = g.heartbeat(beat("a", 1, &kept), &t(), limits(), now);
    assert_eq!(a3.member_epoch, 2);
    let late = g.heartbeat(beat("a", 1, &kept), &t(), limits(), now);
    assert_eq!(
        late.error,
        ErrorCode::NoError,
        "previous epoch, subset owned"
    );
    let wrong = g.heartbeat(beat("a", 1, &owned), &t(), limits(), now);
    assert_eq!(
        wrong.error,
        ErrorCode::FencedMemberEpoch,
        "previous epoch, more owned"
    );
}

#[test]
fn requests_are_validated_before_anything_changes() {
    let mut bad = join("a", &["t"]);
    bad.rebalance_timeout_ms = -1;
    assert!(validate(&bad, ASSIGNORS).is_err());
    let mut bad = join("", &["t"]);
    bad.version = 1;
    assert_eq!(
        validate(&bad, ASSIGNORS).unwrap_err().0,
        ErrorCode::InvalidRequest
    );
    let mut v0 = join("", &["t"]);
    v0.version = 0;
    assert!(
        validate(&v0, ASSIGNORS).is_ok(),
        "v0 joins without a member id"
    );
    let mut bad = join("a", &["t"]);
    bad.subscribed_topic_names = None;
    assert!(validate(&bad, ASSIGNORS).is_err());
    let mut bad = join("a", &["t"]);
    bad.server_assignor = Some("sticky".into());
    assert_eq!(
        validate(&bad, ASSIGNORS).unwrap_err().0,
        ErrorCode::UnsupportedAssignor
    );
    let mut bad = join("a", &["t"]);
    bad.subscribed_topic_regex = Some("(".into());
    assert_eq!(
        validate(&bad, ASSIGNORS).unwrap_err().0,
        ErrorCode::InvalidRegularExpression
    );
    let mut bad = beat("a", -2, &Assignment::new());
    bad.instance_id = None;
    assert!(validate(&bad, ASSIGNORS).is_err());
}

#[test]
fn v0_members_get_an_id_and_the_group_caps_its_size() {
    let mut g = ConsumerGroup::new("g");
    let now = Instant::now();
    let mut first = join("", &["t"]);
    first.version = 0;
    let a = g.heartbeat(first, &t(), limits(), now);
    assert_eq!(a.error, ErrorCode::NoError);
    assert_eq!(a.member_id.len(), 22, "a base64 uuid: {}", a.member_id);
    g.heartbeat(join("b", &["t"]), &t(), limits(), now);
    g.heartbeat(join("c", &["t"]), &t(), limits(), now);
    let d = g.heartbeat(join("d", &["t"]), &t(), limits(), now);
    assert_eq!(d.error, ErrorCode::GroupMaxSizeReached);
    assert_eq!(g.members.len(), 3);
}

#[test]
fn a_silent_member_is_fenced_and_its_partitions_go_to_the_others() {
    let mut g = ConsumerGroup::new("g");
    let now = Instant::now();
    g.heartbeat(join("a", &["t"]), &t(), limits(), now);
    g.heartbeat(join("b", &["t"]), &t(), limits(), now);
    assert!(!g.tick(now + Duration::from_secs(10)));
    assert!(g.tick(now + Duration::from_secs(46)));
    assert!(g.members.is_empty());
    let epoch = g.group_epoch;
    let later = now + Duration::from_secs(50);
    let a = g.heartbeat(join("a", &["t"]), &t(), limits(), later);
    assert_eq!(count(a.assignment.as_ref().unwrap()), 6);
    assert!(g.group_epoch > epoch);
}

#[test]
fn a_member_that_does_not_revoke_in_time_is_fenced() {
    let mut g = ConsumerGroup::new("g");
    let now = Instant::now();
    let a1 = g.heartbeat(join("a", &["t"]), &t(), limits(), now);
    g.heartbeat(join("b", &["t"]), &t(), limits(), now);
    // a is told to revoke and keeps heartbeating without doing it.
    let owned = a1.assignment.unwrap();
    g.heartbeat(beat("a", 1, &owned), &t(), limits(), now);
    let soon = now + Duration::from_secs(20);
    g.heartbeat(beat("a", 1, &owned), &t(), limits(), soon);
    g.heartbeat(beat("b", 2, &Assignment::new()), &t(), limits(), soon);
    assert!(g.tick(now + Duration::from_secs(31)));
    assert!(!g.members.contains_key("a"));
    assert!(g.members.contains_key("b"));
}

#[test]
fn a_static_member_keeps_its_partitions_across_a_restart() {
    let mut g = ConsumerGroup::new("g");
    let now = Instant::now();
    let mut j = join("a1", &["t"]);
    j.instance_id = Some("i".into());
    let a = g.heartbeat(j, &t(), limits(), now);
    let assigned = a.assignment.unwrap();
    let epoch = g.group_epoch;
    let mut leave = beat("a1", STATIC_LEAVE_EPOCH, &assigned);
    leave.instance_id = Some("i".into());
    let left = g.heartbeat(leave, &t(), limits(), now);
    assert_eq!(left.member_epoch, STATIC_LEAVE_EPOCH);
    assert_eq!(g.group_epoch, epoch, "a static leave does not rebalance");
    // Another instance cannot take the id while it is held; the same one returns under a new
    // member id and gets the same partitions.
    let mut back = join("a2", &["t"]);
    back.instance_id = Some("i".into());
    let again = g.heartbeat(back, &t(), limits(), now);
    assert_eq!(again.error, ErrorCode::NoError);
    assert_eq!(again.assignment.unwrap(), assigned);
    let mut thief = join("a3", &["t"]);
    thief.instance_id = Some("i".into());
    assert_eq!(
        g.heartbeat(thief, &t(), limits(), now).error,
        ErrorCode::UnreleasedInstanceId
    );
}

#[test]
fn a_regex_subscription_follows_new_topics() {
    let mut g = ConsumerGroup::new("g");
    let now = Instant::now();
    let mut j = join("a", &[]);
    j.subscribed_topic_names = None;
    j.subscribed_topic_regex = Some("t.*".into());
    let a = g.heartbeat(j, &t(), limits(), now);
    assert_eq!(count(a.assignment.as_ref().unwrap()), 6, "t, not other");
    let grown = Catalog(vec![("t", 1, 6), ("other", 2, 2), ("t2", 3, 1)]);
    let owned = a.assignment.unwrap();
    let b = g.heartbeat(beat("a", a.member_epoch, &owned), &grown, limits(), now);
    assert_eq!(
        count(b.assignment.as_ref().unwrap()),
        7,
        "t2 joins the subscription"
    );
    assert!(b.member_epoch > a.member_epoch);
}

#[test]
fn leaving_frees_partitions_for_the_rest() {
    let mut g = ConsumerGroup::new("g");
    let now = Instant::now();
    g.heartbeat(join("a", &["t"]), &t(), limits(), now);
    let b1 = g.heartbeat(join("b", &["t"]), &t(), limits(), now);
    let left = g.heartbeat(
        beat("a", LEAVE_EPOCH, &Assignment::new()),
        &t(),
        limits(),
        now,
    );
    assert_eq!(left.member_epoch, LEAVE_EPOCH);
    let b2 = g.heartbeat(
        beat("b", b1.member_epoch, &Assignment::new()),
        &t(),
        limits(),
        now,
    );
    assert_eq!(count(b2.assignment.as_ref().unwrap()), 6);
    assert_eq!(g.state(), State::Stable);
}

#[test]
fn commits_need_the_current_epoch() {
    let mut g = ConsumerGroup::new("g");
    let now = Instant::now();
    let a = g.heartbeat(join("a", &["t"]), &t(), limits(), now);
    assert_eq!(g.validate_commit("a", a.member_epoch, 9), Ok(()));
    assert_eq!(
        g.validate_commit("a", a.member_epoch - 1, 9),
        Err(ErrorCode::StaleMemberEpoch)
    );
    assert_eq!(
        g.validate_commit("x", 1, 9),
        Err(ErrorCode::UnknownMemberId)
    );
    assert_eq!(
        g.validate_commit("a", a.member_epoch, 8),
        Err(ErrorCode::UnsupportedVersion)
    );
    assert_eq!(
        g.validate_commit("", -1, 9),
        Err(ErrorCode::UnknownMemberId)
    );
    let empty = ConsumerGroup::new("e");
    assert_eq!(
        empty.validate_commit("", -1, 9),
        Ok(()),
        "an admin commit to an empty group"
    );
}
