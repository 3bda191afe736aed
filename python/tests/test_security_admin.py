"""ACL and SCRAM credential administration through ``odradek.admin.AdminClient`` with
confluent-kafka's classes and result shapes, against the secured broker of
tests/security/client.sh (skipped without it). Each scenario also runs with confluent-kafka
itself when it is installed, so the two behave alike.

A super user (``admin``) creates ACLs that deny a fresh principal writes to a topic; the
principal's produce fails with TOPIC_AUTHORIZATION_FAILED until the ACLs are deleted. A SCRAM
user made through ``alter_user_scram_credentials`` logs in, is described, and cannot log in once
deleted. Bad input fails locally with confluent-kafka's TypeError / ValueError.
"""
import importlib
import os
import time
import uuid

import pytest

LISTENERS = os.environ.get("ODRADEK_SECURITY_LISTENERS")
PKI = os.environ.get("ODRADEK_SECURITY_PKI")
pytestmark = pytest.mark.skipif(not (LISTENERS and PKI),
                                reason="no secured broker (tests/security/client.sh sets one up)")


def _clients():
    out = ["odradek"]
    try:
        importlib.import_module("confluent_kafka")
        out.append("confluent_kafka")
    except ImportError:
        pass
    return out


@pytest.fixture(params=_clients())
def kafka(request):
    """The client package under test: ``odradek`` or ``confluent_kafka``."""
    pkg = importlib.import_module(request.param)
    pkg.admin = importlib.import_module(request.param + ".admin")
    return pkg


def listener(name):
    with open(LISTENERS) as f:
        return dict(line.strip().split("=", 1) for line in f if "=" in line)[name]


def conf(**extra):
    c = {"bootstrap.servers": listener("SASL_SSL"), "security.protocol": "SASL_SSL",
         "ssl.ca.location": os.path.join(PKI, "ca.pem"),
         "socket.connection.setup.timeout.ms": 5000, "request.timeout.ms": 10000}
    c.update(extra)
    return c


def super_user():
    return conf(**{"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "admin",
                   "sasl.password": "admin-secret"})


def as_principal(name):
    """Logs in as User:<name> (unsecured OAUTHBEARER: the token's subject is the principal)."""
    return conf(**{"sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
                   "sasl.oauthbearer.config": "principal=%s" % name,
                   "message.timeout.ms": 15000})


def produce(kafka, config, topic):
    """One record; its delivery error or None."""
    outcome = []
    p = kafka.Producer(config)
    p.produce(topic, b"v", partition=0, on_delivery=lambda e, m: outcome.append(e))
    assert p.flush(30) == 0
    return outcome[0]


