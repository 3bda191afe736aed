//! The broker's topics as consumer groups see them (the [`Topics`] a group's heartbeat reads).

use uuid::Uuid;

use super::group::Topics;
use crate::partition::TopicRegistry;

/// The broker's topics as a consumer group sees them (internal topics are never subscribed).
pub struct RegistryTopics<'a>(pub &'a TopicRegistry);

impl Topics for RegistryTopics<'_> {
    fn lookup(&self, name: &str) -> Option<(Uuid, i32)> {
        self.0
            .get(name)
            .filter(|t| !t.is_internal())
            .map(|t| (t.id, t.partition_count()))
    }

    fn names(&self) -> Vec<String> {
        self.0
            .list()
            .into_iter()
            .filter(|t| !t.is_internal())
            .map(|t| t.name.clone())
            .collect()
    }

    fn name_of(&self, id: Uuid) -> Option<String> {
        self.0.get_by_id(id).map(|t| t.name.clone())
    }
}
