"""Client settings per listener and mechanism, for confluent-kafka (librdkafka) and kafka-python."""
import base64
import json
import os
import time

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]


def key_password(pki):
    with open(os.path.join(pki, "client-key-password.txt")) as f:
        return f.read().strip()


def ck_conf(broker, listener, mechanism=None, user="alice", password=None, cert="client"):
    """librdkafka settings."""
    pki = broker.pki
    conf = {"bootstrap.servers": broker.addr(listener), "socket.timeout.ms": 10000,
            "reconnect.backoff.max.ms": 1000}
    if listener in ("SSL", "MTLS", "SASL_SSL"):
        conf["security.protocol"] = "SASL_SSL" if listener == "SASL_SSL" else "SSL"
        conf["ssl.ca.location"] = os.path.join(pki, "ca.pem")
    if listener == "MTLS" and cert:
        conf["ssl.certificate.location"] = os.path.join(pki, cert + ".pem")
        if cert == "client":
            # The client's encrypted PKCS#8 key, with its password.
            conf["ssl.key.location"] = os.path.join(pki, "client-encrypted.key")
            conf["ssl.key.password"] = key_password(pki)
        else:
            conf["ssl.key.location"] = os.path.join(pki, cert + ".key")
    if listener == "SASL_PLAINTEXT":
        conf["security.protocol"] = "SASL_PLAINTEXT"
    if listener.startswith("SASL"):
        conf["sasl.mechanism"] = mechanism
        if mechanism == "OAUTHBEARER":
            conf["enable.sasl.oauthbearer.unsecure.jwt"] = True
            conf["sasl.oauthbearer.config"] = "principal=%s" % user
        else:
            conf["sasl.username"] = user
            conf["sasl.password"] = password or "%s-secret" % user
    return conf


class UnsecuredToken:
    """kafka-python's token provider: an unsecured JWT (alg none), what Kafka's default
    validator accepts."""

    def __init__(self, sub):
        self.sub = sub

    def token(self):
        enc = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()
        now = int(time.time())
        return "%s.%s." % (enc({"alg": "none"}), enc({"sub": self.sub, "iat": now, "exp": now + 3600}))

    def extensions(self):
        return {}


def kp_conf(broker, listener, mechanism=None, user="alice"):
    """kafka-python settings."""
    pki = broker.pki
    conf = {"bootstrap_servers": broker.addr(listener), "request_timeout_ms": 20000}
    if listener in ("SSL", "MTLS", "SASL_SSL"):
        conf["security_protocol"] = "SASL_SSL" if listener == "SASL_SSL" else "SSL"
        conf["ssl_cafile"] = os.path.join(pki, "ca.pem")
        conf["ssl_check_hostname"] = True
    if listener == "MTLS":
        conf["ssl_certfile"] = os.path.join(pki, "client.pem")
        conf["ssl_keyfile"] = os.path.join(pki, "client-encrypted.key")
        conf["ssl_password"] = key_password(pki)
    if listener == "SASL_PLAINTEXT":
        conf["security_protocol"] = "SASL_PLAINTEXT"
    if listener.startswith("SASL"):
        conf["sasl_mechanism"] = mechanism
        if mechanism == "OAUTHBEARER":
            try:
                from kafka.net.sasl.oauth import AbstractTokenProvider
            except ImportError:  # kafka-python < 3
                from kafka.sasl.oauth import AbstractTokenProvider

            class Provider(AbstractTokenProvider):
                def token(self_inner):
                    return UnsecuredToken(user).token()
            conf["sasl_oauth_token_provider"] = Provider()
        else:
            conf["sasl_plain_username"] = user
            conf["sasl_plain_password"] = "%s-secret" % user
    return conf
