#![allow(clippy::unwrap_used)]

use super::*;

fn key(topic: &str, partition: i32) -> PartitionKey {
    PartitionKey {
        topic: TopicKey::Name(Arc::from(topic)),
        partition,
    }
}

fn params(offset: i64) -> FetchParams {
    FetchParams {
        fetch_offset: offset,
        partition_max_bytes: 1 << 20,
        log_start_offset: -1,
        current_leader_epoch: -1,
        last_fetched_epoch: -1,
    }
}

fn result(hw: i64) -> PartitionResult {
    PartitionResult {
        error_code: 0,
        has_records: false,
        high_watermark: hw,
        last_stable_offset: hw,
        log_start_offset: 0,
        has_preferred_replica: false,
    }
}

fn update(
    partitions: Vec<(PartitionKey, FetchParams)>,
    forgotten: Vec<PartitionKey>,
) -> SessionUpdate {
    SessionUpdate {
        partitions,
        forgotten,
    }
}

fn three() -> Vec<(PartitionKey, FetchParams)> {
    vec![
        (key("t", 0), params(0)),
        (key("t", 1), params(0)),
        (key("u", 0), params(0)),
    ]
}

/// Creates a session over `partitions` at `now`, every partition sent with high watermark 10.
fn create(
    cache: &FetchSessionCache,
    partitions: Vec<(PartitionKey, FetchParams)>,
    now: Instant,
) -> i32 {
    let ctx = cache.new_context(0, INITIAL_EPOCH, false, || update(partitions, vec![]), now);
    let FetchContext::Full {
        uses_topic_ids,
        partitions,
    } = ctx
    else {
        panic!("expected a full context, got {ctx:?}");
    };
    let results = vec![result(10); partitions.len()];
    cache.create_session(uses_topic_ids, &partitions, &results, now)
}

/// An incremental request; panics unless it yields an incremental context.
fn incremental(
    cache: &FetchSessionCache,
    id: i32,
    epoch: i32,
    up: SessionUpdate,
    now: Instant,
) -> (i32, Vec<(PartitionKey, FetchParams)>) {
    match cache.new_context(id, epoch, false, || up, now) {
        FetchContext::Incremental {
            session_id,
            epoch,
            partitions,
        } => {
            assert_eq!(session_id, id);
            (epoch, partitions)
        }
        other => panic!("expected an incremental context, got {other:?}"),
    }
}

fn keys(partitions: &[(PartitionKey, FetchParams)]) -> Vec<PartitionKey> {
    partitions.iter().map(|(k, _)| k.clone()).collect()
}

#[test]
fn next_epoch_follows_kafka() {
    assert_eq!(next_epoch(0), 1);
    assert_eq!(next_epoch(1), 2);
    assert_eq!(next_epoch(i32::MAX), 1);
    assert_eq!(next_epoch(-1), -1);
    assert_eq!(next_epoch(-7), -1);
}

#[test]
fn final_epoch_is_sessionless_and_creates_nothing() {
    let cache = FetchSessionCache::new();
    let ctx = cache.new_context(
        0,
        FINAL_EPOCH,
        false,
        || panic!("a sessionless fetch needs no session update"),
        Instant::now(),
    );
    assert_eq!(ctx, FetchContext::Sessionless);
    assert!(cache.is_empty());
}

#[test]
fn initial_epoch_creates_a_session_expecting_epoch_one() {
    let cache = FetchSessionCache::new();
    let now = Instant::now();
    let mut partitions = three();
    // A repeated partition is merged: first position, last parameters.
    partitions.push((key("t", 0), params(5)));
    let ctx = cache.new_context(0, INITIAL_EPOCH, true, || update(partitions, vec![]), now);
    let FetchContext::Full {
        uses_topic_ids,
        partitions,
    } = ctx
    else {
        panic!("expected a full context");
    };
    assert!(uses_topic_ids);
    assert_eq!(
        keys(&partitions),
        vec![key("t", 0), key("t", 1), key("u", 0)]
    );
    assert_eq!(partitions[0].1.fetch_offset, 5);
    let id = cache.create_session(true, &partitions, &[result(10); 3], now);
    assert_ne!(id, INVALID_SESSION_ID);
    assert!(id > 0);
    assert_eq!(cache.len(), 1);
    assert_eq!(cache.cached_partitions(), 3);
    assert_eq!(cache.session_epoch(id), Some(1));
}

