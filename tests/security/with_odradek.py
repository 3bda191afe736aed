#!/usr/bin/env python3
"""Runs a command against a secured odradek-broker (secure_brokers.py's: the same listeners, users
and authorizer as conftest.py's, and as tests/compat/kafka.sh's ODRADEK_KAFKA_SECURE Kafka):

    with_odradek.py PKIDIR WORKDIR -- COMMAND...

The broker's listeners go to WORKDIR/listeners.env (NAME=host:port, PLAINTEXT included);
ODRADEK_SECURITY_LISTENERS and ODRADEK_SECURITY_PKI are set for COMMAND. Exits with COMMAND's
status; the broker is stopped (SIGTERM, clean exit checked) whatever happens.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from secure_brokers import start_odradek  # noqa: E402


def main():
    pki, work = sys.argv[1], sys.argv[2]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    os.makedirs(work, exist_ok=True)
    broker = start_odradek(work, pki)
    try:
        env_file = os.path.join(work, "listeners.env")
        with open(env_file, "w") as f:
            for k, v in broker.listeners.items():
                f.write("%s=%s\n" % (k, v))
        env = dict(os.environ, ODRADEK_SECURITY_LISTENERS=env_file, ODRADEK_SECURITY_PKI=pki)
        rc = subprocess.call(cmd, env=env)
    finally:
        broker.stop()
    sys.exit(rc)


if __name__ == "__main__":
    main()
