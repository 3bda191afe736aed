//! Writing lines without panicking: `println!` panics when stdout is a closed pipe
//! (`odradek topics list | head -1`); a reader that went away is a normal end here.

use std::fmt;
use std::io::{ErrorKind, Write};

use crate::failure::Failure;

/// Writes one line to stdout; a closed pipe is not an error.
pub fn stdout_line(args: fmt::Arguments<'_>) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{args}").and_then(|()| out.flush()) {
        Err(e) if e.kind() != ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// Writes one line to stderr, ignoring failures (there is nowhere left to report them).
pub fn stderr_line(args: fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr().lock(), "{args}");
}

/// `println!` that returns a [`Failure`] instead of panicking.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::out::stdout_line(format_args!($($arg)*))
    };
}

/// `eprintln!` that never panics.
macro_rules! tell {
    ($($arg:tt)*) => {
        $crate::out::stderr_line(format_args!($($arg)*))
    };
}

pub(crate) use {say, tell};

/// Whether stdout is a pipe whose reader has gone away. Writes notice that too, but an idle
/// consumer writes nothing, and `odradek consume ... | head -1` should still end when `head`
/// does.
pub fn stdout_closed() -> bool {
    let mut fd = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: 0,
        revents: 0,
    };
    // SAFETY: `fd` is a valid pollfd for the duration of the call, the count is 1, and a zero
    // timeout makes the call return at once.
    let ready = unsafe { libc::poll(&mut fd, 1, 0) };
    ready > 0 && fd.revents & (libc::POLLERR | libc::POLLHUP) != 0
}
