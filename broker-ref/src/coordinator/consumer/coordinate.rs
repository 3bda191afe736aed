//! The group coordinator's consumer-protocol calls: ConsumerGroupHeartbeat and
//! ConsumerGroupDescribe on the groups it owns, persisted in `__consumer_offsets`.

use std::time::Instant;

use odradek::ErrorCode;
use uuid::Uuid;

use super::group::{self, ConsumerGroup, Heartbeat, HeartbeatAnswer, Limits, Topics};
use super::topics::RegistryTopics;
use crate::clock::now_ms;
use crate::coordinator::group::Group;
use crate::coordinator::GroupCoordinator;

/// A consumer group's state for ConsumerGroupDescribe.
#[derive(Debug, Clone)]
pub struct ConsumerGroupView {
    /// The group.
    pub group: ConsumerGroup,
    /// The assignor its target assignment uses.
    pub assignor: &'static str,
}

impl GroupCoordinator {
    /// Handles ConsumerGroupHeartbeat. `session_timeout_ms` and `heartbeat_interval_ms` are the
    /// group's settings (its overrides, else the broker's defaults).
    pub fn consumer_heartbeat(
        &self,
        group_id: &str,
        hb: Heartbeat,
        session_timeout_ms: i32,
        heartbeat_interval_ms: i32,
    ) -> HeartbeatAnswer {
        if group_id.is_empty() {
            return HeartbeatAnswer::error(
                ErrorCode::InvalidRequest,
                "GroupId can't be empty.",
                &hb.member_id,
            );
        }
        if !self.consumer_protocol {
            return HeartbeatAnswer::error(
                ErrorCode::UnsupportedVersion,
                "The consumer group protocol is not enabled (group.coordinator.rebalance.protocols).",
                &hb.member_id,
            );
        }
        if let Err((code, message)) = group::validate(&hb, &self.consumer_assignors) {
            return HeartbeatAnswer::error(code, message, &hb.member_id);
        }
        if let Err(e) = self.ensure_topic() {
            return HeartbeatAnswer::error(
                ErrorCode::CoordinatorNotAvailable,
                e.to_string(),
                &hb.member_id,
            );
        }
        let limits = self.consumer_limits(
            std::time::Duration::from_millis(session_timeout_ms.max(0) as u64),
            heartbeat_interval_ms,
        );
        let now = Instant::now();
        let mut groups = self.lock();
        let joining = hb.member_epoch == group::JOIN_EPOCH;
        let group = match groups.get_mut(group_id) {
            Some(g) => g,
            None if joining => groups
                .entry(group_id.to_string())
                .or_insert_with(|| Group::new(group_id, now_ms())),
            None => {
                return HeartbeatAnswer::error(
                    ErrorCode::GroupIdNotFound,
                    format!("Consumer group {group_id} not found."),
                    &hb.member_id,
                )
            }
        };
        if group.consumer.is_none() {
            if group.has_members() {
                // A classic group in use: a joining member converts it if the policy allows.
                if !joining {
                    return HeartbeatAnswer::error(
                        ErrorCode::GroupIdNotFound,
                        format!("Group {group_id} is not a consumer group."),
                        &hb.member_id,
                    );
                }
                if let Err((code, message)) = self.upgrade(group) {
                    return HeartbeatAnswer::error(code, message, &hb.member_id);
                }
            } else if !joining {
                return HeartbeatAnswer::error(
                    ErrorCode::GroupIdNotFound,
                    format!("Group {group_id} is not a consumer group."),
                    &hb.member_id,
                );
            }
        }
        if group.consumer.is_none() {
            // An empty classic group (or only offsets) becomes a consumer group; its classic
            // metadata goes.
            let tombstone = crate::coordinator::storage::group_record(group_id, None);
            if let Err(e) = self.append(group_id, vec![tombstone]) {
                return HeartbeatAnswer::error(
                    ErrorCode::CoordinatorNotAvailable,
                    e.to_string(),
                    &hb.member_id,
                );
            }
            group.consumer = Some(ConsumerGroup::new(group_id));
        }
        let was_empty = !group.has_members();
        let topics = RegistryTopics(&self.log.topics);
        let answer = match group.consumer.as_mut() {
            Some(c) => c.heartbeat(hb, &topics, limits, now),
            None => return HeartbeatAnswer::error(ErrorCode::UnknownServerError, "", ""),
        };
        self.maybe_downgrade(group);
        if group.has_members() {
            self.timed().insert(group_id.to_string());
        } else if !was_empty {
            group.empty_since_ms = now_ms();
        }
        match self.persist_consumer(group) {
            Ok(()) => answer,
            Err(code) => HeartbeatAnswer::error(
                code,
                "the group's state could not be written",
                &answer.member_id,
            ),
        }
    }

    /// A consumer group's state for ConsumerGroupDescribe: `Err(GROUP_ID_NOT_FOUND)` for an
    /// unknown group or one of the classic protocol.
    pub fn consumer_describe(&self, group_id: &str) -> Result<ConsumerGroupView, ErrorCode> {
        if !self.consumer_protocol {
            return Err(ErrorCode::UnsupportedVersion);
        }
        let default = self
            .consumer_assignors
            .first()
            .copied()
            .unwrap_or("uniform");
        let groups = self.lock();
        let c = groups
            .get(group_id)
            .and_then(|g| g.consumer.as_ref())
            .ok_or(ErrorCode::GroupIdNotFound)?;
        Ok(ConsumerGroupView {
            assignor: c.current_assignor(default),
            group: c.clone(),
        })
    }

    /// Checks an OffsetFetch v9+ naming a member: for a consumer group, a named member must exist
    /// and fetch with its current epoch (UNKNOWN_MEMBER_ID / STALE_MEMBER_EPOCH); without a
    /// member (an admin), or for other groups, anything goes.
    pub fn validate_fetch(
        &self,
        group_id: &str,
        member_id: Option<&str>,
        epoch: i32,
    ) -> Result<(), ErrorCode> {
        let Some(member_id) = member_id else {
            return Ok(());
        };
        if epoch < 0 && member_id.is_empty() {
            return Ok(());
        }
        let groups = self.lock();
        match groups.get(group_id).and_then(|g| g.consumer.as_ref()) {
            Some(c) => c.validate_fetch(member_id, epoch),
            None => Ok(()),
        }
    }

    /// The limits of consumer groups, with `session_timeout` and `heartbeat_interval_ms` for
    /// consumer-protocol members.
    pub(crate) fn consumer_limits(
        &self,
        session_timeout: std::time::Duration,
        heartbeat_interval_ms: i32,
    ) -> Limits {
        Limits {
            session_timeout,
            heartbeat_interval_ms,
            max_size: self.max_consumer_group_size,
            default_assignor: self
                .consumer_assignors
                .first()
                .copied()
                .unwrap_or("uniform"),
        }
    }

    /// Whether consumer-protocol groups are served (`consumer` is in
    /// `group.coordinator.rebalance.protocols`).
    pub fn consumer_protocol_enabled(&self) -> bool {
        self.consumer_protocol
    }

    /// Names the topics of the broker for `id`.
    pub fn topic_name(&self, id: Uuid) -> Option<String> {
        RegistryTopics(&self.log.topics).name_of(id)
    }
}
