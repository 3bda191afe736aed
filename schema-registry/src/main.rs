//! `odradek-schema-registry --bootstrap HOST:PORT [--listen 127.0.0.1:8081] [options]`
//!
//! A Confluent-compatible Schema Registry storing its schemas in the `_schemas` topic of any
//! Kafka cluster. Prints `odradek-schema-registry listening on http://HOST:PORT` on stdout once
//! it serves (after replaying the topic) and stops on SIGINT / SIGTERM.

use std::process::ExitCode;
use std::time::Duration;

use odradek_schema_registry::server::{self, parse_user, RegistryConfig};

const USAGE: &str = "usage: odradek-schema-registry --bootstrap HOST:PORT [--listen HOST:PORT] \
[--topic NAME] [--basic-auth USER:PASSWORD]... [--kafka KEY=VALUE]... [--timeout-ms N] \
[--replication-factor N] [--max-body-bytes N]";

fn parse_args() -> Result<RegistryConfig, String> {
    let mut bootstrap = None;
    let mut config = RegistryConfig::new("127.0.0.1:8081", "");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value\n{USAGE}"));
        match arg.as_str() {
            "-h" | "--help" => return Err(USAGE.to_string()),
            "--bootstrap" | "--bootstrap-server" => bootstrap = Some(value(&arg)?),
            "--listen" => config.listen = value(&arg)?,
            "--topic" => config.store.topic = value(&arg)?,
            "--basic-auth" => {
                let v = value(&arg)?;
                config.users.push(
                    parse_user(&v).ok_or(format!("--basic-auth `{v}` is not USER:PASSWORD"))?,
                );
            }
            "--kafka" => {
                let v = value(&arg)?;
                let (k, val) = v
                    .split_once('=')
                    .ok_or(format!("--kafka `{v}` is not key=value"))?;
                config.store.client.push((k.to_string(), val.to_string()));
            }
            "--timeout-ms" => {
                let v = value(&arg)?;
                let ms: u64 = v
                    .parse()
                    .map_err(|_| format!("--timeout-ms `{v}` is not a number"))?;
                config.store.timeout = Duration::from_millis(ms);
            }
            "--replication-factor" => {
                let v = value(&arg)?;
                config.store.replication_factor = Some(
                    v.parse()
                        .map_err(|_| format!("--replication-factor `{v}` is not a number"))?,
                );
            }
            "--max-body-bytes" => {
                let v = value(&arg)?;
                config.max_body = v
                    .parse()
                    .map_err(|_| format!("--max-body-bytes `{v}` is not a number"))?;
            }
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    config.store.bootstrap = bootstrap.ok_or(format!("--bootstrap is required\n{USAGE}"))?;
    Ok(config)
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("ODRADEK_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let config = match parse_args() {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("odradek-schema-registry: {msg}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("odradek-schema-registry: cannot start runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        #[cfg(unix)]
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let running = match server::start(config).await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("odradek-schema-registry: {e}");
                return ExitCode::FAILURE;
            }
        };
        println!("odradek-schema-registry listening on {}", running.url());
        #[cfg(unix)]
        {
            let term_recv = async {
                match term.as_mut() {
                    Some(t) => {
                        t.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term_recv => {}
            }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        running.shutdown().await;
        ExitCode::SUCCESS
    })
}
