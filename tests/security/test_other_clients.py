"""The Java client (kafka-clients 4.4, JavaSecurity.java) and kafkajs 2.2.4
(kafkajs_security.js) against the secured brokers: SSL, mTLS, SASL_SSL with every mechanism,
and a wrong password. run.sh installs both (kafka.sh install, npm install into .cache/node)."""
import os
import subprocess

from conftest import HERE, KAFKA_SH

NODE_MODULES = os.path.join(HERE, ".cache", "node", "node_modules")


def listeners_env(broker, tmp_path):
    path = tmp_path / "listeners.env"
    path.write_text("".join("%s=%s\n" % kv for kv in broker.listeners.items()))
    return str(path)


def run(cmd, env=None, timeout=300):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=timeout)
    return r.returncode, r.stdout


def test_java_client(broker, tmp_path):
    cp = subprocess.run([KAFKA_SH, "classpath"], check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
    rc, out = run(["java", "-cp", cp, "-Dlog4j2.configurationFile=" + os.path.join(HERE, "..", "compat", ".cache",
                   "kafka-tools-log4j2.properties"), os.path.join(HERE, "JavaSecurity.java"),
                   listeners_env(broker, tmp_path), broker.pki])
    assert rc == 0 and out.rstrip().endswith("OK"), out[-4000:]
    for case in ["SSL", "MTLS", "SASL_SSL PLAIN", "SASL_SSL SCRAM-SHA-256", "SASL_SSL SCRAM-SHA-512", "SASL_SSL OAUTHBEARER"]:
        assert "ok %s\n" % case in out, out[-4000:]
    assert "refused wrong password" in out


def test_kafkajs(broker, tmp_path):
    assert os.path.isdir(os.path.join(NODE_MODULES, "kafkajs")), "run tests/security/run.sh (npm install kafkajs)"
    env = dict(os.environ, NODE_PATH=NODE_MODULES)
    rc, out = run(["node", os.path.join(HERE, "kafkajs_security.js"), listeners_env(broker, tmp_path), broker.pki], env=env)
    assert rc == 0 and out.rstrip().endswith("OK"), out[-4000:]
    assert "refused wrong password" in out
