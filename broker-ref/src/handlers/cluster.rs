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

/// Handles DescribeLogDirs: the single data directory with per-partition sizes.
pub fn describe_log_dirs(
    broker: &Broker,
    _ctx: &RequestContext<'_>,
    request: DescribeLogDirsRequest,
) -> HandlerResult {
    let wanted = request.topics;
    let mut topics = Vec::new();
    for topic in broker.topics.list() {
        let filter = match &wanted {
            None => None,
            Some(list) => match list.iter().find(|t| t.topic.as_str() == topic.name) {
                Some(t) => Some(t.partitions.clone()),
                None => continue,
            },
        };
        let mut partitions = Vec::new();
        for p in topic.partitions() {
            if filter.as_ref().is_some_and(|f| !f.contains(&p.index())) {
                continue;
            }
            let size = p.log()?.size_bytes();
            partitions.push(
                DescribeLogDirsPartition::default()
                    .with_partition_index(p.index())
                    .with_partition_size(size as i64)
                    .with_offset_lag(0),
            );
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
