//! [`Secret`]: a value that never prints. Passwords, SCRAM salted passwords and keys, bearer
//! tokens and private keys travel in it, so no `Debug`, `Display`, log line or error message can
//! show them by accident.

use std::fmt;

/// A secret value. `Debug` and `Display` print `[redacted]`; read it with [`Secret::expose`].
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    /// Wraps `value`.
    pub fn new(value: T) -> Secret<T> {
        Secret(value)
    }

    /// The secret itself, for the one place that must use it (a comparison, a key derivation).
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl<T> fmt::Display for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl From<String> for Secret<String> {
    fn from(s: String) -> Self {
        Secret(s)
    }
}

impl From<&str> for Secret<String> {
    fn from(s: &str) -> Self {
        Secret(s.to_string())
    }
}

/// Compares two byte strings in time that depends only on their lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print() {
        let s = Secret::new("alice-secret".to_string());
        assert_eq!(format!("{s:?}"), "[redacted]");
        assert_eq!(format!("{s}"), "[redacted]");
        #[derive(Debug)]
        #[allow(dead_code)]
        struct Holder {
            user: String,
            password: Secret<String>,
        }
        let h = Holder {
            user: "alice".into(),
            password: s.clone(),
        };
        let printed = format!("{h:?} {h:#?}");
        assert!(!printed.contains("alice-secret"), "{printed}");
        assert_eq!(s.expose(), "alice-secret");
    }

    #[test]
    fn constant_time_comparison() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
