//! A client certificate's subject as Kafka sees it: the distinguished name rendered as Java's
//! `X500Principal.getName()` (RFC 2253: most specific RDN first, `CN`, `C`, `L`, `ST`, `O`,
//! `OU`, `STREET`, `DC`, `UID` by keyword, other attributes as `OID=#hex` of their DER value,
//! special characters escaped), and `ssl.principal.mapping.rules` (`DEFAULT` and
//! `RULE:pattern/replacement/[LU]`, Kafka's `SslPrincipalMapper`) turning it into a user name.

use regex::Regex;

use crate::{Error, Result};

const KEYWORDS: &[(&str, &str)] = &[
    ("2.5.4.3", "CN"),
    ("2.5.4.6", "C"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("2.5.4.9", "STREET"),
    ("0.9.2342.19200300.100.1.25", "DC"),
    ("0.9.2342.19200300.100.1.1", "UID"),
];

/// The subject DN of a DER certificate in RFC 2253 form, as Java renders it.
pub fn subject_dn(cert_der: &[u8]) -> Result<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(cert_der).map_err(|e| {
        Error::kafka(
            odradek::ErrorCode::SaslAuthenticationFailed,
            format!("cannot parse the client certificate: {e}"),
        )
    })?;
    let mut rdns = Vec::new();
    for rdn in cert.subject().iter_rdn() {
        let mut parts = Vec::new();
        for attr in rdn.iter() {
            let oid = attr.attr_type().to_id_string();
            let keyword = KEYWORDS.iter().find(|(o, _)| *o == oid).map(|(_, k)| *k);
            let text = match (keyword, attr.as_str()) {
                (Some(k), Ok(v)) => format!("{k}={}", escape(v)),
                (Some(k), Err(_)) => match std::str::from_utf8(attr.as_slice()) {
                    // BMPString / TeletexString values Java decodes; UTF-8 covers what test and
                    // real CAs write.
                    Ok(v) => format!("{k}={}", escape(v)),
                    Err(_) => format!("{k}=#{}", der_hex(attr)),
                },
                (None, _) => format!("{oid}=#{}", der_hex(attr)),
            };
            parts.push(text);
        }
        rdns.push(parts.join("+"));
    }
    rdns.reverse();
    Ok(rdns.join(","))
}

fn der_hex(attr: &x509_parser::x509::AttributeTypeAndValue<'_>) -> String {
    let value = attr.attr_value();
    let data = value.data;
    let mut der = vec![value.tag().0 as u8];
    let len = data.len();
    if len < 128 {
        der.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        der.push(0x80 | (bytes.len() - skip) as u8);
        der.extend_from_slice(&bytes[skip..]);
    }
    der.extend_from_slice(data);
    hex::encode(der)
}

/// RFC 2253 escaping as `X500Principal` does it.
fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let last = v.chars().count().saturating_sub(1);
    for (i, c) in v.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// One rule of `ssl.principal.mapping.rules`.
#[derive(Debug, Clone)]
enum Rule {
    Default,
    Pattern {
        pattern: Regex,
        replacement: String,
        case: Option<char>,
    },
}

/// Parsed `ssl.principal.mapping.rules`.
#[derive(Debug, Clone)]
pub struct PrincipalMapper {
    rules: Vec<Rule>,
    text: String,
}

impl PrincipalMapper {
    /// Parses the rules; an invalid one fails naming the key.
    pub fn parse(text: &str) -> Result<PrincipalMapper> {
        const KEY: &str = "ssl.principal.mapping.rules";
        let bad = |why: String| Error::config(KEY, why);
        let mut rules = Vec::new();
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        let skip_ws = |i: &mut usize| {
            while *i < chars.len() && chars[*i].is_whitespace() {
                *i += 1;
            }
        };
        loop {
            skip_ws(&mut i);
            if i >= chars.len() {
                break;
            }
            let rest: String = chars[i..].iter().collect();
            if rest.starts_with("DEFAULT") {
                rules.push(Rule::Default);
                i += "DEFAULT".len();
            } else if let Some(after) = rest.strip_prefix("RULE:") {
                let after: Vec<char> = after.chars().collect();
                let mut j = 0;
                let mut fields = Vec::new();
                for _ in 0..2 {
                    let mut field = String::new();
                    loop {
                        match after.get(j) {
                            None => {
                                return Err(bad(format!(
                                    "rule `{rest}` is not RULE:pattern/replacement/[LU]"
                                )))
                            }
                            Some('\\') if after.get(j + 1) == Some(&'/') => {
                                field.push('/');
                                j += 2;
                            }
                            Some('/') => {
                                j += 1;
                                break;
                            }
                            Some(c) => {
                                field.push(*c);
                                j += 1;
                            }
                        }
                    }
                    fields.push(field);
                }
                let case = match after.get(j) {
                    Some(c @ ('L' | 'U')) => {
                        j += 1;
                        Some(*c)
                    }
                    _ => None,
                };
                // Anything up to the next comma is ignored, as Kafka's splitter does.
                while j < after.len() && after[j] != ',' {
                    j += 1;
                }
                let pattern = Regex::new(&format!("^(?:{})$", fields[0]))
                    .map_err(|e| bad(format!("invalid pattern `{}`: {e}", fields[0])))?;
                rules.push(Rule::Pattern {
                    pattern,
                    replacement: java_replacement(&fields[1]),
                    case,
                });
                i += "RULE:".len() + j;
            } else {
                return Err(bad(format!("invalid rule `{rest}`")));
            }
            skip_ws(&mut i);
            match chars.get(i) {
                None => break,
                Some(',') => i += 1,
                Some(_) => {
                    let rest: String = chars[i..].iter().collect();
                    return Err(bad(format!("invalid rule `{rest}`")));
                }
            }
        }
        if rules.is_empty() {
            rules.push(Rule::Default);
        }
        Ok(PrincipalMapper {
            rules,
            text: text.to_string(),
        })
    }

