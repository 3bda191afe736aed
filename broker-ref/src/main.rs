//! `odradek-broker [server.properties] [--override key=value]...`
//!
//! Starts the reference broker, printing `odradek-broker listening on HOST:PORT` on stdout once
//! it accepts connections, and shuts down cleanly (flush, checkpoints) on SIGINT or SIGTERM.
//! `--schema-registry HOST:PORT` also serves a Schema Registry over the broker itself (then a
//! second line, `odradek-schema-registry listening on http://HOST:PORT`).
//!
//! `--dev-security DIR` makes a throw-away CA, broker and client certificates and a user `dev`
//! in DIR and opens SSL and SASL_SSL listeners beside PLAINTEXT (docs/security.md); the client
//! settings are printed after the listening lines. `--add-scram
//! 'SCRAM-SHA-256=[name=alice,password=alice-secret]'` (kafka-storage's syntax, optional
//! `iterations=`) stores a SCRAM credential before the broker starts. With more than one
//! listener, each is printed as `odradek-broker listener NAME PROTOCOL HOST:PORT`.

use std::path::PathBuf;
use std::process::ExitCode;

use odradek_broker::config::BrokerConfig;
use odradek_broker::server;

#[global_allocator]
static ALLOC: server::alloc_meter::MeteredAllocator<odradek::alloc::UntrustedInputAllocator> =
    server::alloc_meter::MeteredAllocator(odradek::alloc::UntrustedInputAllocator);

const USAGE: &str = "usage: odradek-broker [server.properties] [--override key=value]... \
     [--schema-registry HOST:PORT] [--dev-security DIR] [--add-scram MECHANISM=[name=U,password=P]]...";

/// The command line.
#[derive(Debug, Default)]
struct Args {
    file: Option<PathBuf>,
    overrides: Vec<(String, String)>,
    registry: Option<String>,
    dev_security: Option<PathBuf>,
    add_scram: Vec<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut parsed = Args::default();
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
            "--dev-security" => {
                parsed.dev_security = Some(PathBuf::from(
                    args.next().ok_or("--dev-security needs DIR")?,
                ));
            }
            "--add-scram" => {
                parsed.add_scram.push(
                    args.next()
                        .ok_or("--add-scram needs MECHANISM=[name=USER,password=PASSWORD]")?,
                );
            }
            other if other.starts_with('-') => {
                return Err(format!("unknown flag `{other}`\n{USAGE}"))
            }
            path if file.is_none() => file = Some(PathBuf::from(path)),
            extra => return Err(format!("unexpected argument `{extra}`\n{USAGE}")),
        }
    }
    parsed.file = file;
    parsed.overrides = overrides;
    parsed.registry = registry;
    Ok(parsed)
}

/// Parses kafka-storage's `--add-scram` syntax: `SCRAM-SHA-256=[name=alice,password=secret]`
/// (optionally `iterations=8192`; quotes around values are dropped).
fn parse_add_scram(
    spec: &str,
) -> Result<
    (
        String,
        odradek_broker::security::scram::ScramMechanism,
        String,
        i32,
    ),
    String,
> {
    use odradek_broker::security::scram::{ScramMechanism, MAX_ITERATIONS, MIN_ITERATIONS};
    let bad = || "--add-scram: expected MECHANISM=[name=USER,password=PASSWORD]".to_string();
    let (mech, rest) = spec.split_once('=').ok_or_else(bad)?;
    let mechanism = ScramMechanism::from_name(mech.trim()).ok_or_else(|| {
        format!("--add-scram: unknown mechanism {mech} (SCRAM-SHA-256, SCRAM-SHA-512)")
    })?;
    let inner = rest
        .trim()
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .ok_or_else(bad)?;
    let (mut name, mut password, mut iterations) = (None, None, 4096);
    for kv in inner.split(',') {
        let (k, v) = kv.split_once('=').ok_or_else(bad)?;
        let v = v.trim().trim_matches('"').to_string();
        match k.trim() {
            "name" => name = Some(v),
            "password" => password = Some(v),
            "iterations" => {
                iterations = v
                    .parse()
                    .map_err(|_| "--add-scram: iterations is not a number".to_string())?
            }
            other => {
                return Err(format!(
                    "--add-scram: unknown key {other} (name, password, iterations)"
                ))
            }
        }
    }
    if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
        return Err(format!(
            "--add-scram: iterations must be {MIN_ITERATIONS}..{MAX_ITERATIONS}"
        ));
    }
    match (name, password) {
        (Some(n), Some(p)) if !n.is_empty() => Ok((n, mechanism, p, iterations)),
        _ => Err(bad()),
    }
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

