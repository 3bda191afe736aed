//! `odradek`: a kcat-style command line client built on the Odradek client core.
//!
//! Every failure — a bad flag, an unknown subcommand, an unreachable broker, a broker error —
//! ends as one line on stderr and a non-zero exit (2 for usage errors, 1 for everything else);
//! nothing panics and nothing waits longer than the configured timeouts.

mod args;
mod connect;
mod consume;
mod failure;
mod format;
mod offsets;
mod out;
mod partitions;
mod perf;
mod produce;
mod topics;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;

use args::{Cli, Command, PerfCommand};
use failure::Failure;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            out::tell!("odradek: {}", missing_subcommand(&e));
            return ExitCode::from(2);
        }
        Err(e) => {
            out::tell!("odradek: {} (see 'odradek --help')", first_line(&e));
            return ExitCode::from(2);
        }
    };
    if std::env::var_os("ODRADEK_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_env("ODRADEK_LOG"))
            .with_writer(std::io::stderr)
            .try_init();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            out::tell!("odradek: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(run(cli));
    // Background tasks (connections, fetchers) must not keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            out::tell!("odradek: {f}");
            ExitCode::from(f.exit_code())
        }
    }
}

/// The first line of a clap error, without its `error: ` prefix.
fn first_line(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let line = rendered
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid arguments");
    line.strip_prefix("error: ").unwrap_or(line).to_string()
}

/// One line for a command that stops short of its subcommand, naming the usage it lacks
/// (clap would print the whole help).
fn missing_subcommand(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let usage = rendered
        .lines()
        .find_map(|l| l.trim().strip_prefix("Usage: "))
        .unwrap_or("odradek <COMMAND>")
        .to_string();
    let path: Vec<&str> = usage
        .split_whitespace()
        .take_while(|w| !w.starts_with('[') && !w.starts_with('<'))
        .collect();
    format!(
        "a subcommand is required: {usage} (see '{} --help')",
        path.join(" ")
    )
}

async fn run(cli: Cli) -> Result<(), Failure> {
    // Checked before connecting: the answer does not depend on the broker.
    let group_props = match &cli.command {
        Command::Consume(args) => consume::group_props(args)?,
        _ => Vec::new(),
    };
    let config = connect::config(cli.brokers.as_deref(), &group_props, &cli.props)?;
    let admin = connect::admin(&config).await?;
    let result = match &cli.command {
        Command::Produce(args) => produce::run(config, args).await,
        Command::Consume(args) => consume::run(config, &admin, args).await,
        Command::Topics { action } => topics::run(&admin, action).await,
        Command::Offsets(args) => offsets::run(&admin, args).await,
        Command::Perf { action } => match action {
            PerfCommand::Produce(args) => perf::produce::run(config, args).await,
            PerfCommand::Consume(args) => perf::consume::run(config, &admin, args).await,
        },
    };
    admin.close();
    result
}
