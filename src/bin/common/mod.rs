//! What every zipcoll tool (the binaries and the examples) shares: its exit statuses, how a
//! failure becomes one, and stdout lines that stop quietly when the reader goes away.
//!
//! | status | meaning                                                                            |
//! |--------|------------------------------------------------------------------------------------|
//! | 0      | everything ran and every check passed                                              |
//! | 1      | a check ran and failed: a result not bit-identical, a mismatch, a dead rank not reported in time |
//! | 2      | usage error: a bad flag, value or environment variable (also clap's status for its own errors) |
//! | 3      | runtime error: the work could not be done (no GPU, a file, a device or communicator failure) |
//! | 141    | stdout was closed early (e.g. piped into `head`): output stopped, as a shell reports SIGPIPE |
//!
//! Each tool includes this file with `#[path]` (there is no library crate for the tools) and
//! puts [`EXIT_STATUSES`] in its `--help`.

use std::fmt;
use std::io::Write;
use std::process::ExitCode;

/// The exit statuses, for `--help` (`#[command(after_help = EXIT_STATUSES)]`).
pub const EXIT_STATUSES: &str = "Exit status: 0 ok; 1 a check failed (a result not bit-identical, a mismatch); \
2 usage error (a bad flag, value or environment variable); 3 runtime error (no GPU, a file, a device or \
communicator failure); 141 stdout closed early (e.g. piped into head).";

/// Why a tool failed; the variant is its exit status.
#[derive(Debug)]
pub enum Fail {
    /// A check ran and failed (status 1).
    Check(String),
    /// A bad flag, value or environment variable (status 2).
    Usage(String),
    /// The work could not be done (status 3).
    Runtime(String),
}

impl From<zipcoll::Error> for Fail {
    /// An invalid argument comes from what the user gave (flags, environment): a usage error;
    /// everything else is a runtime error.
    fn from(e: zipcoll::Error) -> Fail {
        match e {
            zipcoll::Error::InvalidArgument(m) => Fail::Usage(m),
            e => Fail::Runtime(e.to_string()),
        }
    }
}

/// The exit status of `result`, its message printed on stderr.
pub fn exit(result: Result<(), Fail>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fail::Check(m)) => {
            eprintln!("FAILED: {m}");
            ExitCode::from(1)
        }
        Err(Fail::Usage(m)) => {
            eprintln!("error: {m}\n\nFor more information, try '--help'.");
            ExitCode::from(2)
        }
        Err(Fail::Runtime(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(3)
        }
    }
}

/// Writes one line to stdout (use [`say!`]); when the reader has gone (a broken pipe) the
/// process ends at once with status 141, without a message: nothing more can be shown.
pub fn say_line(line: fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        eprintln!("error: writing to stdout: {e}");
        std::process::exit(3);
    }
}

/// `println!` that ends the process quietly on a broken pipe ([`say_line`]).
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::common::say_line(format_args!($($arg)*))
    };
}
pub(crate) use say;
