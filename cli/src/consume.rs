//! `consume`: prints records of assigned partitions (all of a topic's, or `-p`) to stdout, or,
//! with `-G GROUP`, of the partitions the consumer group gives this member.
//!
//! In group mode reading resumes at the group's committed offsets; `-o beginning|end` only
//! chooses `auto.offset.reset` for partitions without one, and offsets are auto-committed
//! (`enable.auto.commit`, overridable with `-X`) and committed once more on exit.
//!
//! `-e` computes each partition's end offset (high watermark) once at start and exits when every
//! partition's position reached it; `-c` exits after that many records; Ctrl-C exits cleanly.
//! A closed stdout (e.g. `| head`) ends the command quietly, even while no records arrive.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::time::Duration;

use odradek::admin::OffsetSpec;
use odradek::producer::TopicPartition;
use odradek::{Admin, ClientConfig, Consumer, ConsumerRecord};

use crate::args::ConsumeArgs;
use crate::failure::Failure;
use crate::format::{json, Format};
use crate::out;
use crate::partitions;

/// Where consumption starts (`-o`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// The log start offset.
    Beginning,
    /// The high watermark: only new records.
    End,
    /// An absolute offset.
    Offset(i64),
    /// N records before the high watermark (`-o -N`).
    FromEnd(i64),
    /// The first record at or after a timestamp in ms (`-o s@MS`).
    Timestamp(i64),
}

impl Start {
    /// Parses `-o`.
    pub fn parse(s: &str) -> Result<Start, Failure> {
        let bad = || {
            Failure::usage(format!(
                "-o expects beginning, end, OFFSET, -N or s@TIMESTAMP_MS, got `{s}`"
            ))
        };
        Ok(match s {
            "beginning" | "earliest" | "smallest" => Start::Beginning,
            "end" | "latest" | "largest" => Start::End,
            _ => {
                if let Some(ts) = s.strip_prefix("s@") {
                    Start::Timestamp(ts.parse().map_err(|_| bad())?)
                } else if let Some(n) = s.strip_prefix('-') {
                    Start::FromEnd(n.parse().map_err(|_| bad())?)
                } else {
                    Start::Offset(s.parse().map_err(|_| bad())?)
                }
            }
        })
    }
}

/// How records are printed.
enum Output {
    Format(Format),
    Json,
}

impl Output {
    fn write(&self, r: &ConsumerRecord, out: &mut impl Write) -> std::io::Result<()> {
        match self {
            Output::Format(f) => f.write(r, out),
            Output::Json => {
                serde_json::to_writer(&mut *out, &json(r))?;
                out.write_all(b"\n")
            }
        }
    }
}

/// One offset per partition from a single ListOffsets call.
async fn offsets(
    admin: &Admin,
    tps: &[TopicPartition],
    spec: OffsetSpec,
) -> Result<HashMap<TopicPartition, Option<i64>>, Failure> {
    let queries: Vec<(TopicPartition, OffsetSpec)> =
        tps.iter().map(|tp| (tp.clone(), spec)).collect();
    let mut out = HashMap::new();
    for (tp, r) in admin.list_offsets(&queries).await? {
        let found =
            r.map_err(|e| Failure::new(format!("offsets of {}[{}]: {e}", tp.topic, tp.partition)))?;
        out.insert(tp, found.map(|o| o.offset));
    }
    Ok(out)
}

/// Moves every partition to its start position.
async fn seek(
    admin: &Admin,
    consumer: &Consumer,
    tps: &[TopicPartition],
    start: Start,
    ends: &HashMap<TopicPartition, Option<i64>>,
) -> Result<(), Failure> {
    match start {
        Start::Beginning => consumer.seek_to_beginning(tps)?,
        Start::End => consumer.seek_to_end(tps)?,
        Start::Offset(o) => {
            for tp in tps {
                consumer.seek(tp, o)?;
            }
        }
        Start::FromEnd(n) => {
            let lows = offsets(admin, tps, OffsetSpec::Earliest).await?;
            for tp in tps {
                let high = ends.get(tp).copied().flatten().unwrap_or(0);
                let low = lows.get(tp).copied().flatten().unwrap_or(0);
                consumer.seek(tp, high.saturating_sub(n).max(low))?;
            }
        }
        Start::Timestamp(ms) => {
            let found = offsets(admin, tps, OffsetSpec::Timestamp(ms)).await?;
            for tp in tps {
                match found.get(tp).copied().flatten() {
                    Some(o) => consumer.seek(tp, o)?,
                    None => consumer.seek_to_end(std::slice::from_ref(tp))?,
                }
            }
        }
    }
    Ok(())
}

