//! Client quota entities (`user`, `client-id`, `ip`, each named or the default) and the quota
//! keys each combination takes, as Kafka's `ClientQuotaEntity` and `QuotaConfig` define them.

use serde::{Deserialize, Serialize};

/// Entity type `user` (the principal's name).
pub const USER: &str = "user";
/// Entity type `client-id`.
pub const CLIENT_ID: &str = "client-id";
/// Entity type `ip` (connection creation rate only).
pub const IP: &str = "ip";

/// `producer_byte_rate`: Produce request bytes per second.
pub const PRODUCER_BYTE_RATE: &str = "producer_byte_rate";
/// `consumer_byte_rate`: Fetch response bytes per second.
pub const CONSUMER_BYTE_RATE: &str = "consumer_byte_rate";
/// `request_percentage`: request handling time, percent of one thread.
pub const REQUEST_PERCENTAGE: &str = "request_percentage";
/// `controller_mutation_rate`: partitions created or deleted per second.
pub const CONTROLLER_MUTATION_RATE: &str = "controller_mutation_rate";
/// `connection_creation_rate`: new connections per second from one IP.
pub const CONNECTION_CREATION_RATE: &str = "connection_creation_rate";

/// How a quota key's value must look (Kafka's `ConfigDef` type for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    /// A whole number up to `i64::MAX`.
    Long,
    /// A whole number up to `i32::MAX`.
    Int,
    /// Any positive number.
    Double,
}

/// The keys of user / client-id entities.
pub const USER_CLIENT_KEYS: &[(&str, KeyType)] = &[
    (PRODUCER_BYTE_RATE, KeyType::Long),
    (CONSUMER_BYTE_RATE, KeyType::Long),
    (REQUEST_PERCENTAGE, KeyType::Double),
    (CONTROLLER_MUTATION_RATE, KeyType::Double),
];

/// The keys of ip entities.
pub const IP_KEYS: &[(&str, KeyType)] = &[(CONNECTION_CREATION_RATE, KeyType::Int)];

/// One component of an entity: a name, or the default of its type.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Name {
    /// `<default>`: every user / client id / IP without a quota of its own.
    Default,
    /// A particular user, client id or IP.
    Named(String),
}

impl Name {
    /// The wire form: `None` for the default.
    pub fn wire(&self) -> Option<&str> {
        match self {
            Name::Default => None,
            Name::Named(n) => Some(n),
        }
    }

    /// From the wire form.
    pub fn from_wire(name: Option<&str>) -> Name {
        name.map_or(Name::Default, |n| Name::Named(n.to_string()))
    }
}

/// A quota entity: the components it names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Entity {
    /// The `user` component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<Name>,
    /// The `client-id` component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<Name>,
    /// The `ip` component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<Name>,
}

impl Entity {
    /// A user / client-id entity.
    pub fn user_client(user: Option<Name>, client_id: Option<Name>) -> Entity {
        Entity {
            user,
            client_id,
            ip: None,
        }
    }

    /// The components as (type, name) pairs, in Kafka's order.
    pub fn components(&self) -> Vec<(&'static str, Option<&str>)> {
        let mut out = Vec::new();
        if let Some(u) = &self.user {
            out.push((USER, u.wire()));
        }
        if let Some(c) = &self.client_id {
            out.push((CLIENT_ID, c.wire()));
        }
        if let Some(i) = &self.ip {
            out.push((IP, i.wire()));
        }
        out
    }

    /// The component of `entity_type`, if the entity has it.
    pub fn component(&self, entity_type: &str) -> Option<&Name> {
        match entity_type {
            USER => self.user.as_ref(),
            CLIENT_ID => self.client_id.as_ref(),
            IP => self.ip.as_ref(),
            _ => None,
        }
    }

    /// How many components it has.
    pub fn len(&self) -> usize {
        usize::from(self.user.is_some())
            + usize::from(self.client_id.is_some())
            + usize::from(self.ip.is_some())
    }

    /// Whether it has no component.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Kafka's rendering, for messages: `{user=alice, client-id=<default>}`.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self
            .components()
            .into_iter()
            .map(|(t, n)| format!("{t}={}", n.unwrap_or("<default>")))
            .collect();
        format!("{{{}}}", parts.join(", "))
    }
}

