//! `Consumer::commit_async`: commits handed to one background task that sends them one after
//! another in call order, so a later commit never lands before an earlier one (Java's
//! `commitAsync` guarantee), each reporting its own result.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::group::GroupClient;
use crate::types::TopicPartition;
use crate::{Error, Result};

/// One queued commit.
struct Job {
    offsets: Vec<(TopicPartition, i64, Option<String>)>,
    done: oneshot::Sender<Result<()>>,
}

/// The queue and its task (which ends when the consumer drops the queue).
#[derive(Debug)]
pub(crate) struct AsyncCommitter {
    jobs: mpsc::UnboundedSender<Job>,
}

impl AsyncCommitter {
    /// Starts the task on the current runtime.
    pub(crate) fn start(group: Arc<tokio::sync::Mutex<GroupClient>>) -> AsyncCommitter {
        let (jobs, mut queue) = mpsc::unbounded_channel::<Job>();
        tokio::spawn(async move {
            while let Some(job) = queue.recv().await {
                let result = match group.lock().await.commit(&job.offsets).await {
                    Ok(codes) => match codes.into_iter().find(|(_, c)| !c.is_ok()) {
                        Some((_, code)) => Err(Error::Kafka(code)),
                        None => Ok(()),
                    },
                    Err(e) => Err(e),
                };
                let _ = job.done.send(result);
            }
        });
        AsyncCommitter { jobs }
    }

    /// Queues `offsets`; the future resolves when they were committed (or failed). Dropping the
    /// future does not cancel the commit.
    pub(crate) fn submit(
        &self,
        offsets: Vec<(TopicPartition, i64, Option<String>)>,
    ) -> impl Future<Output = Result<()>> + Send + 'static {
        let (done, result) = oneshot::channel();
        let queued = self.jobs.send(Job { offsets, done }).is_ok();
        async move {
            if !queued {
                return Err(Error::Closed);
            }
            result.await.unwrap_or(Err(Error::Closed))
        }
    }
}
