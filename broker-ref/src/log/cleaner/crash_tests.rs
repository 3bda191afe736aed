//! The cleaner under crashes and concurrent changes: interrupted swaps are completed or rolled
//! back on open, and segments that change between plan and commit are never replaced.

use std::fs;

use odradek::records::Compression;

use super::super::segment::{segment_path, INDEX_EXT, LOG_EXT, TIME_INDEX_EXT};
use super::super::test_util::{files, part_dir, NOW};
use super::swap::{self, suffixed_path, CLEANED_SUFFIX, SWAP_SUFFIX};
use super::test_support::*;
use super::*;

/// A log whose first pass leaves small cleaned segments, plus a second round of dirty data, so
/// the next pass merges several segments into one group.
fn prepared(root: &std::path::Path) -> (Log, Vec<Entry>) {
    let mut log = open_log(root, compact_config());
    let mut history = Vec::new();
    fill(&mut log, &mut history, Compression::Lz4, 4, 6);
    log.roll().unwrap();
    log.clean(NOW, &CleanerOptions::default()).unwrap().unwrap();
    fill(&mut log, &mut history, Compression::Lz4, 4, 6);
    log.roll().unwrap();
    (log, history)
}

/// Checks what any crash must leave: a readable log whose records are original records at
/// their original offsets, holding the latest value of every key, with no temporary files.
fn check_valid(log: &Log, history: &[Entry]) {
    let (records, _) = read_log(log);
    for r in &records {
        assert!(history.contains(r), "{r:?} was never written");
    }
    for latest in model(history, log.log_end_offset(), true) {
        assert!(records.contains(&latest), "lost {latest:?}");
    }
}

fn no_temporary_files(root: &std::path::Path) {
    assert!(files(root)
        .iter()
        .all(|n| !n.ends_with(".cleaned") && !n.ends_with(".swap")));
}

fn built_with_merge(log: &Log) -> BuiltCleaning {
    let plan = log
        .plan_cleaning(NOW, &CleanerOptions::default())
        .unwrap()
        .unwrap();
    let built = plan.build().unwrap();
    assert!(
        built.groups.iter().any(|g| g.members.len() > 1),
        "the scenario should merge segments"
    );
    built
}

#[test]
fn crash_before_commit_keeps_the_old_segments() {
    let dir = tempfile::tempdir().unwrap();
    let (log, history) = prepared(dir.path());
    let before = read_log(&log).0;
    let built = built_with_merge(&log);
    let base = built.groups[0].base;
    assert!(suffixed_path(&part_dir(dir.path()), base, LOG_EXT, CLEANED_SUFFIX).exists());
    std::mem::forget(built); // the process dies: nothing removes the files
    drop(log);
    let mut log = open_log(dir.path(), compact_config());
    no_temporary_files(dir.path());
    assert_eq!(read_log(&log).0, before);
    // The next pass does the work.
    log.clean(NOW, &CleanerOptions::default()).unwrap().unwrap();
    assert_eq!(
        read_log(&log).0,
        model(&history, log.log_end_offset(), true)
    );
}

#[test]
fn crash_between_index_and_log_renames_keeps_the_old_segments() {
    let dir = tempfile::tempdir().unwrap();
    let (log, history) = prepared(dir.path());
    let before = read_log(&log).0;
    let built = built_with_merge(&log);
    let root = part_dir(dir.path());
    let base = built.groups[0].base;
    for ext in [INDEX_EXT, TIME_INDEX_EXT] {
        fs::rename(
            suffixed_path(&root, base, ext, CLEANED_SUFFIX),
            suffixed_path(&root, base, ext, SWAP_SUFFIX),
        )
        .unwrap();
    }
    std::mem::forget(built);
    drop(log);
    let log = open_log(dir.path(), compact_config());
    no_temporary_files(dir.path());
    assert_eq!(read_log(&log).0, before);
    check_valid(&log, &history);
}

/// Commits the first merged group, then runs `after_commit` (the part of the install that
/// happened before the crash), then reopens.
fn crash_after_commit(after_commit: impl FnOnce(&std::path::Path, i64, &[i64])) {
    let dir = tempfile::tempdir().unwrap();
    let (log, history) = prepared(dir.path());
    let root = part_dir(dir.path());
    let built = built_with_merge(&log);
    let group = built.groups.iter().find(|g| g.members.len() > 1).unwrap();
    let members: Vec<i64> = group.members.iter().map(|m| m.base).collect();
    swap::commit(&root, group.base).unwrap();
    after_commit(&root, group.base, &members);
    drop(built);
    drop(log);
    let log = open_log(dir.path(), compact_config());
    no_temporary_files(dir.path());
    check_valid(&log, &history);
    // The swapped group now holds one segment.
    assert!(log.segments.contains_key(&members[0]));
    for m in &members[1..] {
        let path = segment_path(&root, *m, LOG_EXT);
        if !path.exists() {
            assert!(!log.segments.contains_key(m));
        }
    }
    // Its indexes were rebuilt and agree with the data: a lookup at every offset works.
    for offset in log.log_start_offset()..log.log_end_offset() {
        log.read(offset, 1 << 20, log.log_end_offset(), true)
            .unwrap();
    }
    // After another pass the log is exactly compacted.
    let mut log = log;
    log.clean(NOW, &CleanerOptions::default()).unwrap();
    assert_eq!(
        read_log(&log).0,
        model(&history, log.log_end_offset(), true)
    );
}

