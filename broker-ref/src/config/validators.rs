//! Kafka's `ConfigDef` value checks: parsing a value as its type (`ConfigDef.parseType`) and the
//! validators that occur in the Kafka 4.4 tables (`kafka_broker_keys.tsv`,
//! `kafka_group_keys.tsv`), recognised from their `toString()`.
//!
//! Implemented: `Range` (`[a,...]`, `[...,b]`, `[a,...,b]`), a range with one extra allowed value
//! (`[1,...,9] or -1`), `ValidString` and `CaseInsensitiveValidString` (`[a, b]`,
//! `(case insensitive) [A, B]`), `ValidList` (`[a, b]` on a LIST key), `NonEmptyString`,
//! `NonNullString`, `NonEmptyList`, and the share group's `share.auto.offset.reset` check
//! (`latest`, `earliest`, `by_duration:<ISO-8601 duration>`). A validator text not recognised
//! parses as [`Validator::Unrecognised`] and checks nothing; a unit test fails if the tables
//! hold one, so a regenerated table with a new validator is noticed.
//!
//! Messages follow Kafka's `ConfigException`: `Invalid value <v> for configuration <k>: <why>`.

use super::types::ConfigType;

/// A parsed value of a config key.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// BOOLEAN.
    Bool(bool),
    /// INT, SHORT and LONG.
    Int(i64),
    /// DOUBLE.
    Double(f64),
    /// STRING, CLASS and PASSWORD.
    Str(String),
    /// LIST: the comma-separated items, trimmed (an empty value is the empty list).
    List(Vec<String>),
}

/// One end of a [`Validator::Range`]: integral for INT / SHORT / LONG keys, else a double.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// An integral bound.
    Int(i64),
    /// A floating-point bound.
    Double(f64),
}

impl Bound {
    fn parse(text: &str) -> Option<Bound> {
        let t = text.trim();
        t.parse::<i64>()
            .map(Bound::Int)
            .ok()
            .or_else(|| t.parse::<f64>().ok().map(Bound::Double))
    }

    fn as_f64(self) -> f64 {
        match self {
            Bound::Int(i) => i as f64,
            Bound::Double(d) => d,
        }
    }

    /// Kafka prints bounds with Java's `Number.toString`.
    fn render(self) -> String {
        match self {
            Bound::Int(i) => i.to_string(),
            Bound::Double(d) => java_double(d),
        }
    }
}

/// Java's `Double.toString` for the values that occur as bounds (`0.5`, `1.0`).
fn java_double(d: f64) -> String {
    if d.fract() == 0.0 && d.abs() < 1e7 {
        format!("{d:.1}")
    } else {
        d.to_string()
    }
}

/// A value check of Kafka's `ConfigDef`.
#[derive(Debug, Clone, PartialEq)]
pub enum Validator {
    /// No check beyond the type.
    None,
    /// `ConfigDef.Range`: inclusive bounds.
    Range {
        /// Lowest allowed value.
        min: Option<Bound>,
        /// Highest allowed value.
        max: Option<Bound>,
    },
    /// A range or one extra value (`compression.gzip.level`: `[1,...,9] or -1`).
    RangeOr {
        /// Lowest value of the range.
        min: i64,
        /// Highest value of the range.
        max: i64,
        /// The extra allowed value.
        or: i64,
    },
    /// `ValidString` / `CaseInsensitiveValidString`: one of a set of strings.
    OneOf {
        /// The allowed strings.
        items: Vec<String>,
        /// Whether case is ignored.
        case_insensitive: bool,
    },
    /// `ValidList`: every item of a LIST value is one of a set.
    ListOf(Vec<String>),
    /// `NonEmptyString`.
    NonEmptyString,
    /// `NonNullString` (a value given as text is never null).
    NonNullString,
    /// `NonEmptyList`.
    NonEmptyList,
    /// `share.auto.offset.reset`: `latest`, `earliest` or `by_duration:<ISO-8601 duration>`.
    ShareAutoOffsetReset,
    /// A validator this module does not know (checks nothing; the table tests forbid it).
    Unrecognised(String),
}

fn bracket_items(text: &str) -> Option<Vec<String>> {
    let inner = text.strip_prefix('[')?.strip_suffix(']')?;
    Some(
        inner
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
    )
}