#[test]
fn incremental_adds_updates_and_forgets() {
    let cache = FetchSessionCache::new();
    let now = Instant::now();
    let id = create(&cache, three(), now);
    let (epoch, partitions) = incremental(
        &cache,
        id,
        1,
        update(
            vec![(key("t", 0), params(42)), (key("v", 3), params(7))],
            vec![key("t", 1)],
        ),
        now,
    );
    assert_eq!(epoch, 2);
    assert_eq!(cache.session_epoch(id), Some(2));
    // Every partition of the session is read, not only those in the request.
    assert_eq!(
        keys(&partitions),
        vec![key("t", 0), key("u", 0), key("v", 3)]
    );
    assert_eq!(partitions[0].1.fetch_offset, 42);
    assert_eq!(partitions[2].1.fetch_offset, 7);
    assert_eq!(cache.cached_partitions(), 3);
    // A request listing nothing reads the session as it stands.
    let (epoch, partitions) = incremental(&cache, id, 2, SessionUpdate::default(), now);
    assert_eq!(epoch, 3);
    assert_eq!(partitions.len(), 3);
    assert_eq!(partitions[0].1.fetch_offset, 42);
}

#[test]
fn epoch_session_and_topic_id_errors_leave_the_session_alone() {
    let cache = FetchSessionCache::new();
    let now = Instant::now();
    let id = create(&cache, three(), now);
    let no_update = || -> SessionUpdate { panic!("not consulted on a session error") };
    assert_eq!(
        cache.new_context(id, 2, false, no_update, now),
        FetchContext::Error(ErrorCode::InvalidFetchSessionEpoch)
    );
    assert_eq!(
        cache.new_context(id, -5, false, no_update, now),
        FetchContext::Error(ErrorCode::InvalidFetchSessionEpoch)
    );
    assert_eq!(
        cache.new_context(id.wrapping_add(1).max(1), 1, false, no_update, now),
        FetchContext::Error(ErrorCode::FetchSessionIdNotFound)
    );
    assert_eq!(
        cache.new_context(0, 3, false, no_update, now),
        FetchContext::Error(ErrorCode::FetchSessionIdNotFound)
    );
    // Created with names (v7-v12), used with ids (v13+).
    assert_eq!(
        cache.new_context(id, 1, true, no_update, now),
        FetchContext::Error(ErrorCode::FetchSessionTopicIdError)
    );
    assert_eq!(cache.session_epoch(id), Some(1));
    incremental(&cache, id, 1, SessionUpdate::default(), now);
    // The same epoch again (a duplicate request) is refused.
    assert_eq!(
        cache.new_context(id, 1, false, no_update, now),
        FetchContext::Error(ErrorCode::InvalidFetchSessionEpoch)
    );
}

