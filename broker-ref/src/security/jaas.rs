//! `sasl.jaas.config` in Kafka's syntax (`JaasConfig`): one login module, its control flag and
//! `key=value` options, values quoted (`"..."` with backslash escapes) or bare, ending in `;`:
//!
//! ```text
//! org.apache.kafka.common.security.plain.PlainLoginModule required
//!     username="admin" password="admin-secret" user_alice="alice-secret";
//! ```
//!
//! Option values are kept as [`Secret`]s: JAAS options carry passwords.

use std::collections::BTreeMap;

use super::secret::Secret;

/// A parsed JAAS configuration.
#[derive(Debug, Clone)]
pub struct JaasConfig {
    /// The login module class.
    pub module: String,
    /// `required`, `requisite`, `sufficient` or `optional`.
    pub flag: String,
    /// The options (values redacted in `Debug`).
    pub options: BTreeMap<String, Secret<String>>,
}

impl JaasConfig {
    /// An option's value.
    pub fn option(&self, name: &str) -> Option<&str> {
        self.options.get(name).map(|v| v.expose().as_str())
    }
}

#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    Quoted(String),
    Eq,
    Semi,
}

fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '=' {
            chars.next();
            out.push(Token::Eq);
        } else if c == ';' {
            chars.next();
            out.push(Token::Semi);
        } else if c == '"' || c == '\'' {
            let quote = c;
            chars.next();
            let mut s = String::new();
            loop {
                match chars.next() {
                    None => return Err("unterminated quoted value".into()),
                    Some('\\') => match chars.next() {
                        Some('n') => s.push('\n'),
                        Some('t') => s.push('\t'),
                        Some(e) => s.push(e),
                        None => return Err("unterminated quoted value".into()),
                    },
                    Some(ch) if ch == quote => break,
                    Some(ch) => s.push(ch),
                }
            }
            out.push(Token::Quoted(s));
        } else if c == '/' && text.contains("/*") {
            return Err("comments are not supported".into());
        } else {
            let mut s = String::new();
            while let Some(&ch) = chars.peek() {
                if ch.is_whitespace() || ch == '=' || ch == ';' || ch == '"' || ch == '\'' {
                    break;
                }
                s.push(ch);
                chars.next();
            }
            out.push(Token::Word(s));
        }
    }
    Ok(out)
}

/// Parses a `sasl.jaas.config` value. Errors say what is wrong, never the values.
pub fn parse(text: &str) -> Result<JaasConfig, String> {
    let toks = tokens(text)?;
    let mut it = toks.into_iter().peekable();
    let module = match it.next() {
        Some(Token::Word(w)) => w,
        _ => return Err("expected a login module class name".into()),
    };
    let flag = match it.next() {
        Some(Token::Word(w))
            if matches!(
                w.to_ascii_lowercase().as_str(),
                "required" | "requisite" | "sufficient" | "optional"
            ) =>
        {
            w.to_ascii_lowercase()
        }
        _ => {
            return Err(format!(
                "login module {module}: expected a control flag (required, requisite, sufficient, optional)"
            ))
        }
    };
    let mut options = BTreeMap::new();
    loop {
        match it.next() {
            Some(Token::Semi) => break,
            Some(Token::Word(key)) => {
                if it.next() != Some(Token::Eq) {
                    return Err(format!("option {key}: expected `=`"));
                }
                let value = match it.next() {
                    Some(Token::Quoted(v)) | Some(Token::Word(v)) => v,
                    _ => return Err(format!("option {key}: expected a value")),
                };
                options.insert(key, Secret::new(value));
            }
            None => return Err("expected `;` at the end of the login module".into()),
            Some(_) => return Err("expected an option name".into()),
        }
    }
    if it.next().is_some() {
        return Err("sasl.jaas.config must contain exactly one login module".into());
    }
    Ok(JaasConfig {
        module,
        flag,
        options,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kafkas_syntax() {
        let j = parse(
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_alice="alice-secret" user_bob="a \"quoted\" ;= value";"#,
        )
        .unwrap();
        assert_eq!(
            j.module,
            "org.apache.kafka.common.security.plain.PlainLoginModule"
        );
        assert_eq!(j.flag, "required");
        assert_eq!(j.option("user_alice"), Some("alice-secret"));
        assert_eq!(j.option("user_bob"), Some("a \"quoted\" ;= value"));
        let j = parse("org.apache.kafka.common.security.scram.ScramLoginModule required;").unwrap();
        assert!(j.options.is_empty());
        let j = parse("M optional k=v other=\"x\";").unwrap();
        assert_eq!(j.option("k"), Some("v"));
        assert!(!format!("{j:?}").contains("alice-secret"));
    }

    #[test]
    fn rejects_malformed_without_printing_values() {
        for bad in [
            "",
            "Module",
            "Module bogus;",
            "Module required user_a=\"x\"",
            "Module required user_a;",
            "Module required a=\"unterminated;",
            "A required; B required;",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(!e.contains("unterminated;"), "{e}");
        }
    }
}
