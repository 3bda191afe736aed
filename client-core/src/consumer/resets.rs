//! Per-topic `auto.offset.reset` (KafkaJS's `subscribe({ topic, fromBeginning })`, which a
//! Kafka consumer's single property cannot say): topics named or matched by a pattern use the
//! policy given for them; every other topic uses the consumer's `auto.offset.reset`.

use std::sync::RwLock;

use crate::config::OffsetReset;

/// Which topics a per-topic policy covers.
#[derive(Debug, Clone)]
pub enum TopicMatch {
    /// Exactly this topic.
    Name(String),
    /// Every topic the (anchored by the caller, if wanted) regular expression matches.
    Pattern(regex::Regex),
}

impl TopicMatch {
    /// A pattern rule from a regular expression with [`crate::Consumer::subscribe_pattern`]'s
    /// syntax (unanchored: anchor it with `^...$` to match whole names).
    pub fn pattern(re: &str) -> crate::Result<TopicMatch> {
        regex::Regex::new(re)
            .map(TopicMatch::Pattern)
            .map_err(|e| crate::Error::config("pattern", e.to_string()))
    }

    fn matches(&self, topic: &str) -> bool {
        match self {
            TopicMatch::Name(n) => n == topic,
            TopicMatch::Pattern(re) => re.is_match(topic),
        }
    }
}

/// The per-topic policies of one consumer, first match wins.
#[derive(Debug, Default)]
pub(crate) struct TopicResets(RwLock<Vec<(TopicMatch, OffsetReset)>>);

impl TopicResets {
    /// Replaces the policies.
    pub fn set(&self, rules: Vec<(TopicMatch, OffsetReset)>) {
        if let Ok(mut r) = self.0.write() {
            *r = rules;
        }
    }

    /// `topic`'s policy: its rule's, else `default`.
    pub fn policy(&self, topic: &str, default: OffsetReset) -> OffsetReset {
        self.0
            .read()
            .ok()
            .and_then(|r| r.iter().find(|(m, _)| m.matches(topic)).map(|(_, p)| *p))
            .unwrap_or(default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_patterns_override_the_default_first_match_wins() {
        let r = TopicResets::default();
        assert_eq!(r.policy("a", OffsetReset::Latest), OffsetReset::Latest);
        r.set(vec![
            (TopicMatch::Name("a".into()), OffsetReset::Earliest),
            (
                TopicMatch::Pattern(regex::Regex::new("^log-").unwrap()),
                OffsetReset::Earliest,
            ),
            (
                TopicMatch::Pattern(regex::Regex::new(".*").unwrap()),
                OffsetReset::None,
            ),
        ]);
        assert_eq!(r.policy("a", OffsetReset::Latest), OffsetReset::Earliest);
        assert_eq!(
            r.policy("log-1", OffsetReset::Latest),
            OffsetReset::Earliest
        );
        assert_eq!(r.policy("b", OffsetReset::Latest), OffsetReset::None);
    }
}
