//! Java's `sasl.jaas.config`, for applications that bring their Java client settings:
//! `<LoginModule class> required key="value" key2=value2;`.
//!
//! Supported modules: Kafka's `PlainLoginModule` and `ScramLoginModule` (`username`,
//! `password`) and `OAuthBearerLoginModule` (`unsecuredLoginStringClaim_sub` and the other
//! `unsecuredLogin*` options for the unsecured token; `clientId`, `clientSecret`, `scope` for
//! OIDC; `extension_<name>` for extensions). Anything else (Kerberos's `Krb5LoginModule`, other
//! modules, control flags other than `required`) is refused with the property named.

use super::secret::Secret;
use super::settings::{OAuthMethod, SaslConfig};
use crate::{Error, Result};

const KEY: &str = "sasl.jaas.config";

/// The login module of a `sasl.jaas.config`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Module {
    Plain,
    Scram,
    OAuthBearer,
}

/// A parsed `sasl.jaas.config`.
#[derive(Clone, PartialEq, Eq)]
pub struct JaasConfig {
    module: Module,
    options: Vec<(String, String)>,
}

impl std::fmt::Debug for JaasConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Option values can be passwords and secrets: only their names are shown.
        let names: Vec<&str> = self.options.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("JaasConfig")
            .field("module", &self.module)
            .field("options", &names)
            .finish()
    }
}

fn err(message: impl Into<String>) -> Error {
    Error::config(KEY, message)
}

/// Splits the text into words: bare tokens, `=`, `;`, and double-quoted strings (with `\`
/// escapes), as Java's JAAS parser does.
fn tokens(text: &str) -> Result<Vec<(bool, String)>> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '=' || c == ';' {
            chars.next();
            out.push((false, c.to_string()));
        } else if c == '"' {
            chars.next();
            let mut s = String::new();
            loop {
                match chars.next() {
                    None => return Err(err("unterminated quoted value")),
                    Some('"') => break,
                    Some('\\') => match chars.next() {
                        Some(e) => s.push(e),
                        None => return Err(err("unterminated quoted value")),
                    },
                    Some(ch) => s.push(ch),
                }
            }
            out.push((true, s));
        } else {
            let mut s = String::new();
            while let Some(&ch) = chars.peek() {
                if ch.is_whitespace() || ch == '=' || ch == ';' || ch == '"' {
                    break;
                }
                s.push(ch);
                chars.next();
            }
            out.push((false, s));
        }
    }
    Ok(out)
}

impl JaasConfig {
    /// Parses one login module entry.
    pub fn parse(_key: &str, text: &str) -> Result<JaasConfig> {
        let toks = tokens(text)?;
        let mut it = toks.into_iter();
        let (_, class) = it.next().ok_or_else(|| err("is empty"))?;
        let module = match class.rsplit('.').next().unwrap_or(&class) {
            "PlainLoginModule" => Module::Plain,
            "ScramLoginModule" => Module::Scram,
            "OAuthBearerLoginModule" => Module::OAuthBearer,
            "Krb5LoginModule" => {
                return Err(err("Krb5LoginModule (GSSAPI / Kerberos) is not supported"))
            }
            other => return Err(err(format!("login module `{other}` is not supported"))),
        };
        match it.next() {
            Some((false, flag)) if flag.eq_ignore_ascii_case("required") => {}
            Some((_, flag)) => {
                return Err(err(format!(
                    "control flag `{flag}` is not supported (only `required`)"
                )))
            }
            None => {
                return Err(err(
                    "a control flag (`required`) must follow the login module",
                ))
            }
        }
        let mut options = Vec::new();
        let mut ended = false;
        while let Some((quoted, word)) = it.next() {
            if !quoted && word == ";" {
                ended = true;
                break;
            }
            if quoted {
                return Err(err("an option name must not be quoted"));
            }
            match it.next() {
                Some((false, eq)) if eq == "=" => {}
                _ => return Err(err(format!("option `{word}` has no `=value`"))),
            }
            let (_, value) = it
                .next()
                .filter(|(q, v)| *q || (v != ";" && v != "="))
                .ok_or_else(|| err(format!("option `{word}` has no value")))?;
            options.push((word, value));
        }
        if !ended {
            return Err(err("must end with `;`"));
        }
        if it.next().is_some() {
            return Err(err("only one login module entry is supported"));
        }
        Ok(JaasConfig { module, options })
    }

