//! Command-line arguments. Short flags are kcat's (`-b`, `-X`, `-t`, `-p`, `-K`, `-o`, `-e`,
//! `-c`, `-f`, `-J`, `-G`), so muscle memory carries over; modes are subcommands.

use clap::{Args, Parser, Subcommand};

/// The whole command line.
#[derive(Debug, Parser)]
#[command(
    name = "odradek",
    version,
    about = "Kafka from the command line: produce, consume, topics, offsets and perf tests",
    after_help = "Properties (-X) use Apache Kafka / librdkafka names, e.g. -X acks=1 \
                  -X compression.type=zstd -X default.api.timeout.ms=30000.\n\
                  Examples:\n  \
                  odradek -b 127.0.0.1:9092 topics create logs --partitions 3\n  \
                  printf 'k1:v1\\nk2:v2\\n' | odradek -b 127.0.0.1:9092 produce -t logs -K :\n  \
                  odradek -b 127.0.0.1:9092 consume -t logs -o beginning -e -f '%k=%s\\n'"
)]
pub struct Cli {
    /// Bootstrap broker(s): host:port[,host:port...]
    #[arg(short = 'b', long = "brokers", value_name = "BROKERS", global = true)]
    pub brokers: Option<String>,
    /// Client property, repeatable (Kafka / librdkafka names)
    #[arg(short = 'X', value_name = "KEY=VALUE", global = true)]
    pub props: Vec<String>,
    /// What to do
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Produce one record per line of stdin
    Produce(ProduceArgs),
    /// Print records of a topic to stdout
    Consume(ConsumeArgs),
    /// List, create, describe or delete topics
    Topics {
        /// The topic action
        #[command(subcommand)]
        action: TopicsCommand,
    },
    /// Show partition watermarks, or the offsets for a timestamp
    Offsets(OffsetsArgs),
    /// Measure produce or consume throughput and latency
    Perf {
        /// The perf test
        #[command(subcommand)]
        action: PerfCommand,
    },
}

/// `produce`.
#[derive(Debug, Args)]
pub struct ProduceArgs {
    /// Topic to produce to
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Partition (default, or -1: the partitioner chooses)
    #[arg(short = 'p', long = "partition", allow_negative_numbers = true)]
    pub partition: Option<i32>,
    /// Split each line into key and value at the first DELIM (escapes like \t allowed)
    #[arg(short = 'K', long = "key-delimiter", value_name = "DELIM")]
    pub key_delimiter: Option<String>,
}

/// `consume`.
#[derive(Debug, Args)]
pub struct ConsumeArgs {
    /// Topic to consume
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Only this partition (default: all)
    #[arg(short = 'p', long = "partition")]
    pub partition: Option<i32>,
    /// Start: beginning | end | OFFSET | -N (N before the end) | s@TIMESTAMP_MS
    #[arg(
        short = 'o',
        long = "offset",
        default_value = "end",
        allow_hyphen_values = true
    )]
    pub offset: String,
    /// Exit once every partition reached its end offset as of start
    #[arg(short = 'e', long = "exit")]
    pub exit_at_end: bool,
    /// Exit after COUNT records
    #[arg(short = 'c', long = "count")]
    pub count: Option<u64>,
    /// Output format: %t topic, %p partition, %o offset, %k key, %K key length, %s value,
    /// %S value length, %T timestamp, %h headers, %% percent; \n \t \r \\ escapes
    #[arg(short = 'f', long = "format", default_value = "%s\\n")]
    pub format: String,
    /// One JSON object per record instead of -f
    #[arg(short = 'J', long = "json", conflicts_with = "format")]
    pub json: bool,
    /// Join consumer group GROUP: partitions come from the group, reading resumes at the
    /// group's committed offsets (else -o beginning|end) and offsets are auto-committed
    #[arg(
        short = 'G',
        long = "group",
        value_name = "GROUP",
        conflicts_with = "partition"
    )]
    pub group: Option<String>,
}

/// `topics ...`.
#[derive(Debug, Subcommand)]
pub enum TopicsCommand {
    /// List topics with their partition counts
    List,
    /// Create a topic
    Create {
        /// Topic name
        name: String,
        /// Partition count (default: the broker's num.partitions)
        #[arg(long = "partitions")]
        partitions: Option<i32>,
        /// Replication factor (default: the broker's default.replication.factor)
        #[arg(long = "replication-factor")]
        replication_factor: Option<i16>,
        /// Topic config override, repeatable
        #[arg(long = "config", value_name = "KEY=VALUE")]
        configs: Vec<String>,
    },
    /// Delete a topic
    Delete {
        /// Topic name
        name: String,
    },
    /// Show a topic's id, partitions, leaders, replicas and config overrides
    Describe {
        /// Topic name
        name: String,
    },
    /// Elect a leader: the preferred replica, or with --unclean any live replica of a
    /// partition without a leader (data it lacks is lost)
    Elect {
        /// Topic name
        name: String,
        /// Partition (default: all of the topic's)
        #[arg(short = 'p', long = "partition")]
        partition: Option<i32>,
        /// An unclean election
        #[arg(long = "unclean")]
        unclean: bool,
    },
}

/// `offsets`.
#[derive(Debug, Args)]
pub struct OffsetsArgs {
    /// Topic
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Only this partition (default: all)
    #[arg(short = 'p', long = "partition")]
    pub partition: Option<i32>,
    /// Instead of watermarks, the first offset at or after this timestamp (ms)
    #[arg(long = "time", value_name = "MS", allow_negative_numbers = true)]
    pub time: Option<i64>,
    /// Instead of watermarks, consumer group GROUP's committed offsets and lag
    #[arg(
        short = 'G',
        long = "group",
        value_name = "GROUP",
        conflicts_with = "time"
    )]
    pub group: Option<String>,
}

/// `perf ...`.
#[derive(Debug, Subcommand)]
pub enum PerfCommand {
    /// Produce COUNT records of SIZE bytes and report throughput and send-to-ack latency
    Produce(PerfProduceArgs),
    /// Consume COUNT records from the beginning and report throughput
    Consume(PerfConsumeArgs),
}

/// `perf produce`.
#[derive(Debug, Args)]
pub struct PerfProduceArgs {
    /// Topic
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Records to send
    #[arg(long = "count")]
    pub count: u64,
    /// Value size in bytes
    #[arg(long = "size")]
    pub size: usize,
    /// Target rate in records per second (default: as fast as possible)
    #[arg(long = "rate", value_name = "MSGS_PER_S")]
    pub rate: Option<f64>,
    /// Acknowledgements: 0, 1 or all
    #[arg(long = "acks", default_value = "all", value_parser = ["0", "1", "all", "-1"])]
    pub acks: String,
    /// Compression codec
    #[arg(long = "codec", default_value = "none", value_parser = ["none", "gzip", "snappy", "lz4", "zstd"])]
    pub codec: String,
}

/// `perf consume`.
#[derive(Debug, Args)]
pub struct PerfConsumeArgs {
    /// Topic
    #[arg(short = 't', long = "topic")]
    pub topic: String,
    /// Records to consume
    #[arg(long = "count")]
    pub count: u64,
    /// Give up when no record arrived for this long (ms)
    #[arg(long = "timeout", value_name = "MS", default_value_t = 10_000)]
    pub timeout_ms: u64,
}
