//! The `odradek` binary end to end, against `odradek-broker` (or the broker named by
//! `ODRADEK_TEST_BOOTSTRAP`), started by the integration suite's `Target`.

#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use odradek_suite::{topic_name, Target};

/// What a run of the binary left behind.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs `odradek ARGS` with `stdin`, killing it (and failing the test) after 60 s.
fn odradek(args: &[&str], stdin: &str) -> Run {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_odradek"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let text = stdin.to_string();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(text.as_bytes());
    });
    let deadline = started + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("odradek {args:?} did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    writer.join().unwrap();
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: started.elapsed(),
    }
}

/// `odradek -b BOOTSTRAP ARGS`, which must succeed.
fn ok(target: &Target, args: &[&str], stdin: &str) -> Run {
    let mut all = vec!["-b", target.bootstrap.as_str()];
    all.extend_from_slice(args);
    let run = odradek(&all, stdin);
    assert_eq!(run.code, 0, "odradek {args:?}: {run:?}");
    run
}

/// `odradek ARGS`, which must fail with one line on stderr; returns that line.
fn fails(args: &[&str], code: i32) -> String {
    let run = odradek(args, "");
    assert_eq!(run.code, code, "odradek {args:?}: {run:?}");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "odradek {args:?} stderr: {:?}", run.stderr);
    assert!(lines[0].starts_with("odradek: "), "{:?}", lines[0]);
    assert!(!run.stderr.contains("panicked"), "{:?}", run.stderr);
    lines[0].to_string()
}

#[test]
fn produce_then_consume_with_formats_json_and_counts() {
    let target = Target::start(&[]);
    let topic = topic_name("cli-rt");
    let created = ok(
        &target,
        &["topics", "create", &topic, "--partitions", "1"],
        "",
    );
    assert!(created.stdout.contains("1 partitions"), "{created:?}");

    let run = ok(&target, &["produce", "-t", &topic], "a\nb\nc\n");
    assert_eq!(
        run.stderr.trim(),
        format!("produced 3 records to {topic}: 3 delivered, 0 failed")
    );
    let run = ok(
        &target,
        &["produce", "-t", &topic, "-p", "0", "-K", ":"],
        "k1:v1\nk2:v2:x\nnokey\n",
    );
    assert!(run.stderr.contains("3 delivered, 0 failed"), "{run:?}");

    let run = ok(
        &target,
        &[
            "consume",
            "-t",
            &topic,
            "-o",
            "beginning",
            "-e",
            "-f",
            "%p/%o %k=%s|%K\\n",
        ],
        "",
    );
    assert_eq!(
        run.stdout,
        "0/0 =a|-1\n0/1 =b|-1\n0/2 =c|-1\n0/3 k1=v1|2\n0/4 k2=v2:x|2\n0/5 =nokey|-1\n"
    );

    // Default format is the value alone; -c stops early; -o OFFSET and -o -N start mid-way.
    let run = ok(
        &target,
        &["consume", "-t", &topic, "-o", "beginning", "-c", "2"],
        "",
    );
    assert_eq!(run.stdout, "a\nb\n");
    let run = ok(&target, &["consume", "-t", &topic, "-o", "4", "-e"], "");
    assert_eq!(run.stdout, "v2:x\nnokey\n");
    let run = ok(&target, &["consume", "-t", &topic, "-o", "-1", "-e"], "");
    assert_eq!(run.stdout, "nokey\n");
    // -o end with -e: nothing new, exits at once.
    let run = ok(&target, &["consume", "-t", &topic, "-e"], "");
    assert_eq!(run.stdout, "");

    let run = ok(
        &target,
        &[
            "consume",
            "-t",
            &topic,
            "-p",
            "0",
            "-o",
            "beginning",
            "-e",
            "--json",
        ],
        "",
    );
    let objects: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objects.len(), 6);
    assert_eq!(objects[3]["key"], "k1");
    assert_eq!(objects[3]["payload"], "v1");
    assert_eq!(objects[3]["offset"], 3);
    assert_eq!(objects[3]["partition"], 0);
    assert_eq!(objects[3]["topic"], topic.as_str());
    assert_eq!(objects[0]["key"], serde_json::Value::Null);
    assert!(objects[0]["ts"].as_i64().unwrap() > 0);

    // Without -e the consumer runs until its reader goes away (`| head -1`), then exits 0.
    let mut child = Command::new(env!("CARGO_BIN_EXE_odradek"))
        .args([
            "-b",
            &target.bootstrap,
            "consume",
            "-t",
            &topic,
            "-o",
            "beginning",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut first,
    )
    .unwrap();
    assert_eq!(first, "a\n");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "consume kept running after its reader left"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));

    let run = ok(&target, &["offsets", "-t", &topic], "");
    assert_eq!(run.stdout, format!("{topic} [0] low 0 high 6\n"));
    let run = ok(
        &target,
        &["offsets", "-t", &topic, "-p", "0", "--time", "0"],
        "",
    );
    assert!(
        run.stdout
            .starts_with(&format!("{topic} [0] offset 0 timestamp ")),
        "{run:?}"
    );
    let run = ok(
        &target,
        &["offsets", "-t", &topic, "--time", "99999999999999"],
        "",
    );
    assert_eq!(run.stdout, format!("{topic} [0] offset -1 timestamp -1\n"));
}