/// Builds an entity from wire components, with Kafka's messages for what it refuses
/// (`ClientQuotaControlManager.validateEntity`).
pub fn entity_from_wire<'a>(
    components: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
) -> Result<Entity, String> {
    let mut entity = Entity::default();
    for (entity_type, name) in components {
        let slot = match entity_type {
            USER => &mut entity.user,
            CLIENT_ID => &mut entity.client_id,
            IP => &mut entity.ip,
            other => return Err(format!("Unhandled client quota entity type: {other}")),
        };
        if slot.is_some() {
            return Err(format!(
                "Invalid client quota entity, duplicate entity entry {entity_type}"
            ));
        }
        if name == Some("") {
            return Err(format!("Empty {entity_type} not supported"));
        }
        *slot = Some(Name::from_wire(name));
    }
    if entity.is_empty() {
        return Err("Invalid empty client quota entity".into());
    }
    Ok(entity)
}

/// The keys `entity` may take, or Kafka's message for a combination it refuses.
pub fn keys_for(entity: &Entity) -> Result<&'static [(&'static str, KeyType)], String> {
    if let Some(ip) = &entity.ip {
        if entity.user.is_some() || entity.client_id.is_some() {
            return Err(
                "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
                    .into(),
            );
        }
        if let Name::Named(addr) = ip {
            if addr.parse::<std::net::IpAddr>().is_err() {
                return Err(format!("{addr} is not a valid IP or resolvable host."));
            }
        }
        return Ok(IP_KEYS);
    }
    if entity.is_empty() {
        return Err("Invalid empty client quota entity".into());
    }
    Ok(USER_CLIENT_KEYS)
}

/// Checks one quota value (Kafka's `validateQuotaKeyValue`).
pub fn validate_value(
    keys: &[(&'static str, KeyType)],
    key: &str,
    value: f64,
) -> Result<&'static str, String> {
    let Some(&(name, ty)) = keys.iter().find(|(k, _)| *k == key) else {
        return Err(format!("Invalid configuration key {key}"));
    };
    // NaN fails this test too: it is not greater than 0.
    if value.is_nan() || value <= 0.0 {
        return Err(format!("Quota {key} must be greater than 0"));
    }
    let integral = |max: f64, what: &str| {
        if value > max {
            Err(format!("Proposed value for {key} is too large for {what}."))
        } else if (value % 1.0).abs() > 1e-6 {
            Err(format!("{key} cannot be a fractional value."))
        } else {
            Ok(name)
        }
    };
    match ty {
        KeyType::Double if value.is_finite() => Ok(name),
        KeyType::Double => Err(format!("Quota {key} must be a finite number")),
        KeyType::Int => integral(f64::from(i32::MAX), "an INT"),
        KeyType::Long => integral(i64::MAX as f64, "a LONG"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_are_checked_as_kafka_checks_them() {
        assert!(entity_from_wire([]).unwrap_err().contains("empty"));
        assert!(entity_from_wire([("group", Some("g"))])
            .unwrap_err()
            .contains("Unhandled client quota entity type: group"));
        assert!(entity_from_wire([(USER, Some("a")), (USER, Some("b"))])
            .unwrap_err()
            .contains("duplicate"));
        assert!(entity_from_wire([(USER, Some(""))])
            .unwrap_err()
            .contains("Empty user"));
        let e = entity_from_wire([(USER, Some("alice")), (CLIENT_ID, None)]).unwrap();
        assert_eq!(e.describe(), "{user=alice, client-id=<default>}");
        let ip_user = entity_from_wire([(IP, Some("1.2.3.4")), (USER, None)]).unwrap();
        assert!(keys_for(&ip_user).is_err());
        let bad_ip = entity_from_wire([(IP, Some("not-an-ip"))]).unwrap();
        assert!(keys_for(&bad_ip).unwrap_err().contains("not a valid IP"));
    }

    #[test]
    fn values_are_checked_per_key_type() {
        let k = USER_CLIENT_KEYS;
        assert!(validate_value(k, "producer_byte_rate", 1024.0).is_ok());
        assert!(validate_value(k, "producer_byte_rate", 0.0)
            .unwrap_err()
            .contains("must be greater than 0"));
        assert!(validate_value(k, "producer_byte_rate", -5.0).is_err());
        assert!(validate_value(k, "producer_byte_rate", f64::NAN).is_err());
        assert!(validate_value(k, "producer_byte_rate", 1.5)
            .unwrap_err()
            .contains("fractional"));
        assert!(validate_value(k, "request_percentage", 12.5).is_ok());
        assert!(validate_value(k, "request_percentage", f64::INFINITY).is_err());
        assert!(validate_value(k, "connection_creation_rate", 5.0)
            .unwrap_err()
            .contains("Invalid configuration key"));
        assert!(validate_value(IP_KEYS, "connection_creation_rate", 3e9)
            .unwrap_err()
            .contains("too large for an INT"));
    }
}
