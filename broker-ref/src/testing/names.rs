//! API keys and error codes by name, as the language bindings' testing APIs take them:
//! `"Produce"`, `"OffsetCommit"` or `"OFFSET_COMMIT"` or `"8"`; `"NOT_LEADER_OR_FOLLOWER"` or
//! `"6"`.

use kafka_protocol::messages::ApiKey;
use odradek::ErrorCode;

use crate::{Error, Result};

fn normalize(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '_' && *c != '-' && !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect()
}

/// An API key from its number or its name (Kafka's `Produce` / `PRODUCE`, any case,
/// underscores ignored).
pub fn api_key(name: &str) -> Result<ApiKey> {
    if let Ok(n) = name.trim().parse::<i16>() {
        return api_key_from_number(n);
    }
    let wanted = normalize(name);
    ApiKey::iter()
        .find(|k| normalize(&format!("{k:?}")) == wanted)
        .ok_or_else(|| Error::Testing(format!("unknown API `{name}`")))
}

/// An API key from its number.
pub fn api_key_from_number(n: i16) -> Result<ApiKey> {
    ApiKey::try_from(n).map_err(|_| Error::Testing(format!("unknown API key {n}")))
}

/// The name of an API key (`Produce`).
pub fn api_name(key: ApiKey) -> &'static str {
    odradek::protocol::api_name(key as i16)
}

/// An error code from its number or its protocol name (`NOT_LEADER_OR_FOLLOWER`, any case).
pub fn error_code(name: &str) -> Result<ErrorCode> {
    let trimmed = name.trim();
    if let Ok(n) = trimmed.parse::<i16>() {
        return Ok(ErrorCode::from_code(n));
    }
    ErrorCode::from_name(&trimmed.to_ascii_uppercase())
        .ok_or_else(|| Error::Testing(format!("unknown error code `{name}`")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers() {
        assert_eq!(api_key("Produce").unwrap(), ApiKey::Produce);
        assert_eq!(api_key("OFFSET_COMMIT").unwrap(), ApiKey::OffsetCommit);
        assert_eq!(api_key("offsetcommit").unwrap(), ApiKey::OffsetCommit);
        assert_eq!(api_key("1").unwrap(), ApiKey::Fetch);
        assert!(api_key("Nope").is_err());
        assert!(api_key("9999").is_err());
        assert_eq!(api_name(ApiKey::FindCoordinator), "FindCoordinator");
        assert_eq!(
            error_code("not_leader_or_follower").unwrap(),
            ErrorCode::NotLeaderOrFollower
        );
        assert_eq!(
            error_code("15").unwrap(),
            ErrorCode::CoordinatorNotAvailable
        );
        assert!(error_code("NOPE").is_err());
    }
}
