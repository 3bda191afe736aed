//! `topics list|create|delete|describe|elect`.

use odradek::admin::{ConfigResource, ConfigSource, NewTopic};
use odradek::{Admin, Error, ErrorCode};

use crate::args::TopicsCommand;
use crate::connect::key_value;
use crate::failure::Failure;
use crate::out;

/// Runs a topics action.
pub async fn run(admin: &Admin, action: &TopicsCommand) -> Result<(), Failure> {
    match action {
        TopicsCommand::List => list(admin).await,
        TopicsCommand::Create {
            name,
            partitions,
            replication_factor,
            configs,
        } => create(admin, name, *partitions, *replication_factor, configs).await,
        TopicsCommand::Delete { name } => delete(admin, name).await,
        TopicsCommand::Describe { name } => describe(admin, name).await,
        TopicsCommand::Elect {
            name,
            partition,
            unclean,
        } => elect(admin, name, *partition, *unclean).await,
    }
}

/// A per-item error with the topic named, and a plain "does not exist" for the common case.
fn topic_failure(name: &str, e: Error) -> Failure {
    match e {
        Error::Kafka(ErrorCode::UnknownTopicOrPartition) => {
            Failure::new(format!("topic {name} does not exist"))
        }
        Error::Kafka(code) => Failure::new(format!("topic {name}: {}", code.name())),
        other => Failure::new(format!("topic {name}: {other}")),
    }
}

async fn list(admin: &Admin) -> Result<(), Failure> {
    for t in admin.list_topics().await? {
        let internal = if t.internal { " internal" } else { "" };
        out::say!("{}\t{} partitions{internal}", t.name, t.partitions)?;
    }
    Ok(())
}

async fn create(
    admin: &Admin,
    name: &str,
    partitions: Option<i32>,
    replication_factor: Option<i16>,
    configs: &[String],
) -> Result<(), Failure> {
    let mut topic = NewTopic::new(name);
    topic.partitions = partitions;
    topic.replication_factor = replication_factor;
    for c in configs {
        let (k, v) = key_value(c, "--config")?;
        topic = topic.config(k, v);
    }
    let result = admin.create_topics(&[topic], false).await?;
    match result.into_iter().next() {
        Some((_, Ok(created))) => {
            out::say!(
                "created topic {name}: {} partitions, replication factor {}, id {}",
                created.partitions,
                created.replication_factor,
                created.topic_id
            )?;
            Ok(())
        }
        Some((_, Err(e))) => Err(topic_failure(name, e)),
        None => Err(Failure::new(format!("topic {name}: no result"))),
    }
}

async fn delete(admin: &Admin, name: &str) -> Result<(), Failure> {
    match admin.delete_topics(&[name]).await?.into_iter().next() {
        Some((_, Ok(()))) => {
            out::say!("deleted topic {name}")?;
            Ok(())
        }
        Some((_, Err(e))) => Err(topic_failure(name, e)),
        None => Err(Failure::new(format!("topic {name}: no result"))),
    }
}

fn ids(v: &[i32]) -> String {
    v.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}

async fn describe(admin: &Admin, name: &str) -> Result<(), Failure> {
    let d = match admin.describe_topics(&[name]).await?.into_iter().next() {
        Some((_, Ok(d))) => d,
        Some((_, Err(e))) => return Err(topic_failure(name, e)),
        None => return Err(Failure::new(format!("topic {name}: no result"))),
    };
    let configs = admin
        .describe_configs(&[ConfigResource::Topic(name.to_string())])
        .await?
        .into_iter()
        .next()
        .map(|(_, r)| r)
        .transpose()
        .map_err(|e| topic_failure(name, e))?
        .unwrap_or_default();
    let overrides: Vec<String> = configs
        .iter()
        .filter(|c| c.source == ConfigSource::DynamicTopic)
        .map(|c| format!("{}={}", c.name, c.value.as_deref().unwrap_or("")))
        .collect();
    let internal = if d.internal { "\tinternal" } else { "" };
    out::say!(
        "topic {}\tid {}\tpartitions {}{internal}\tconfigs {}",
        d.name,
        d.topic_id,
        d.partitions.len(),
        if overrides.is_empty() {
            "-".to_string()
        } else {
            overrides.join(",")
        }
    )?;
    for p in &d.partitions {
        let leader = p.leader.map_or("none".to_string(), |l| l.to_string());
        let error = p
            .error
            .map(|e| format!("\terror {}", e.name()))
            .unwrap_or_default();
        out::say!(
            "  partition {}\tleader {leader}\treplicas {}\tisr {}{error}",
            p.partition,
            ids(&p.replicas),
            ids(&p.isr)
        )?;
    }
    Ok(())
}

/// ElectLeaders for one partition or all of a topic's; a partition that needs no election is
/// reported, not a failure.
async fn elect(
    admin: &Admin,
    name: &str,
    partition: Option<i32>,
    unclean: bool,
) -> Result<(), Failure> {
    let partitions: Vec<i32> = match partition {
        Some(p) => vec![p],
        None => {
            let described = admin.describe_topics(&[name]).await?;
            let t = described
                .into_iter()
                .next()
                .ok_or_else(|| Failure::new(format!("topic {name} does not exist")))?;
            t.1.map_err(|e| topic_failure(name, e))?
                .partitions
                .iter()
                .map(|p| p.partition)
                .collect()
        }
    };
    let election = if unclean {
        odradek::admin::ElectionType::Unclean
    } else {
        odradek::admin::ElectionType::Preferred
    };
    let wanted: Vec<(&str, i32)> = partitions.iter().map(|p| (name, *p)).collect();
    let mut failed = None;
    for ((topic, p), result) in admin.elect_leaders(election, &wanted).await? {
        match result {
            Ok(()) => out::say!("{topic}-{p}\telected")?,
            Err(Error::Kafka(ErrorCode::ElectionNotNeeded)) => {
                out::say!("{topic}-{p}\tno election needed")?
            }
            Err(e) => {
                out::say!("{topic}-{p}\tfailed: {e}")?;
                failed = Some(topic_failure(&topic, e));
            }
        }
    }
    failed.map_or(Ok(()), Err)
}