#[test]
fn consume_in_a_group_resumes_at_committed_offsets() {
    let target = Target::start(&[]);
    let topic = topic_name("cli-group");
    ok(
        &target,
        &["topics", "create", &topic, "--partitions", "3"],
        "",
    );
    let lines: String = (0..30).map(|i| format!("r{i}\n")).collect();
    ok(&target, &["produce", "-t", &topic], &lines);
    let group = topic_name("cli-g");
    let consume = |target: &Target| {
        let run = ok(
            target,
            &[
                "consume",
                "-t",
                &topic,
                "-G",
                &group,
                "-o",
                "beginning",
                "-e",
            ],
            "",
        );
        let mut got: Vec<String> = run.stdout.lines().map(str::to_string).collect();
        got.sort();
        got
    };
    let mut want: Vec<String> = (0..30).map(|i| format!("r{i}")).collect();
    want.sort();
    assert_eq!(consume(&target), want, "first run reads everything");
    assert!(consume(&target).is_empty(), "second run resumes at the end");
    // `offsets -G`: committed offset, high watermark and lag per partition.
    let group_offsets = |group: &str| -> Vec<(String, String, String)> {
        let run = ok(&target, &["offsets", "-t", &topic, "-G", group], "");
        run.stdout
            .lines()
            .enumerate()
            .map(|(p, line)| {
                let rest = line
                    .strip_prefix(&format!("{topic} [{p}] committed "))
                    .unwrap_or_else(|| panic!("unexpected line {line:?}"));
                let f: Vec<&str> = rest.split(' ').collect();
                assert_eq!((f.len(), f[1], f[3]), (5, "high", "lag"), "{line:?}");
                (f[0].to_string(), f[2].to_string(), f[4].to_string())
            })
            .collect()
    };
    let caught_up = group_offsets(&group);
    assert_eq!(caught_up.len(), 3);
    let highs: i64 = caught_up
        .iter()
        .map(|(_, h, _)| h.parse::<i64>().unwrap())
        .sum();
    assert_eq!(highs, 30);
    assert!(
        caught_up.iter().all(|(c, h, lag)| c == h && lag == "0"),
        "{caught_up:?}"
    );
    ok(&target, &["produce", "-t", &topic], "n1\nn2\n");
    let behind = group_offsets(&group);
    let lag: i64 = behind
        .iter()
        .map(|(_, _, l)| l.parse::<i64>().unwrap())
        .sum();
    assert_eq!(lag, 2, "{behind:?}");
    let never = group_offsets(&topic_name("cli-no-such-group"));
    assert!(
        never.iter().all(|(c, _, lag)| c == "-" && lag == "-"),
        "{never:?}"
    );
    assert_eq!(
        consume(&target),
        vec!["n1", "n2"],
        "third run reads only new records"
    );
    assert!(group_offsets(&group).iter().all(|(_, _, lag)| lag == "0"));
}

