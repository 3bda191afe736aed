//! DescribeCluster and DescribeLogDirs.

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{
    BrokerId, DescribeClusterRequest, DescribeClusterResponse, DescribeLogDirsRequest,
    DescribeLogDirsResponse, ResponseKind, TopicName,
};
use odradek::ErrorCode;

use super::context::RequestContext;
use super::reply::{sb, HandlerResult};
use crate::broker::Broker;

/// Handles DescribeCluster (brokers endpoint type only: this node is its own controller).
pub fn describe_cluster(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    request: &DescribeClusterRequest,
) -> ResponseKind {
    let rack = broker.config.get("broker.rack");
    let mut response = DescribeClusterResponse::default()
        .with_endpoint_type(request.endpoint_type)
        .with_cluster_id(sb(&broker.cluster_id))
        .with_controller_id(BrokerId(broker.node_id))
        .with_cluster_authorized_operations(if request.include_cluster_authorized_operations {
            super::metadata::cluster_operations(broker, ctx)
        } else {
            i32::MIN
        });
    if request.endpoint_type > 1 {
        return ResponseKind::DescribeCluster(
            response
                .with_error_code(ErrorCode::UnsupportedEndpointType.code())
                .with_error_message(Some(sb("only the brokers endpoint type is served"))),
        );
    }
    let _ = rack;
    response = response
        .with_controller_id(BrokerId(super::metadata::controller_id(
            broker,
            ctx.listener(),
        )))
        .with_brokers(
            super::metadata::live_brokers(broker, ctx.listener())
                .into_iter()
                .map(|(id, host, port, rack)| {
                    DescribeClusterBroker::default()
                        .with_broker_id(BrokerId(id))
                        .with_host(sb(host))
                        .with_port(i32::from(port))
                        .with_rack(rack.map(sb))
                })
                .collect(),
        );
    ResponseKind::DescribeCluster(response)
}

/// Handles DescribeLogDirs: the single data directory with the size and lag of each partition
/// whose log is here (in cluster mode, those this broker is a replica of).
pub fn describe_log_dirs(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    request: DescribeLogDirsRequest,
) -> HandlerResult {
    let wanted = request.topics;
    let mut topics = Vec::new();
    for topic in broker.topics.list() {
        let hosted = replicas_here(broker, &topic.name);
        let filter = match &wanted {
            None => None,
            Some(list) => match list.iter().find(|t| t.topic.as_str() == topic.name) {
                Some(t) => Some(t.partitions.clone()),
                None => continue,
            },
        };
        let mut partitions = Vec::new();
        for p in topic.partitions() {
            if filter.as_ref().is_some_and(|f| !f.contains(&p.index()))
                || hosted.as_ref().is_some_and(|h| !h.contains(&p.index()))
            {
                continue;
            }
            let log = p.log()?;
            // Kafka's lag of the current log: how far its end is behind the high watermark.
            let lag = (p.high_watermark() - log.log_end_offset()).max(0);
            partitions.push(
                DescribeLogDirsPartition::default()
                    .with_partition_index(p.index())
                    .with_partition_size(log.size_bytes() as i64)
                    .with_offset_lag(lag),
            );
        }
        // As Kafka, a topic appears only with partitions whose logs are here.
        if partitions.is_empty() {
            continue;
        }
        topics.push(
            DescribeLogDirsTopic::default()
                .with_name(TopicName(sb(&topic.name)))
                .with_partitions(partitions),
        );
    }
    let dir = broker.config.log_dir();
    let absolute = std::fs::canonicalize(&dir).unwrap_or(dir);
    let (total, usable) = disk_space(&absolute);
    Ok(ResponseKind::DescribeLogDirs(
        DescribeLogDirsResponse::default().with_results(vec![DescribeLogDirsResult::default()
            .with_log_dir(sb(absolute.display().to_string()))
            .with_topics(topics)
            .with_total_bytes(total)
            .with_usable_bytes(usable)]),
    ))
}

/// In cluster mode, the partitions of `topic` this broker is a replica of (the image's
/// assignment: it keeps an empty directory for the others); `None` on a single node, which
/// hosts every partition.
fn replicas_here(broker: &Broker, topic: &str) -> Option<std::collections::BTreeSet<i32>> {
    let cluster = broker.cluster_node()?;
    Some(cluster.image.read(|image| {
        image.topics.get(topic).map_or_else(Default::default, |t| {
            t.partitions
                .iter()
                .filter(|(_, p)| p.replicas.contains(&broker.node_id))
                .map(|(index, _)| *index)
                .collect()
        })
    }))
}

/// Total and available bytes of the file system holding `path` (-1 when unknown).
fn disk_space(path: &std::path::Path) -> (i64, i64) {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return (-1, -1);
    };
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: c_path is a valid NUL-terminated string and stat points to writable memory.
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), stat.as_mut_ptr()) };
    if rc != 0 {
        return (-1, -1);
    }
    // SAFETY: statvfs returned 0, so it initialised the struct.
    let stat = unsafe { stat.assume_init() };
    let block = stat.f_frsize as i64;
    (stat.f_blocks as i64 * block, stat.f_bavail as i64 * block)
}