    /// The user name for `dn`: the first rule that matches; an error when none does.
    pub fn map(&self, dn: &str) -> std::result::Result<String, String> {
        for rule in &self.rules {
            match rule {
                Rule::Default => return Ok(dn.to_string()),
                Rule::Pattern {
                    pattern,
                    replacement,
                    case,
                } => {
                    if !pattern.is_match(dn) {
                        continue;
                    }
                    let mut out = pattern.replace_all(dn, replacement.as_str()).into_owned();
                    match case {
                        Some('L') => out = out.to_lowercase(),
                        Some('U') => out = out.to_uppercase(),
                        _ => {}
                    }
                    if !out.is_empty() {
                        return Ok(out);
                    }
                }
            }
        }
        Err(format!("No rules apply to {dn}, rules {}", self.text))
    }
}

/// Java's `$1` group references as the regex crate's `${1}` (so `$1a` is group 1 then `a`).
fn java_replacement(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('$') => out.push_str("$$"),
                Some(n) => out.push(n),
                None => {}
            },
            '$' if chars.peek().is_some_and(|d| d.is_ascii_digit()) => {
                let mut n = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    n.push(*d);
                    chars.next();
                }
                out.push_str(&format!("${{{n}}}"));
            }
            '$' => out.push_str("$$"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_x500principal() {
        assert_eq!(escape("a,b"), "a\\,b");
        assert_eq!(escape(" lead"), "\\ lead");
        assert_eq!(escape("#x"), "\\#x");
        assert_eq!(escape("trail "), "trail\\ ");
        assert_eq!(escape("a+b;c<d>\"\\"), "a\\+b\\;c\\<d\\>\\\"\\\\");
    }

    #[test]
    fn rcgen_certificate_subject_renders_most_specific_first() {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        let mut dn = rcgen::DistinguishedName::new();
        dn.push(rcgen::DnType::OrganizationName, "odradek");
        dn.push(rcgen::DnType::OrganizationalUnitName, "tests");
        dn.push(rcgen::DnType::CommonName, "client, one");
        params.distinguished_name = dn;
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(
            subject_dn(cert.der()).unwrap(),
            "CN=client\\, one,OU=tests,O=odradek"
        );
    }

    #[test]
    fn mapping_rules_like_kafka() {
        let m = PrincipalMapper::parse("DEFAULT").unwrap();
        assert_eq!(
            m.map("CN=client,OU=tests,O=odradek").unwrap(),
            "CN=client,OU=tests,O=odradek"
        );
        let m = PrincipalMapper::parse(
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$3/L, DEFAULT",
        )
        .unwrap();
        assert_eq!(m.map("CN=kafka,OU=ServiceUsers,O=x").unwrap(), "kafka");
        assert_eq!(
            m.map("CN=Client,OU=tests,O=Odradek").unwrap(),
            "client@odradek"
        );
        assert_eq!(m.map("C=US").unwrap(), "C=US");
        let m = PrincipalMapper::parse("RULE:^CN=([a-z]+)$/$1/U").unwrap();
        assert_eq!(m.map("CN=abc").unwrap(), "ABC");
        assert!(m.map("CN=ABC,O=x").unwrap_err().contains("No rules apply"));
        let m = PrincipalMapper::parse("RULE:^CN=(.*)\\/x$/$1/").unwrap();
        assert_eq!(m.map("CN=a/x").unwrap(), "a");
        assert!(PrincipalMapper::parse("NOPE").is_err());
        assert!(PrincipalMapper::parse("RULE:abc").is_err());
    }
}