/// The client settings `-G` implies: `group.id`, and `auto.offset.reset` from `-o` (which must
/// then be `beginning` or `end`: a group resumes at its committed offsets). Empty without `-G`.
pub fn group_props(args: &ConsumeArgs) -> Result<Vec<(String, String)>, Failure> {
    let Some(group) = &args.group else {
        return Ok(Vec::new());
    };
    if group.trim().is_empty() {
        return Err(Failure::usage("-G expects a non-empty group id"));
    }
    let reset = match Start::parse(&args.offset)? {
        Start::Beginning => "earliest",
        Start::End => "latest",
        _ => {
            return Err(Failure::usage(format!(
                "with -G, -o must be beginning or end (the group's committed offsets decide \
                 the rest), got `{}`",
                args.offset
            )))
        }
    };
    Ok(vec![
        ("group.id".to_string(), group.clone()),
        ("auto.offset.reset".to_string(), reset.to_string()),
    ])
}

/// Runs the consume command.
pub async fn run(config: ClientConfig, admin: &Admin, args: &ConsumeArgs) -> Result<(), Failure> {
    let output = if args.json {
        Output::Json
    } else {
        Output::Format(Format::parse(&args.format).map_err(Failure::usage)?)
    };
    let tps = partitions::of_topic(admin, &args.topic, args.partition).await?;
    let ends = offsets(admin, &tps, OffsetSpec::Latest).await?;
    let consumer = Consumer::new(config)?;
    let result = if args.group.is_some() {
        consume_in_group(&consumer, &ends, &output, args).await
    } else {
        let start = Start::parse(&args.offset)?;
        consumer.assign(&tps);
        match seek(admin, &consumer, &tps, start, &ends).await {
            Ok(()) => print_records(&consumer, Some(&tps), &ends, &output, args).await,
            Err(e) => Err(e),
        }
    };
    consumer.close().await;
    result
}

/// Group mode: subscribe, print what the group assigns, commit what was printed on the way out.
async fn consume_in_group(
    consumer: &Consumer,
    ends: &HashMap<TopicPartition, Option<i64>>,
    output: &Output,
    args: &ConsumeArgs,
) -> Result<(), Failure> {
    consumer.subscribe(&[args.topic.as_str()], None)?;
    let printed = print_records(consumer, None, ends, output, args).await;
    // Positions are past every printed record: commit them so the next run resumes there.
    let committed = if consumer.assignment().is_empty() {
        Ok(())
    } else {
        consumer.commit_sync(None).await.map_err(Failure::from)
    };
    printed.and(committed)
}

/// Whether every partition in `tps` reached its end offset as of start.
async fn all_at_end(
    consumer: &Consumer,
    tps: &[TopicPartition],
    ends: &HashMap<TopicPartition, Option<i64>>,
) -> Result<bool, Failure> {
    for tp in tps {
        let end = ends.get(tp).copied().flatten().unwrap_or(0);
        if consumer.position(tp).await? < end {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Prints records until `-c`, `-e` or Ctrl-C. `fixed` is the assignment when it cannot change;
/// `None` (group mode) checks `-e` against whatever the group assigned at the time, and only
/// once it assigned something.
async fn print_records(
    consumer: &Consumer,
    fixed: Option<&[TopicPartition]>,
    ends: &HashMap<TopicPartition, Option<i64>>,
    output: &Output,
    args: &ConsumeArgs,
) -> Result<(), Failure> {
    let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout());
    let limit = args.count.unwrap_or(u64::MAX);
    let mut printed = 0u64;
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    loop {
        if args.exit_at_end {
            let current = match fixed {
                Some(tps) => tps.to_vec(),
                None => consumer.assignment(),
            };
            let waiting_for_group = fixed.is_none() && current.is_empty();
            if !waiting_for_group && all_at_end(consumer, &current, ends).await? {
                break;
            }
        }
        if printed >= limit {
            break;
        }
        let records = tokio::select! {
            r = consumer.poll(Duration::from_millis(200)) => r?,
            _ = &mut interrupted => break,
        };
        for r in &records {
            if printed >= limit {
                break;
            }
            if let Err(e) = output.write(r, &mut out) {
                return quiet_on_closed_pipe(e);
            }
            printed += 1;
        }
        if records.is_empty() || args.exit_at_end {
            if let Err(e) = out.flush() {
                return quiet_on_closed_pipe(e);
            }
        }
        if records.is_empty() && out::stdout_closed() {
            return Ok(());
        }
    }
    out.flush().or_else(quiet_on_closed_pipe)
}

/// A reader that went away (`| head`) is a normal end, not an error.
fn quiet_on_closed_pipe(e: std::io::Error) -> Result<(), Failure> {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Ok(())
    } else {
        Err(e.into())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn parses_kcat_offsets() {
        assert_eq!(Start::parse("beginning").unwrap(), Start::Beginning);
        assert_eq!(Start::parse("end").unwrap(), Start::End);
        assert_eq!(Start::parse("42").unwrap(), Start::Offset(42));
        assert_eq!(Start::parse("-5").unwrap(), Start::FromEnd(5));
        assert_eq!(
            Start::parse("s@1700000000000").unwrap(),
            Start::Timestamp(1_700_000_000_000)
        );
        for bad in ["", "soon", "-x", "s@"] {
            assert!(Start::parse(bad).is_err(), "{bad}");
        }
    }
}
