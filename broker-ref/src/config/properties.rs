//! `server.properties` syntax: `key=value` or `key: value` lines, `#` / `!` comments, backslash
//! line continuations.

use crate::{Error, Result};

/// Parses `server.properties` text: `key=value` or `key: value` lines, `#`/`!` comments,
/// backslash line continuations.
pub fn parse_properties(text: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut pending = String::new();
    for raw in text.lines() {
        let line = raw.trim_start();
        if pending.is_empty() && (line.is_empty() || line.starts_with('#') || line.starts_with('!'))
        {
            continue;
        }
        if let Some(stripped) = line.strip_suffix('\\') {
            pending.push_str(stripped);
            continue;
        }
        pending.push_str(line);
        let entry = std::mem::take(&mut pending);
        let split = entry.find(['=', ':']).ok_or_else(|| {
            Error::config(
                entry.trim().to_string(),
                "line has no `=`: expected key=value",
            )
        })?;
        let (k, v) = entry.split_at(split);
        out.push((k.trim().to_string(), v[1..].trim().to_string()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax() {
        let text = "# comment\n! also\nnum.partitions = 4\nlog.dirs: /tmp/a,/tmp/b\nlisteners=PLAINTEXT://\\\n  127.0.0.1:0\n";
        let entries = parse_properties(text).unwrap();
        assert_eq!(entries[0], ("num.partitions".into(), "4".into()));
        assert_eq!(entries[1], ("log.dirs".into(), "/tmp/a,/tmp/b".into()));
        assert_eq!(
            entries[2],
            ("listeners".into(), "PLAINTEXT://127.0.0.1:0".into())
        );
        assert!(parse_properties("just-a-key").is_err());
    }
}
