"""pytest plugin of :mod:`odradek.testing`, registered through the ``pytest11`` entry point.

Fixtures:

``kafka_cluster``
    A fresh in-process :class:`~odradek.testing.Cluster` for each test, stopped (and its data
    removed) after it. Shape it with a marker::

        @pytest.mark.kafka_cluster(brokers=3, partitions=3, topics={"orders": 6},
                                   config={"auto.create.topics.enable": "false"})
        def test_orders(kafka_cluster): ...

``kafka_bootstrap``
    That cluster's ``bootstrap.servers`` string, for tests that only need an address.

``kafka_cluster_factory``
    Starts more clusters in one test: ``kafka_cluster_factory(brokers=2)``; all are stopped
    after the test.

Nothing is imported from the extension until a fixture is used.
"""

import pytest

_MARKER = "kafka_cluster"


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "kafka_cluster(brokers=1, partitions=1, topics=None, config=None, storage='memory', "
        "record_requests=False): shape of the kafka_cluster fixture's in-process Kafka cluster",
    )


@pytest.fixture
def kafka_cluster_factory():
    from . import Cluster

    started = []

    def start(**kwargs):
        cluster = Cluster(**kwargs)
        started.append(cluster)
        return cluster

    yield start
    for cluster in started:
        cluster.stop()


@pytest.fixture
def kafka_cluster(request, kafka_cluster_factory):
    marker = request.node.get_closest_marker(_MARKER)
    kwargs = dict(marker.kwargs) if marker is not None else {}
    return kafka_cluster_factory(**kwargs)


@pytest.fixture
def kafka_bootstrap(kafka_cluster):
    return kafka_cluster.bootstrap_servers