    fn option(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Fills what `sasl.*` properties did not set.
    pub fn apply(&self, sasl: &mut SaslConfig) -> Result<()> {
        match self.module {
            Module::Plain | Module::Scram => {
                for (k, _) in &self.options {
                    if !matches!(k.as_str(), "username" | "password") {
                        return Err(err(format!(
                            "option `{k}` of the login module is not supported"
                        )));
                    }
                }
                if sasl.username.is_none() {
                    sasl.username = self.option("username").map(String::from);
                }
                if sasl.password.is_none() {
                    sasl.password = self.option("password").map(Secret::new);
                }
            }
            Module::OAuthBearer => {
                let mut unsecured = Vec::new();
                for (k, v) in &self.options {
                    match k.as_str() {
                        "clientId" => sasl.oauth_client_id = Some(v.clone()),
                        "clientSecret" => sasl.oauth_client_secret = Some(Secret::new(v.clone())),
                        "scope" => sasl.oauth_scope = Some(v.clone()),
                        k if k.starts_with("extension_") => {
                            let name = &k["extension_".len()..];
                            super::oauth::check_extension(KEY, name, v)?;
                            sasl.oauth_extensions.push((name.to_string(), v.clone()));
                        }
                        "unsecuredLoginStringClaim_sub" => unsecured.push(format!("principal={v}")),
                        "unsecuredLoginLifetimeSeconds" => {
                            unsecured.push(format!("lifeSeconds={v}"))
                        }
                        "unsecuredLoginListClaim_scope" | "unsecuredLoginStringClaim_scope" => {
                            unsecured.push(format!("scope={v}"))
                        }
                        other => {
                            return Err(err(format!(
                                "option `{other}` of OAuthBearerLoginModule is not supported"
                            )))
                        }
                    }
                }
                if sasl.oauth_client_id.is_some() && sasl.oauth_method == OAuthMethod::Default {
                    sasl.oauth_method = OAuthMethod::Oidc;
                }
                if !unsecured.is_empty() && sasl.oauth_config.is_none() {
                    // Java's default login handler builds the unsecured token from these.
                    sasl.oauth_config = Some(unsecured.join(" "));
                    sasl.unsecure_jwt = true;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn parses_quoted_and_bare_values() {
        let j = JaasConfig::parse(
            KEY,
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required username=alice password="a b\"c";"#,
        )
        .unwrap();
        let mut s = SaslConfig::default();
        j.apply(&mut s).unwrap();
        assert_eq!(s.username.as_deref(), Some("alice"));
        assert_eq!(s.password.unwrap().expose(), "a b\"c");
        assert!(!format!("{j:?}").contains("a b"));
    }

    #[test]
    fn oauth_options_map_to_librdkafka_settings() {
        let j = JaasConfig::parse(
            KEY,
            r#"org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="app" clientSecret="s3cret" scope="kafka" extension_traceId="123";"#,
        )
        .unwrap();
        let mut s = SaslConfig::default();
        j.apply(&mut s).unwrap();
        assert_eq!(s.oauth_method, OAuthMethod::Oidc);
        assert_eq!(s.oauth_client_id.as_deref(), Some("app"));
        assert_eq!(
            s.oauth_extensions,
            vec![("traceId".to_string(), "123".to_string())]
        );
    }

    #[test]
    fn refuses_what_it_cannot_honour() {
        for text in [
            "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;",
            "org.apache.kafka.common.security.plain.PlainLoginModule optional username=a;",
            "org.apache.kafka.common.security.plain.PlainLoginModule required username=a",
            "org.apache.kafka.common.security.plain.PlainLoginModule required username;",
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="a;"#,
            "",
        ] {
            assert!(JaasConfig::parse(KEY, text).is_err(), "{text}");
        }
        let j = JaasConfig::parse(
            KEY,
            "org.apache.kafka.common.security.scram.ScramLoginModule required tokenauth=true;",
        )
        .unwrap();
        assert!(j.apply(&mut SaslConfig::default()).is_err());
    }
}