#[test]
fn topics_create_list_describe_delete() {
    let target = Target::start(&[]);
    let topic = topic_name("cli-topics");
    ok(
        &target,
        &[
            "topics",
            "create",
            &topic,
            "--partitions",
            "2",
            "--config",
            "retention.ms=3600000",
        ],
        "",
    );
    let run = ok(&target, &["topics", "list"], "");
    assert!(
        run.stdout.contains(&format!("{topic}\t2 partitions\n")),
        "{run:?}"
    );
    let run = ok(&target, &["topics", "describe", &topic], "");
    let first = run.stdout.lines().next().unwrap();
    assert!(first.starts_with(&format!("topic {topic}\tid ")), "{first}");
    assert!(first.contains("partitions 2"), "{first}");
    assert!(first.contains("retention.ms=3600000"), "{first}");
    assert_eq!(
        run.stdout
            .lines()
            .filter(|l| l.trim_start().starts_with("partition "))
            .count(),
        2
    );

    let b = target.bootstrap.as_str();
    let line = fails(&["-b", b, "topics", "create", &topic], 1);
    assert!(line.contains("TOPIC_ALREADY_EXISTS"), "{line}");
    let line = fails(
        &[
            "-b",
            b,
            "topics",
            "create",
            &topic_name("cli-bad"),
            "--config",
            "retention.ms=soon",
        ],
        1,
    );
    assert!(line.contains("INVALID_CONFIG"), "{line}");

    let run = ok(&target, &["topics", "delete", &topic], "");
    assert_eq!(run.stdout.trim(), format!("deleted topic {topic}"));
    let line = fails(&["-b", b, "topics", "delete", &topic_name("cli-none")], 1);
    assert!(line.contains("does not exist"), "{line}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let run = odradek(&["-b", b, "topics", "describe", &topic], "");
        if run.code == 1 && run.stderr.contains("does not exist") {
            break;
        }
        assert!(Instant::now() < deadline, "topic still described: {run:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn perf_produce_and_consume_print_summaries() {
    let target = Target::start(&[]);
    let topic = topic_name("cli-perf");
    ok(
        &target,
        &["topics", "create", &topic, "--partitions", "2"],
        "",
    );
    let run = ok(
        &target,
        &[
            "perf", "produce", "-t", &topic, "--count", "500", "--size", "100", "--acks", "1",
            "--codec", "lz4", "--rate", "2000",
        ],
        "",
    );
    let summary = run.stdout.trim();
    assert!(
        summary.starts_with("perf produce: 500 msgs of 100 B in "),
        "{summary}"
    );
    for part in ["msgs/s", "MB/s", "p50", "p95", "p99", "max", "; 0 failed"] {
        assert!(summary.contains(part), "{part}: {summary}");
    }
    let run = ok(
        &target,
        &["perf", "consume", "-t", &topic, "--count", "500"],
        "",
    );
    let summary = run.stdout.trim();
    assert!(
        summary.starts_with("perf consume: 500 msgs (0.05 MB) in "),
        "{summary}"
    );
    assert!(
        summary.contains("msgs/s") && summary.contains("MB/s"),
        "{summary}"
    );
    // Asking for more than there is ends with the timeout, not a hang.
    let b = target.bootstrap.as_str();
    let line = fails(
        &[
            "-b",
            b,
            "perf",
            "consume",
            "-t",
            &topic,
            "--count",
            "501",
            "--timeout",
            "500",
        ],
        1,
    );
    assert!(line.contains("only 500 of 501"), "{line}");
}

#[test]
fn errors_are_one_line_and_non_zero() {
    let line = fails(&["-b", "127.0.0.1:9", "consume", "-t", "x", "--bogus"], 2);
    assert!(line.contains("--bogus"), "{line}");
    let line = fails(
        &[
            "-b",
            "127.0.0.1:9",
            "offsets",
            "-t",
            "x",
            "-G",
            "g",
            "--time",
            "0",
        ],
        2,
    );
    assert!(
        line.contains("--time") || line.contains("--group"),
        "{line}"
    );
    let line = fails(&["-b", "127.0.0.1:9", "fly"], 2);
    assert!(line.contains("fly"), "{line}");
    let line = fails(&["-b", "127.0.0.1:9"], 2);
    assert!(line.contains("subcommand"), "{line}");
    let line = fails(&[], 2);
    assert!(line.contains("subcommand"), "{line}");
    let line = fails(&["topics"], 2);
    assert!(line.contains("subcommand"), "{line}");
    let line = fails(&["topics", "list"], 2);
    assert!(line.contains("-b"), "{line}");
    let line = fails(
        &["-b", "127.0.0.1:9", "-X", "linger.ms", "topics", "list"],
        2,
    );
    assert!(line.contains("KEY=VALUE"), "{line}");
    let line = fails(
        &["-b", "127.0.0.1:9", "-X", "no.such=1", "topics", "list"],
        2,
    );
    assert!(line.contains("no.such"), "{line}");
    let line = fails(
        &[
            "-b",
            "127.0.0.1:9",
            "consume",
            "-t",
            "x",
            "-G",
            "g1",
            "-o",
            "5",
        ],
        2,
    );
    assert!(
        line.contains("with -G, -o must be beginning or end"),
        "{line}"
    );
    let line = fails(
        &[
            "-b",
            "127.0.0.1:9",
            "consume",
            "-t",
            "x",
            "-G",
            "g1",
            "-p",
            "0",
        ],
        2,
    );
    assert!(line.contains("--partition"), "{line}");

    // A closed port: refused connections are retried until the overall timeout (10 s by
    // default), then one line.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let started = Instant::now();
    let line = fails(&["-b", &addr, "topics", "list"], 1);
    assert!(line.contains("cannot reach the cluster"), "{line}");
    assert!(line.contains(&addr), "{line}");
    assert!(started.elapsed() < Duration::from_secs(20));
    let line = fails(
        &[
            "-b",
            &addr,
            "-X",
            "default.api.timeout.ms=500",
            "produce",
            "-t",
            "x",
        ],
        1,
    );
    assert!(line.contains("cannot reach the cluster"), "{line}");
    let run = odradek(&["--help"], "");
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("Usage: odradek"), "{run:?}");
    assert!(run.took < Duration::from_secs(20));
}

#[test]
fn bad_input_against_a_live_broker_is_one_line() {
    let target = Target::start(&[]);
    let b = target.bootstrap.as_str();
    let missing = topic_name("cli-missing");
    let line = fails(&["-b", b, "consume", "-t", &missing, "-e"], 1);
    assert!(line.contains("does not exist"), "{line}");
    let line = fails(&["-b", b, "offsets", "-t", &missing], 1);
    assert!(line.contains("does not exist"), "{line}");
    let topic = topic_name("cli-input");
    ok(
        &target,
        &["topics", "create", &topic, "--partitions", "1"],
        "",
    );
    let line = fails(&["-b", b, "consume", "-t", &topic, "-o", "soon"], 2);
    assert!(line.contains("-o"), "{line}");
    let line = fails(&["-b", b, "consume", "-t", &topic, "-f", "%q"], 2);
    assert!(line.contains("%q"), "{line}");
    let line = fails(&["-b", b, "consume", "-t", &topic, "-p", "3", "-e"], 1);
    assert!(line.contains("no partition 3"), "{line}");
}