#[test]
fn incremental_responses_carry_only_partitions_with_news() {
    let cache = FetchSessionCache::new();
    let now = Instant::now();
    let id = create(&cache, three(), now);
    let (epoch, partitions) = incremental(&cache, id, 1, SessionUpdate::default(), now);
    let mut with_data = result(10);
    with_data.has_records = true;
    let include = cache
        .complete_incremental(
            id,
            epoch,
            &partitions,
            &[result(10), with_data, result(10)],
            now,
        )
        .unwrap();
    assert_eq!(include, vec![false, true, false]);

    // Unchanged: nothing. High watermark, last stable offset, log start offset changes: sent.
    let (epoch, partitions) = incremental(&cache, id, epoch, SessionUpdate::default(), now);
    let lso_moved = PartitionResult {
        last_stable_offset: 11,
        ..result(10)
    };
    let start_moved = PartitionResult {
        log_start_offset: 4,
        ..result(10)
    };
    let include = cache
        .complete_incremental(
            id,
            epoch,
            &partitions,
            &[result(12), lso_moved, start_moved],
            now,
        )
        .unwrap();
    assert_eq!(include, vec![true, true, true]);
    let (epoch, partitions) = incremental(&cache, id, epoch, SessionUpdate::default(), now);
    let include = cache
        .complete_incremental(
            id,
            epoch,
            &partitions,
            &[result(12), lso_moved, start_moved],
            now,
        )
        .unwrap();
    assert_eq!(include, vec![false, false, false]);

    // A preferred read replica is always sent (KIP-392), even with nothing else new.
    let (epoch, partitions) = incremental(&cache, id, epoch, SessionUpdate::default(), now);
    let pointed = PartitionResult {
        has_preferred_replica: true,
        ..result(12)
    };
    let include = cache
        .complete_incremental(
            id,
            epoch,
            &partitions,
            &[pointed, lso_moved, start_moved],
            now,
        )
        .unwrap();
    assert_eq!(include, vec![true, false, false]);

    // An error is always sent, and the partition is sent again when the error clears.
    let (epoch, partitions) = incremental(&cache, id, epoch, SessionUpdate::default(), now);
    let failed = PartitionResult {
        error_code: ErrorCode::UnknownTopicOrPartition.code(),
        ..result(12)
    };
    let include = cache
        .complete_incremental(
            id,
            epoch,
            &partitions,
            &[failed, lso_moved, start_moved],
            now,
        )
        .unwrap();
    assert_eq!(include, vec![true, false, false]);
    let (epoch, partitions) = incremental(&cache, id, epoch, SessionUpdate::default(), now);
    let include = cache
        .complete_incremental(
            id,
            epoch,
            &partitions,
            &[result(12), lso_moved, start_moved],
            now,
        )
        .unwrap();
    assert_eq!(include, vec![true, false, false]);
}

#[test]
fn partitions_added_incrementally_are_sent_once_then_only_on_change() {
    let cache = FetchSessionCache::new();
    let now = Instant::now();
    let id = create(&cache, vec![(key("t", 0), params(0))], now);
    let (epoch, partitions) = incremental(
        &cache,
        id,
        1,
        update(vec![(key("t", 1), params(0))], vec![]),
        now,
    );
    let include = cache
        .complete_incremental(id, epoch, &partitions, &[result(10), result(0)], now)
        .unwrap();
    assert_eq!(include, vec![false, true], "a new partition is sent once");
    let (epoch, partitions) = incremental(&cache, id, epoch, SessionUpdate::default(), now);
    let include = cache
        .complete_incremental(id, epoch, &partitions, &[result(10), result(0)], now)
        .unwrap();
    assert_eq!(include, vec![false, false]);
}

#[test]
fn partitions_that_returned_data_move_to_the_end() {
    let cache = FetchSessionCache::new();
    let now = Instant::now();
    let id = create(&cache, three(), now);
    let (epoch, partitions) = incremental(&cache, id, 1, SessionUpdate::default(), now);
    let mut with_data = result(10);
    with_data.has_records = true;
    cache
        .complete_incremental(
            id,
            epoch,
            &partitions,
            &[with_data, result(10), result(10)],
            now,
        )
        .unwrap();
    let (_, partitions) = incremental(&cache, id, epoch, SessionUpdate::default(), now);
    assert_eq!(
        keys(&partitions),
        vec![key("t", 1), key("u", 0), key("t", 0)]
    );
}

#[test]
fn a_session_used_meanwhile_fails_with_invalid_epoch() {
    let cache = FetchSessionCache::new();
    let now = Instant::now();
    let id = create(&cache, three(), now);
    let (first_epoch, first) = incremental(&cache, id, 1, SessionUpdate::default(), now);
    let (second_epoch, second) = incremental(&cache, id, 2, SessionUpdate::default(), now);
    assert_eq!(
        cache.complete_incremental(id, first_epoch, &first, &[result(10); 3], now),
        Err(ErrorCode::InvalidFetchSessionEpoch)
    );
    assert!(cache
        .complete_incremental(id, second_epoch, &second, &[result(10); 3], now)
        .is_ok());
    cache.new_context(id, FINAL_EPOCH, false, SessionUpdate::default, now);
    assert_eq!(
        cache.complete_incremental(id, second_epoch, &second, &[result(10); 3], now),
        Err(ErrorCode::FetchSessionIdNotFound)
    );
}

