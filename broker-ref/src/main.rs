//! `odradek-broker [server.properties] [--override key=value]...`
//!
//! Starts the reference broker, printing `odradek-broker listening on HOST:PORT` on stdout once
//! it accepts connections, and shuts down cleanly (flush, checkpoints) on SIGINT or SIGTERM.
//! `--schema-registry HOST:PORT` also serves a Schema Registry over the broker itself (then a
//! second line, `odradek-schema-registry listening on http://HOST:PORT`).

use std::path::PathBuf;
use std::process::ExitCode;

use odradek_broker::config::BrokerConfig;
use odradek_broker::server;

#[global_allocator]
static ALLOC: odradek::alloc::UntrustedInputAllocator = odradek::alloc::UntrustedInputAllocator;

const USAGE: &str =
    "usage: odradek-broker [server.properties] [--override key=value]... [--schema-registry HOST:PORT]";

/// The command line: an optional properties file, `--override` pairs, the registry's address.
type Args = (Option<PathBuf>, Vec<(String, String)>, Option<String>);

fn parse_args() -> Result<Args, String> {
    let mut file = None;
    let mut overrides = Vec::new();
    let mut registry = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Err(USAGE.to_string()),
            "--override" => {
                let kv = args.next().ok_or("--override needs key=value")?;
                let (k, v) = kv
                    .split_once('=')
                    .ok_or_else(|| format!("--override `{kv}` is not key=value"))?;
                overrides.push((k.to_string(), v.to_string()));
            }
            "--schema-registry" => {
                registry = Some(args.next().ok_or("--schema-registry needs HOST:PORT")?);
            }
            other if other.starts_with('-') => {
                return Err(format!("unknown flag `{other}`\n{USAGE}"))
            }
            path if file.is_none() => file = Some(PathBuf::from(path)),
            extra => return Err(format!("unexpected argument `{extra}`\n{USAGE}")),
        }
    }
    Ok((file, overrides, registry))
}

/// SIGTERM, registered before the broker starts: a SIGTERM that arrives right after the
/// "listening" line must shut down cleanly, not kill the process with the default action.
#[cfg(unix)]
type TermSignal = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type TermSignal = Option<()>;

fn register_term() -> TermSignal {
    #[cfg(unix)]
    {
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok()
    }
    #[cfg(not(unix))]
    {
        None
    }
}

async fn wait_for_signal(term: TermSignal) {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let Some(mut term) = term else {
            let _ = ctrl_c.await;
            return;
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = term;
        let _ = ctrl_c.await;
    }
}

/// glibc malloc: keep freed Fetch buffers instead of returning them to the kernel after every
/// response. A Fetch reads each partition's records into its own buffer and writes them to the
/// socket without copying, so a response's buffers are all freed together; with glibc's
/// defaults the freed top of the heap is trimmed (or the buffers are mmap'd) and the next Fetch
/// page-faults all of its memory again, which made reads 10x slower. Up to 32 MiB per arena
/// stay mapped; larger buffers are still mmap'd and unmapped.
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const KEEP: libc::c_int = 32 << 20;
        // SAFETY: mallopt only changes allocator parameters; called before any thread exists.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, KEEP);
            libc::mallopt(libc::M_TRIM_THRESHOLD, KEEP);
        }
    }
}

fn main() -> ExitCode {
    tune_malloc();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("ODRADEK_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let (file, overrides, registry) = match parse_args() {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("odradek-broker: {msg}");
            return ExitCode::from(2);
        }
    };
    let config = match BrokerConfig::load(file.as_deref(), &overrides) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("odradek-broker: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("odradek-broker: cannot start runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let term = register_term();
        let running = match server::start(config).await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("odradek-broker: {e}");
                return ExitCode::FAILURE;
            }
        };
        println!("odradek-broker listening on {}", running.local_addr);
        tracing::info!(addr = %running.local_addr, data = %running.broker.config.log_dir().display(), "broker started");
        let registry = match registry {
            None => None,
            Some(listen) => {
                let config = odradek_schema_registry::server::RegistryConfig::new(listen, running.local_addr.to_string());
                match odradek_schema_registry::server::start(config).await {
                    Ok(r) => {
                        println!("odradek-schema-registry listening on {}", r.url());
                        Some(r)
                    }
                    Err(e) => {
                        eprintln!("odradek-broker: schema registry: {e}");
                        let _ = running.shutdown().await;
                        return ExitCode::FAILURE;
                    }
                }
            }
        };
        wait_for_signal(term).await;
        tracing::info!("shutting down");
        if let Some(r) = registry {
            r.shutdown().await;
        }
        match running.shutdown().await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("odradek-broker: shutdown: {e}");
                ExitCode::FAILURE
            }
        }
    })
}