/// Raises the soft limit on open files to the hard limit, as a broker wants every descriptor
/// it may have (a segment, its indexes and every connection each take one); the new limit is
/// logged, and what the broker then refuses for want of descriptors says so.
fn raise_descriptor_limit() {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit/setrlimit only read and write the struct passed to them.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
                return;
            }
            let before = limit.rlim_cur;
            if limit.rlim_cur < limit.rlim_max {
                limit.rlim_cur = limit.rlim_max;
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                    tracing::warn!(
                        soft = before,
                        hard = limit.rlim_max,
                        "could not raise the open files limit"
                    );
                    return;
                }
            }
            tracing::info!(
                from = before,
                to = limit.rlim_cur,
                "open files limit (RLIMIT_NOFILE)"
            );
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
    raise_descriptor_limit();
    let args = match parse_args() {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("odradek-broker: {msg}");
            return ExitCode::from(2);
        }
    };
    let dev = match &args.dev_security {
        None => None,
        Some(dir) => match odradek_broker::security::dev::generate(dir) {
            Ok(d) => Some(d),
            Err(e) => {
                eprintln!("odradek-broker: --dev-security: {e}");
                return ExitCode::FAILURE;
            }
        },
    };
    let mut overrides = dev
        .as_ref()
        .map(|d| d.broker_overrides())
        .unwrap_or_default();
    overrides.extend(args.overrides.iter().cloned());
    let registry = args.registry.clone();
    let config = match BrokerConfig::load(args.file.as_deref(), &overrides) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("odradek-broker: {e}");
            return ExitCode::from(2);
        }
    };
    let mut scram = Vec::new();
    for spec in &args.add_scram {
        match parse_add_scram(spec) {
            Ok(s) => scram.push(s),
            Err(e) => {
                eprintln!("odradek-broker: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if let Some(d) = &dev {
        for m in [
            odradek_broker::security::scram::ScramMechanism::Sha256,
            odradek_broker::security::scram::ScramMechanism::Sha512,
        ] {
            scram.push((d.user.clone(), m, d.password.expose().clone(), 4096));
        }
    }
    if !scram.is_empty() && !config.get("controller.quorum.voters").trim().is_empty() {
        // A node's local file is not read in cluster mode: the credential would be ignored.
        eprintln!(
            "odradek-broker: --add-scram (and --dev-security's user) cannot be used in cluster mode \
             (controller.quorum.voters is set): SCRAM credentials live in the cluster's metadata log; \
             create them with AlterUserScramCredentials (kafka-configs --alter --entity-type users \
             --add-config 'SCRAM-SHA-256=[password=...]')"
        );
        return ExitCode::from(2);
    }
    if !scram.is_empty() {
        let dir = config.log_dir();
        let stored = std::fs::create_dir_all(&dir)
            .map_err(odradek_broker::Error::from)
            .and_then(|()| odradek_broker::security::CredentialStore::open(&dir))
            .and_then(|store| {
                scram
                    .iter()
                    .try_for_each(|(user, m, password, iterations)| {
                        let cred = odradek_broker::security::scram::ScramCredential::from_password(
                            *m,
                            password,
                            *iterations,
                        );
                        store.upsert(user, *m, cred)
                    })
            });
        if let Err(e) = stored {
            eprintln!("odradek-broker: cannot store SCRAM credentials: {e}");
            return ExitCode::FAILURE;
        }
    }
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
        say(format_args!("odradek-broker listening on {}", running.local_addr));
        tracing::info!(addr = %running.local_addr, data = %running.broker.config.log_dir().display(), "broker started");
        let registry = match registry {
            None => None,
            Some(listen) => {
                let config = odradek_schema_registry::server::RegistryConfig::new(listen, running.local_addr.to_string());
                match odradek_schema_registry::server::start(config).await {
                    Ok(r) => {
                        say(format_args!("odradek-schema-registry listening on {}", r.url()));
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
        if running.listeners.len() > 1 {
            for (name, protocol, addr) in &running.listeners {
                say(format_args!("odradek-broker listener {name} {protocol} {addr}"));
            }
        }
        if let Some(d) = &dev {
            let addr = |n: &str| running.listener_addr(n).map(|a| a.to_string());
            say(format_args!(
                "\n# odradek-broker --dev-security {}: librdkafka client settings\n{}",
                d.dir.display(),
                d.client_settings(addr("SSL").as_deref(), addr("SASL_SSL").as_deref())
            ));
        }
        let health = running.broker.topics.dir_health().clone();
        tokio::select! {
            _ = wait_for_signal(term) => {}
            _ = health.failed() => {
                // Kafka halts when its last log directory fails: a clean shutdown would have
                // to write to the failed disk, and nothing more may be acknowledged.
                eprintln!(
                    "odradek-broker: halting: the log directory failed ({})",
                    health.failure().unwrap_or("storage error")
                );
                std::process::exit(1);
            }
        }
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

/// Prints one line on stdout and flushes it. A parent that stopped reading stdout (it read the
/// listening line and closed the pipe) must not take the broker down: write errors are ignored.
fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}
