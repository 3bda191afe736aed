"""Runs dropin_check.py on odradek and on confluent-kafka against the same broker, and the
examples in examples/python/."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
EXAMPLES = REPO / "examples" / "python"


def confluent_python():
    """The python of tests/compat's peer venv (confluent-kafka), installed if missing."""
    py = os.environ.get("ODRADEK_CONFLUENT_PYTHON")
    if py:
        return py
    if os.environ.get("ODRADEK_SKIP_COMPAT"):
        pytest.skip("ODRADEK_SKIP_COMPAT is set: no third-party peers")
    out = subprocess.run([str(REPO / "tests" / "compat" / "python-peers.sh"), "install"],
                         check=True, stdout=subprocess.PIPE, text=True, timeout=900)
    return out.stdout.strip().splitlines()[-1]


def run(py, *args, timeout=120):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([py, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stdout
    return proc.stdout


@pytest.mark.parametrize("client", ["odradek", "confluent"])
def test_dropin_check(bootstrap, topic, client):
    py = sys.executable if client == "odradek" else confluent_python()
    out = run(py, HERE / "dropin_check.py", client, bootstrap, topic)
    assert out.rstrip().endswith("checks passed"), out
    assert "FAILED" not in out


def test_dropin_check_passes_the_same_checks_on_both(bootstrap, topic):
    ours = run(sys.executable, HERE / "dropin_check.py", "odradek", bootstrap, topic + "-a")
    theirs = run(confluent_python(), HERE / "dropin_check.py", "confluent", bootstrap, topic + "-b")

    def lines(out):
        return [l for l in out.splitlines() if l.startswith("ok - ")]

    assert lines(ours) == lines(theirs)


def test_examples(bootstrap, topic):
    out = run(sys.executable, EXAMPLES / "producer.py", bootstrap, topic, 25)
    assert out.count("delivered key-") == 25
    out = run(sys.executable, EXAMPLES / "consumer.py", bootstrap, topic)
    assert "read 25 messages from 3 partitions" in out
    assert "value=b'message 0'" in out and "('source', b'example')" in out
    group = topic + "-group"
    first = run(sys.executable, EXAMPLES / "consumer_group.py", bootstrap, topic, group, 15)
    assert "assigned: [0, 1, 2]" in first and "revoked: [0, 1, 2]" in first, first
    assert "group %s read 15 messages" % group in first
    # A second run resumes where the first committed: the other 10 messages, none again.
    second = run(sys.executable, EXAMPLES / "consumer_group.py", bootstrap, topic, group, 10)
    assert "group %s read 10 messages" % group in second

    def records(out):
        return {line.split(":")[0] for line in out.splitlines() if " @ " in line}

    assert len(records(first) | records(second)) == 25 and not records(first) & records(second)


def test_partitioners_place_keys_like_librdkafka(bootstrap, topic_name):
    """Every librdkafka partitioner name, and the default (librdkafka's consistent_random),
    puts the same keys on the same partitions as confluent-kafka does."""
    from conftest import create_topic
    create_topic(bootstrap, topic_name, partitions=7)
    ours = json.loads(run(sys.executable, HERE / "partition_check.py", "odradek", bootstrap,
                          topic_name).splitlines()[-1])
    theirs = json.loads(run(confluent_python(), HERE / "partition_check.py", "confluent",
                            bootstrap, topic_name).splitlines()[-1])
    assert set(ours) == set(theirs)
    for name in theirs:
        assert ours[name] == theirs[name], name
    # The keys really are spread (a broken hash putting everything on one partition fails).
    assert len(set(ours["consistent_random"])) == 7