def until(check, what, timeout=20):
    """Kafka applies ACL and credential changes through its metadata log: retries `check`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_acls_are_created_described_enforced_and_deleted(kafka):
    A = kafka.admin
    admin = A.AdminClient(super_user())
    topic = "py-acl-%s" % uuid.uuid4().hex[:8]
    admin.create_topics([A.NewTopic(topic, 1, 1)])[topic].result(30)
    name = "py-acl-user-%s" % uuid.uuid4().hex[:8]
    principal = "User:" + name
    assert produce(kafka, as_principal(name), topic) is None

    allow = A.AclBinding(A.ResourceType.TOPIC, topic, A.ResourcePatternType.LITERAL, principal,
                         "*", A.AclOperation.DESCRIBE, A.AclPermissionType.ALLOW)
    deny = A.AclBinding(A.ResourceType.TOPIC, topic, A.ResourcePatternType.LITERAL, principal,
                        "*", A.AclOperation.WRITE, A.AclPermissionType.DENY)
    created = admin.create_acls([allow, deny])
    assert set(created) == {allow, deny}
    for f in created.values():
        assert f.result(30) is None

    mine = A.AclBindingFilter(A.ResourceType.ANY, None, A.ResourcePatternType.ANY, principal,
                              None, A.AclOperation.ANY, A.AclPermissionType.ANY)
    # Kafka answers CreateAcls/DeleteAcls before every broker's authorizer has applied the change
    # from the metadata log, so a describe right after may see the old set: ask until it settles.
    def described(acl_filter, expected):
        return lambda: sorted(admin.describe_acls(acl_filter).result(30)) == sorted(expected)

    until(described(mine, [allow, deny]), "the created ACLs are never described")
    on_topic = A.AclBindingFilter(A.ResourceType.TOPIC, topic, A.ResourcePatternType.MATCH,
                                  None, None, A.AclOperation.WRITE, A.AclPermissionType.ANY)
    assert admin.describe_acls(on_topic).result(30) == [deny]

    err = until(lambda: produce(kafka, as_principal(name), topic), "the DENY was not enforced")
    assert err.code() == kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED, err
    assert produce(kafka, super_user(), topic) is None

    deleted = admin.delete_acls([mine])
    assert sorted(deleted[mine].result(30)) == sorted([allow, deny])
    until(described(mine, []), "the deleted ACLs are still described")
    until(lambda: produce(kafka, as_principal(name), topic) is None,
          "still denied after the ACLs were deleted")
    admin.delete_topics([topic])[topic].result(30)


def test_acl_input_is_checked_locally(kafka):
    A = kafka.admin
    with pytest.raises(ValueError):
        A.AclBinding(A.ResourceType.TOPIC, "t", A.ResourcePatternType.MATCH, "User:a", "*",
                     A.AclOperation.READ, A.AclPermissionType.ALLOW)
    with pytest.raises(ValueError):
        A.AclBinding(A.ResourceType.ANY, "t", A.ResourcePatternType.LITERAL, "User:a", "*",
                     A.AclOperation.READ, A.AclPermissionType.ALLOW)
    with pytest.raises(ValueError):
        A.AclBindingFilter(A.ResourceType.UNKNOWN, None, A.ResourcePatternType.ANY, None, None,
                           A.AclOperation.ANY, A.AclPermissionType.ANY)
    # Names are accepted for enums, as in confluent-kafka.
    b = A.AclBinding("topic", "t", "literal", "User:a", "*", "read", "allow")
    assert b.restype == A.ResourceType.TOPIC and b.operation == A.AclOperation.READ
    admin = A.AdminClient(super_user())
    with pytest.raises(ValueError):
        admin.create_acls([b, b])
    # A principal that is not Type:name is refused by the broker (or locally) for that binding.
    bad = A.AclBinding(A.ResourceType.TOPIC, "t", A.ResourcePatternType.LITERAL, "nobody", "*",
                       A.AclOperation.READ, A.AclPermissionType.ALLOW)
    with pytest.raises(kafka.KafkaException) as e:
        admin.create_acls([bad])[bad].result(30)
    assert e.value.args[0].code() == kafka.KafkaError.INVALID_REQUEST


def test_scram_credentials_are_made_listed_used_and_deleted(kafka):
    A = kafka.admin
    admin = A.AdminClient(super_user())
    user = "py-scram-%s" % uuid.uuid4().hex[:8]
    password = ("%s-pw" % user).encode()
    info = A.ScramCredentialInfo(A.ScramMechanism.SCRAM_SHA_256, 8192)
    upsert = A.UserScramCredentialUpsertion(user, info, password)
    futs = admin.alter_user_scram_credentials([upsert])
    assert list(futs) == [user]
    assert futs[user].result(30) is None

    # Kafka applies the alteration a moment after answering (through its metadata log): a
    # describe sent at once may still find no credential, so ask until it does.
    def describe():
        try:
            return admin.describe_user_scram_credentials([user])[user].result(30)
        except kafka.KafkaException as e:
            assert e.args[0].code() == kafka.KafkaError.RESOURCE_NOT_FOUND, e
            return None

    described = until(describe, "the new SCRAM credential is never described")
    assert described.user == user
    assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
        (A.ScramMechanism.SCRAM_SHA_256, 8192)]
    everyone = admin.describe_user_scram_credentials().result(30)
    assert {"alice", "admin", user} <= set(everyone)

    def login(pw):
        c = A.AdminClient(conf(**{"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": user,
                                  "sasl.password": pw}))
        try:
            c.list_topics(timeout=5)
            return True
        except kafka.KafkaException:
            return False

    until(lambda: login(password.decode()), "the new SCRAM user cannot log in")
    assert not login("wrong")

    futs = admin.alter_user_scram_credentials([
        A.UserScramCredentialDeletion(user, A.ScramMechanism.SCRAM_SHA_512)])
    with pytest.raises(kafka.KafkaException) as e:
        futs[user].result(30)
    assert e.value.args[0].code() == kafka.KafkaError.RESOURCE_NOT_FOUND
    with pytest.raises(kafka.KafkaException) as e:
        admin.describe_user_scram_credentials(["no-such-user-at-all"])[
            "no-such-user-at-all"].result(30)
    assert e.value.args[0].code() == kafka.KafkaError.RESOURCE_NOT_FOUND

    futs = admin.alter_user_scram_credentials([
        A.UserScramCredentialDeletion(user, A.ScramMechanism.SCRAM_SHA_256)])
    assert futs[user].result(30) is None
    until(lambda: not login(password.decode()), "the deleted SCRAM user can still log in")


def test_scram_input_is_checked_locally(kafka):
    A = kafka.admin
    admin = A.AdminClient(super_user())
    info = A.ScramCredentialInfo(A.ScramMechanism.SCRAM_SHA_256, 8192)
    with pytest.raises(TypeError):
        admin.alter_user_scram_credentials([A.UserScramCredentialUpsertion("u", info, "str")])
    with pytest.raises(ValueError):
        admin.alter_user_scram_credentials([A.UserScramCredentialUpsertion("", info, b"pw")])
    with pytest.raises(ValueError):
        admin.alter_user_scram_credentials([])
    with pytest.raises(ValueError):
        admin.describe_user_scram_credentials([""])
    few = A.ScramCredentialInfo(A.ScramMechanism.SCRAM_SHA_256, 10)
    futs = admin.alter_user_scram_credentials([A.UserScramCredentialUpsertion("u", few, b"pw")])
    with pytest.raises(kafka.KafkaException) as e:
        futs["u"].result(30)
    assert e.value.args[0].code() == kafka.KafkaError.UNACCEPTABLE_CREDENTIAL
    # The password never shows in a repr.
    assert "pw" not in repr(A.UserScramCredentialUpsertion("u", info, b"pw"))