#[test]
fn full_fetches_close_the_named_session() {
    let cache = FetchSessionCache::new();
    let now = Instant::now();
    let id = create(&cache, three(), now);
    assert_eq!(
        cache.new_context(id, FINAL_EPOCH, false, SessionUpdate::default, now),
        FetchContext::Sessionless
    );
    assert!(cache.is_empty());
    assert_eq!(cache.cached_partitions(), 0);
    assert_eq!(
        cache.new_context(id, 1, false, SessionUpdate::default, now),
        FetchContext::Error(ErrorCode::FetchSessionIdNotFound)
    );

    // Epoch 0 with a session id closes it and starts a new one.
    let id = create(&cache, three(), now);
    let ctx = cache.new_context(
        id,
        INITIAL_EPOCH,
        false,
        || update(vec![(key("t", 0), params(3))], vec![]),
        now,
    );
    assert!(matches!(ctx, FetchContext::Full { .. }));
    assert!(cache.is_empty());
    let new_id = create(&cache, vec![(key("t", 0), params(3))], now);
    assert_ne!(new_id, INVALID_SESSION_ID);
    assert_eq!(cache.len(), 1);
    assert_eq!(cache.session_epoch(id), None);
    assert_eq!(cache.session_epoch(new_id), Some(1));
}

#[test]
fn forgetting_every_partition_closes_the_session_sessionless() {
    let cache = FetchSessionCache::new();
    let now = Instant::now();
    let id = create(&cache, vec![(key("t", 0), params(0))], now);
    let ctx = cache.new_context(
        id,
        1,
        false,
        || update(vec![], vec![key("t", 0), key("absent", 9)]),
        now,
    );
    assert_eq!(ctx, FetchContext::Sessionless);
    assert!(cache.is_empty());
    assert_eq!(cache.cached_partitions(), 0);
}

#[test]
fn a_full_cache_answers_sessionless_unless_a_smaller_old_session_can_go() {
    let cache = FetchSessionCache::with_limits(SessionLimits {
        max_sessions: 2,
        ..SessionLimits::default()
    });
    let t0 = Instant::now();
    let one = |n: &str| vec![(key(n, 0), params(0))];
    let a = create(&cache, one("a"), t0);
    let b = create(&cache, three(), t0);
    assert_ne!(a, INVALID_SESSION_ID);
    assert_ne!(b, INVALID_SESSION_ID);
    assert_eq!(create(&cache, one("c"), t0), INVALID_SESSION_ID);
    assert_eq!(cache.len(), 2);
    // Young sessions are never evicted, even by a bigger newcomer.
    let four: Vec<_> = (0..4).map(|p| (key("d", p), params(0))).collect();
    assert_eq!(create(&cache, four.clone(), t0), INVALID_SESSION_ID);
    // Both in use (not idle) but older than the eviction time: the bigger newcomer evicts the
    // smallest session.
    let t1 = t0 + Duration::from_secs(100);
    incremental(&cache, a, 1, SessionUpdate::default(), t1);
    incremental(&cache, b, 1, SessionUpdate::default(), t1);
    let t2 = t0 + Duration::from_secs(150);
    assert_eq!(
        create(&cache, one("e"), t2),
        INVALID_SESSION_ID,
        "not bigger than the smallest session"
    );
    let d = create(&cache, four, t2);
    assert_ne!(d, INVALID_SESSION_ID);
    assert_eq!(cache.session_epoch(a), None, "smallest session evicted");
    assert_eq!(cache.session_epoch(b), Some(2));
    assert_eq!(cache.cached_partitions(), 7);
}

