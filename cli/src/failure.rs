//! The CLI's error: one line of text and an exit code.

use std::fmt;

/// Why a command failed, as shown to the user.
#[derive(Debug)]
pub struct Failure {
    message: String,
    usage: bool,
}

impl Failure {
    /// A runtime failure (exit code 1).
    pub fn new(message: impl Into<String>) -> Self {
        Failure {
            message: one_line(message.into()),
            usage: false,
        }
    }

    /// A usage error: the command line itself is wrong (exit code 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Failure {
            message: one_line(message.into()),
            usage: true,
        }
    }

    /// The process exit code.
    pub fn exit_code(&self) -> u8 {
        if self.usage {
            2
        } else {
            1
        }
    }
}

/// Keeps the promise of one line per failure whatever a message contains.
fn one_line(s: String) -> String {
    if s.contains('\n') {
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    } else {
        s
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<odradek::Error> for Failure {
    fn from(e: odradek::Error) -> Self {
        match e {
            odradek::Error::Config { .. } => Failure::usage(e.to_string()),
            other => Failure::new(other.to_string()),
        }
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::new(format!("I/O error: {e}"))
    }
}