fn parse_range(text: &str) -> Option<(Option<Bound>, Option<Bound>)> {
    let inner = text.strip_prefix('[')?.strip_suffix(']')?;
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    match parts.as_slice() {
        [min, "..."] => Some((Some(Bound::parse(min)?), None)),
        ["...", max] => Some((None, Some(Bound::parse(max)?))),
        [min, "...", max] => Some((Some(Bound::parse(min)?), Some(Bound::parse(max)?))),
        _ => None,
    }
}

impl Validator {
    /// Recognises a validator from its `toString()` (`text`) on a key of type `ty`.
    pub fn parse(text: &str, ty: ConfigType) -> Validator {
        let t = text.trim();
        match t {
            "" => return Validator::None,
            "non-empty string" => return Validator::NonEmptyString,
            "non-null string" => return Validator::NonNullString,
            "non-empty list" => return Validator::NonEmptyList,
            "[latest, earliest, by_duration:PnDTnHnMn.nS]" => {
                return Validator::ShareAutoOffsetReset
            }
            _ => {}
        }
        if let Some((range, or)) = t.split_once(" or ") {
            if let (Some((Some(Bound::Int(min)), Some(Bound::Int(max)))), Ok(or)) =
                (parse_range(range), or.trim().parse::<i64>())
            {
                return Validator::RangeOr { min, max, or };
            }
        }
        if let Some((min, max)) = parse_range(t) {
            return Validator::Range { min, max };
        }
        if let Some(rest) = t.strip_prefix("(case insensitive)") {
            if let Some(items) = bracket_items(rest.trim()) {
                return Validator::OneOf {
                    items,
                    case_insensitive: true,
                };
            }
        }
        if let Some(items) = bracket_items(t) {
            return if ty == ConfigType::List {
                Validator::ListOf(items)
            } else {
                Validator::OneOf {
                    items,
                    case_insensitive: false,
                }
            };
        }
        Validator::Unrecognised(t.to_string())
    }

    /// Checks a parsed value; the error is Kafka's reason text (after `for configuration k: `).
    pub fn check(&self, value: &Value) -> Result<(), String> {
        match (self, value) {
            (Validator::None | Validator::NonNullString | Validator::Unrecognised(_), _) => Ok(()),
            (Validator::Range { min, max }, v) => {
                let x = match v {
                    Value::Int(i) => *i as f64,
                    Value::Double(d) => *d,
                    _ => return Ok(()),
                };
                let int = |b: &Bound| match (b, v) {
                    (Bound::Int(b), Value::Int(i)) => Some((*i).cmp(b)),
                    _ => None,
                };
                if let Some(min) = min {
                    let below = int(min).map_or(x < min.as_f64(), |o| o.is_lt());
                    if below {
                        return Err(format!("Value must be at least {}", min.render()));
                    }
                }
                if let Some(max) = max {
                    let above = int(max).map_or(x > max.as_f64(), |o| o.is_gt());
                    if above {
                        return Err(format!("Value must be no more than {}", max.render()));
                    }
                }
                Ok(())
            }
            (Validator::RangeOr { min, max, or }, Value::Int(i)) => {
                if *i == *or || (*min..=*max).contains(i) {
                    Ok(())
                } else {
                    Err(format!("Value must be between {min} and {max} or {or}"))
                }
            }
            (
                Validator::OneOf {
                    items,
                    case_insensitive,
                },
                Value::Str(s),
            ) => {
                let ok = items.iter().any(|i| {
                    if *case_insensitive {
                        i.eq_ignore_ascii_case(s)
                    } else {
                        i == s
                    }
                });
                if ok {
                    Ok(())
                } else if *case_insensitive {
                    Err(format!(
                        "String must be one of (case insensitive): {}",
                        items.join(", ")
                    ))
                } else {
                    Err(format!("String must be one of: {}", items.join(", ")))
                }
            }
            (Validator::ListOf(items), Value::List(values)) => {
                match values.iter().find(|v| !items.contains(v)) {
                    None => Ok(()),
                    Some(_) => Err(format!("String must be one of: {}", items.join(", "))),
                }
            }
            (Validator::NonEmptyString, Value::Str(s)) if s.is_empty() => {
                Err("String must be non-empty".to_string())
            }
            (Validator::NonEmptyList, Value::List(l)) if l.is_empty() => {
                Err("Empty list".to_string())
            }
            (Validator::ShareAutoOffsetReset, Value::Str(s)) => check_share_reset(s),
            _ => Ok(()),
        }
    }