#[test]
fn crash_right_after_the_commit_point_completes_the_swap() {
    crash_after_commit(|_, _, _| {});
}

#[test]
fn crash_after_deleting_some_old_segments_completes_the_swap() {
    crash_after_commit(|root, _, members| {
        for &m in members.iter().rev().take(members.len() - 1) {
            for ext in [LOG_EXT, INDEX_EXT, TIME_INDEX_EXT] {
                fs::remove_file(segment_path(root, m, ext)).unwrap();
            }
        }
    });
}

#[test]
fn crash_after_renaming_the_indexes_completes_the_swap() {
    crash_after_commit(|root, base, members| {
        for &m in members.iter().rev() {
            for ext in [LOG_EXT, INDEX_EXT, TIME_INDEX_EXT] {
                fs::remove_file(segment_path(root, m, ext)).unwrap();
            }
        }
        for ext in [INDEX_EXT, TIME_INDEX_EXT] {
            fs::rename(
                suffixed_path(root, base, ext, SWAP_SUFFIX),
                segment_path(root, base, ext),
            )
            .unwrap();
        }
    });
}

#[test]
fn reads_during_a_pass_see_the_old_data_and_appends_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, mut history) = prepared(dir.path());
    let before = read_log(&log).0;
    let plan = log
        .plan_cleaning(NOW, &CleanerOptions::default())
        .unwrap()
        .unwrap();
    let built = plan.build().unwrap();
    // The log is unchanged until the commit, and keeps accepting appends and rolls.
    assert_eq!(read_log(&log).0, before);
    put(
        &mut log,
        &mut history,
        Compression::None,
        NOW,
        &[(Some("key-1"), Some("late"))],
    );
    log.roll().unwrap();
    put(
        &mut log,
        &mut history,
        Compression::None,
        NOW,
        &[(Some("key-2"), Some("later"))],
    );
    let outcome = log.commit_cleaning(built).unwrap();
    assert!(outcome.checkpoint_advanced);
    assert_eq!(outcome.groups_abandoned, 0);
    // Cleaned up to the plan's end; everything after it untouched.
    assert_eq!(read_log(&log).0, model(&history, outcome.end_offset, true));
}

#[test]
fn segments_removed_by_retention_meanwhile_are_not_resurrected() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, history) = prepared(dir.path());
    let built = built_with_merge(&log);
    // DeleteRecords removes every segment of the first group (and raises the log start offset).
    let first = &built.groups[0];
    let cut = first.end;
    log.delete_records_before(cut).unwrap();
    assert!(!log.segments.contains_key(&first.base));
    let outcome = log.commit_cleaning(built).unwrap();
    assert!(outcome.groups_abandoned >= 1);
    assert!(
        outcome.checkpoint_advanced,
        "a group that is gone entirely is no reason to redo"
    );
    assert_eq!(log.log_start_offset(), cut);
    assert!(log.segments.keys().all(|&b| b >= cut));
    let records = read_log(&log).0;
    assert!(records
        .iter()
        .all(|r| r.offset >= cut && history.contains(r)));
    no_temporary_files(dir.path());
}

#[test]
fn a_group_that_changed_meanwhile_is_abandoned_and_redone() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, history) = prepared(dir.path());
    let checkpoint = log.cleaner_checkpoint();
    let built = built_with_merge(&log);
    let group = built.groups.iter().find(|g| g.members.len() > 1).unwrap();
    // DeleteRecords up to the second member removes only the first member of the group.
    let cut = group.members[1].base;
    log.delete_records_before(cut).unwrap();
    let outcome = log.commit_cleaning(built).unwrap();
    assert!(outcome.groups_abandoned >= 1);
    assert!(!outcome.checkpoint_advanced);
    assert_eq!(log.cleaner_checkpoint(), checkpoint);
    no_temporary_files(dir.path());
    let records = read_log(&log).0;
    assert!(records.iter().all(|r| history.contains(r)));
    log.clean(NOW, &CleanerOptions::default()).unwrap().unwrap();
    assert_eq!(
        read_log(&log).0,
        model(&history, log.log_end_offset(), true)
            .into_iter()
            .filter(|e| e.offset >= log.log_start_offset())
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_dropped_build_leaves_no_files() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = prepared(dir.path());
    let built = built_with_merge(&log);
    drop(built);
    no_temporary_files(dir.path());
}
