//! `offsets`: watermarks per partition, the first offset at or after a timestamp, or a consumer
//! group's committed offsets and lag.
//!
//! Output, one line per partition (kcat `-Q` style):
//! `TOPIC [PARTITION] low LOW high HIGH`, or with `--time`:
//! `TOPIC [PARTITION] offset OFFSET timestamp TS` (`offset -1` when no record is that new), or
//! with `-G GROUP`: `TOPIC [PARTITION] committed OFFSET high HIGH lag LAG` (`committed -` and
//! `lag -` when the group committed nothing for the partition).

use odradek::admin::OffsetSpec;
use odradek::producer::TopicPartition;
use odradek::Admin;

use crate::args::OffsetsArgs;
use crate::failure::Failure;
use crate::out;
use crate::partitions;

/// Runs the offsets command.
pub async fn run(admin: &Admin, args: &OffsetsArgs) -> Result<(), Failure> {
    let tps = partitions::of_topic(admin, &args.topic, args.partition).await?;
    if let Some(group) = &args.group {
        return group_offsets(admin, group, &tps).await;
    }
    let specs: Vec<OffsetSpec> = match args.time {
        Some(ms) => vec![OffsetSpec::Timestamp(ms)],
        None => vec![OffsetSpec::Earliest, OffsetSpec::Latest],
    };
    let queries: Vec<(TopicPartition, OffsetSpec)> = tps
        .iter()
        .flat_map(|tp| specs.iter().map(move |s| (tp.clone(), *s)))
        .collect();
    let answers = admin.list_offsets(&queries).await?;
    for chunk in answers.chunks(specs.len()) {
        let mut found = Vec::with_capacity(chunk.len());
        let mut tp_name = String::new();
        for (tp, r) in chunk {
            tp_name = format!("{} [{}]", tp.topic, tp.partition);
            let offset = r
                .as_ref()
                .map_err(|e| Failure::new(format!("{tp_name}: {e}")))?;
            found.push(*offset);
        }
        match (args.time, found.as_slice()) {
            (Some(_), [one]) => {
                let (offset, ts) = one.map_or((-1, -1), |o| (o.offset, o.timestamp.unwrap_or(-1)));
                out::say!("{tp_name} offset {offset} timestamp {ts}")?;
            }
            (None, [low, high]) => {
                let get = |o: &Option<odradek::admin::ListedOffset>| o.map_or(-1, |o| o.offset);
                out::say!("{tp_name} low {} high {}", get(low), get(high))?;
            }
            _ => return Err(Failure::new(format!("{tp_name}: incomplete answer"))),
        }
    }
    Ok(())
}

/// Committed offsets of `group` for `tps`, with each partition's high watermark and the lag
/// between them (the records the group has yet to consume).
async fn group_offsets(admin: &Admin, group: &str, tps: &[TopicPartition]) -> Result<(), Failure> {
    let committed = admin.list_group_offsets(group, Some(tps)).await?;
    let queries: Vec<(TopicPartition, OffsetSpec)> = tps
        .iter()
        .map(|tp| (tp.clone(), OffsetSpec::Latest))
        .collect();
    let highs = admin.list_offsets(&queries).await?;
    for tp in tps {
        let name = format!("{} [{}]", tp.topic, tp.partition);
        let high = match highs.iter().find(|(t, _)| t == tp) {
            Some((_, Ok(found))) => found.map_or(-1, |o| o.offset),
            Some((_, Err(e))) => return Err(Failure::new(format!("{name}: {e}"))),
            None => return Err(Failure::new(format!("{name}: no high watermark"))),
        };
        let offset = match committed.iter().find(|c| &c.partition == tp) {
            Some(c) => match c.error {
                Some(code) if !code.is_ok() => {
                    return Err(Failure::new(format!("{name}: group {group}: {code}")))
                }
                _ => c.offset,
            },
            None => None,
        };
        match offset {
            Some(o) => {
                let lag = (high - o).max(0);
                out::say!("{name} committed {o} high {high} lag {lag}")?;
            }
            None => out::say!("{name} committed - high {high} lag -")?,
        }
    }
    Ok(())
}