    /// The item a [`Validator::ListOf`] refuses, which Kafka's message names as the value.
    pub fn offending_item<'a>(&self, value: &'a Value) -> Option<&'a str> {
        match (self, value) {
            (Validator::ListOf(items), Value::List(values)) => values
                .iter()
                .find(|v| !items.contains(v))
                .map(String::as_str),
            _ => None,
        }
    }
}

fn check_share_reset(s: &str) -> Result<(), String> {
    let lower = s.to_ascii_lowercase();
    let ok = lower == "latest"
        || lower == "earliest"
        || lower
            .strip_prefix("by_duration:")
            .is_some_and(is_iso_duration);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "Invalid value `{s}` for configuration share.auto.offset.reset. The value must be \
             either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
        ))
    }
}

/// Java's `Duration.parse` shape: `PnDTnHnMn.nS` (case-insensitive, parts optional, not negative).
fn is_iso_duration(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('p') else {
        return false;
    };
    let (days, time) = match rest.split_once('t') {
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    let number = |t: &str, decimals: bool| {
        !t.is_empty()
            && t.chars().filter(|c| *c == '.').count() <= usize::from(decimals)
            && t.chars()
                .all(|c| c.is_ascii_digit() || (decimals && c == '.'))
    };
    let day_ok = days.is_empty() || days.strip_suffix('d').is_some_and(|n| number(n, false));
    let time_ok = match time {
        None => !days.is_empty(),
        Some(t) => {
            let mut rest = t;
            let mut any = false;
            for (unit, decimals) in [('h', false), ('m', false), ('s', true)] {
                if let Some(pos) = rest.find(unit) {
                    if !number(&rest[..pos], decimals) {
                        return false;
                    }
                    rest = &rest[pos + 1..];
                    any = true;
                }
            }
            any && rest.is_empty()
        }
    };
    day_ok && time_ok
}

/// Parses `raw` as a value of type `ty` the way Kafka's `ConfigDef.parseType` does; the error is
/// Kafka's reason text.
pub fn parse_value(ty: ConfigType, raw: &str) -> Result<Value, String> {
    let t = raw.trim();
    let number = |what: &str| format!("Not a number of type {what}");
    match ty {
        ConfigType::Boolean => {
            if t.eq_ignore_ascii_case("true") {
                Ok(Value::Bool(true))
            } else if t.eq_ignore_ascii_case("false") {
                Ok(Value::Bool(false))
            } else {
                Err("Expected value to be either true or false".to_string())
            }
        }
        ConfigType::Int => t
            .parse::<i32>()
            .map(|i| Value::Int(i.into()))
            .map_err(|_| number("INT")),
        ConfigType::Short => t
            .parse::<i16>()
            .map(|i| Value::Int(i.into()))
            .map_err(|_| number("SHORT")),
        ConfigType::Long => t.parse::<i64>().map(Value::Int).map_err(|_| number("LONG")),
        ConfigType::Double => t
            .parse::<f64>()
            .ok()
            .filter(|d| !d.is_nan() || t.eq_ignore_ascii_case("nan"))
            .map(Value::Double)
            .ok_or_else(|| number("DOUBLE")),
        ConfigType::String | ConfigType::Class => Ok(Value::Str(t.to_string())),
        ConfigType::Password => Ok(Value::Str(raw.to_string())),
        ConfigType::List => Ok(Value::List(if t.is_empty() {
            Vec::new()
        } else {
            t.split(',').map(|s| s.trim().to_string()).collect()
        })),
    }
}

/// Parses and validates `raw` for key `name`: Kafka's full message on failure
/// (`Invalid value <raw> for configuration <name>: <why>`).
pub fn check(
    name: &str,
    ty: ConfigType,
    validator: &Validator,
    raw: &str,
) -> Result<Value, String> {
    let invalid = |shown: &str, why: String| {
        let shown = if ty == ConfigType::Password {
            "[hidden]"
        } else {
            shown
        };
        format!("Invalid value {shown} for configuration {name}: {why}")
    };
    let value = parse_value(ty, raw).map_err(|why| invalid(raw, why))?;
    validator.check(&value).map_err(|why| {
        let shown = validator.offending_item(&value).unwrap_or(raw);
        invalid(shown, why)
    })?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str, ty: ConfigType) -> Validator {
        Validator::parse(text, ty)
    }

    #[test]
    fn recognises_kafka_validator_texts() {
        assert_eq!(
            v("[1,...]", ConfigType::Int),
            Validator::Range {
                min: Some(Bound::Int(1)),
                max: None
            }
        );
        assert_eq!(
            v("[0,...,0.5]", ConfigType::Double),
            Validator::Range {
                min: Some(Bound::Int(0)),
                max: Some(Bound::Double(0.5))
            }
        );
        assert_eq!(
            v("[1,...,9] or -1", ConfigType::Int),
            Validator::RangeOr {
                min: 1,
                max: 9,
                or: -1
            }
        );
        assert_eq!(
            v("[compact, delete]", ConfigType::List),
            Validator::ListOf(vec!["compact".into(), "delete".into()])
        );
        assert!(matches!(
            v("(case insensitive) [ES256, RS256]", ConfigType::String),
            Validator::OneOf {
                case_insensitive: true,
                ..
            }
        ));
        assert!(matches!(
            v("something new", ConfigType::String),
            Validator::Unrecognised(_)
        ));
    }

    #[test]
    fn messages_match_kafka() {
        // Measured on Apache Kafka 4.4 (IncrementalAlterConfigs on the BROKER resource).
        let range = v("[0,...]", ConfigType::Int);
        assert_eq!(
            check("message.max.bytes", ConfigType::Int, &range, "abc").unwrap_err(),
            "Invalid value abc for configuration message.max.bytes: Not a number of type INT"
        );
        assert_eq!(
            check("message.max.bytes", ConfigType::Int, &range, "-5").unwrap_err(),
            "Invalid value -5 for configuration message.max.bytes: Value must be at least 0"
        );
        let codecs = v(
            "[uncompressed, zstd, lz4, snappy, gzip, producer]",
            ConfigType::String,
        );
        assert_eq!(
            check("compression.type", ConfigType::String, &codecs, "foo").unwrap_err(),
            "Invalid value foo for configuration compression.type: String must be one of: \
             uncompressed, zstd, lz4, snappy, gzip, producer"
        );
        let policy = v("[compact, delete]", ConfigType::List);
        assert_eq!(
            check(
                "log.cleanup.policy",
                ConfigType::List,
                &policy,
                "delete,foo"
            )
            .unwrap_err(),
            "Invalid value foo for configuration log.cleanup.policy: String must be one of: \
             compact, delete"
        );
        assert!(check("log.cleanup.policy", ConfigType::List, &policy, "").is_ok());
        let int = Validator::None;
        assert!(check("x", ConfigType::Int, &int, "2147483648").is_err());
        assert!(check("x", ConfigType::Short, &int, "40000").is_err());
        assert_eq!(
            check("x", ConfigType::Long, &int, " 12 ").unwrap(),
            Value::Int(12)
        );
        assert!(check("x", ConfigType::Boolean, &int, "TRUE").is_ok());
        assert!(check("x", ConfigType::Boolean, &int, "yes").is_err());
    }

    #[test]
    fn long_bounds_compare_exactly() {
        let r = v("[1,...]", ConfigType::Long);
        assert!(r.check(&Value::Int(i64::MAX)).is_ok());
        assert!(r.check(&Value::Int(0)).is_err());
        let gz = v("[1,...,9] or -1", ConfigType::Int);
        assert!(gz.check(&Value::Int(-1)).is_ok());
        assert!(gz.check(&Value::Int(0)).is_err());
        let ratio = v("[0,...,1]", ConfigType::Double);
        assert!(ratio.check(&Value::Double(1.5)).is_err());
    }

    #[test]
    fn share_auto_offset_reset() {
        let s = Validator::ShareAutoOffsetReset;
        for ok in [
            "latest",
            "earliest",
            "by_duration:PT1H",
            "by_duration:P1DT2H3M4.5S",
        ] {
            assert!(s.check(&Value::Str(ok.into())).is_ok(), "{ok}");
        }
        for bad in [
            "bogus",
            "by_duration:",
            "by_duration:P",
            "by_duration:PT",
            "by_duration:1H",
        ] {
            assert!(s.check(&Value::Str(bad.into())).is_err(), "{bad}");
        }
    }
}