#[test]
fn idle_sessions_expire() {
    let cache = FetchSessionCache::new();
    let t0 = Instant::now();
    let idle = create(&cache, three(), t0);
    let busy = create(&cache, three(), t0);
    let t1 = t0 + Duration::from_secs(60);
    incremental(&cache, busy, 1, SessionUpdate::default(), t1);
    // Exactly the expiry time is not yet expired.
    let t2 = t0 + SESSION_IDLE_EXPIRY;
    cache.new_context(0, FINAL_EPOCH, false, SessionUpdate::default, t2);
    assert_eq!(cache.len(), 2);
    let t3 = t2 + Duration::from_millis(1);
    assert_eq!(
        cache.new_context(idle, 1, false, SessionUpdate::default, t3),
        FetchContext::Error(ErrorCode::FetchSessionIdNotFound)
    );
    assert_eq!(cache.len(), 1);
    assert_eq!(cache.cached_partitions(), 3);
    incremental(&cache, busy, 2, SessionUpdate::default(), t3);
    // Expiry runs on any access, including a sessionless fetch.
    cache.new_context(
        0,
        FINAL_EPOCH,
        false,
        SessionUpdate::default,
        t3 + SESSION_IDLE_EXPIRY + Duration::from_secs(1),
    );
    assert!(cache.is_empty());
    assert_eq!(cache.cached_partitions(), 0);
}

#[test]
fn partition_limits_bound_memory() {
    let cache = FetchSessionCache::with_limits(SessionLimits {
        max_partitions_per_session: 3,
        max_cached_partitions: 5,
        ..SessionLimits::default()
    });
    let now = Instant::now();
    let four: Vec<_> = (0..4).map(|p| (key("t", p), params(0))).collect();
    assert_eq!(create(&cache, four, now), INVALID_SESSION_ID);
    assert!(cache.is_empty());
    let a = create(&cache, three(), now);
    assert_ne!(a, INVALID_SESSION_ID);
    // Growing past the per-session limit closes the session.
    let ctx = cache.new_context(
        a,
        1,
        false,
        || update(vec![(key("t", 9), params(0))], vec![]),
        now,
    );
    assert_eq!(ctx, FetchContext::Error(ErrorCode::FetchSessionIdNotFound));
    assert!(cache.is_empty());
    assert_eq!(cache.cached_partitions(), 0);
    // Swapping one partition for another stays within it.
    let a = create(&cache, three(), now);
    let (_, partitions) = incremental(
        &cache,
        a,
        1,
        update(vec![(key("t", 9), params(0))], vec![key("u", 0)]),
        now,
    );
    assert_eq!(partitions.len(), 3);
    // The cache-wide limit: 3 cached, 3 more do not fit, 2 do.
    assert_eq!(create(&cache, three(), now), INVALID_SESSION_ID);
    let two = vec![(key("x", 0), params(0)), (key("x", 1), params(0))];
    let b = create(&cache, two, now);
    assert_ne!(b, INVALID_SESSION_ID);
    assert_eq!(cache.cached_partitions(), 5);
    let ctx = cache.new_context(
        b,
        1,
        false,
        || update(vec![(key("x", 2), params(0))], vec![]),
        now,
    );
    assert_eq!(ctx, FetchContext::Error(ErrorCode::FetchSessionIdNotFound));
    assert_eq!(cache.cached_partitions(), 3);
}

#[test]
fn topic_ids_key_sessions_for_v13() {
    let cache = FetchSessionCache::new();
    let now = Instant::now();
    let id_key = |id: Uuid, partition| PartitionKey {
        topic: TopicKey::Id(id),
        partition,
    };
    let (t, u) = (Uuid::new_v4(), Uuid::new_v4());
    let partitions = vec![(id_key(t, 0), params(0)), (id_key(u, 0), params(0))];
    let id = cache.create_session(true, &partitions, &[result(1), result(1)], now);
    assert_eq!(
        cache.new_context(id, 1, false, SessionUpdate::default, now),
        FetchContext::Error(ErrorCode::FetchSessionTopicIdError)
    );
    let ctx = cache.new_context(id, 1, true, || update(vec![], vec![id_key(t, 0)]), now);
    let FetchContext::Incremental { partitions, .. } = ctx else {
        panic!("expected incremental");
    };
    assert_eq!(keys(&partitions), vec![id_key(u, 0)]);
}
