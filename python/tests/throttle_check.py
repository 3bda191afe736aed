"""One program for confluent-kafka and odradek: a producer whose client id has a
producer_byte_rate quota (set by the caller) produces 8 KiB records, one request at a time,
until throttle_cb reports a throttle time; prints that ThrottleEvent as JSON.

    python throttle_check.py confluent|odradek BOOTSTRAP TOPIC CLIENT_ID
"""
import json
import sys
import time

lib, bootstrap, topic, client_id = sys.argv[1:5]
if lib == "confluent":
    import confluent_kafka as ck
else:
    import odradek as ck

events = []
p = ck.Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 0,
                 "throttle_cb": events.append})
value = b"q" * 8192
deadline = time.monotonic() + 60
while not any(e.throttle_time > 0 for e in events):
    if time.monotonic() > deadline:
        sys.exit("never throttled: %r" % [str(e) for e in events])
    p.produce(topic, value, partition=0)
    p.flush(30)
e = next(e for e in events if e.throttle_time > 0)
print(json.dumps({
    "class": type(e).__name__,
    "is_throttle_event": isinstance(e, ck.ThrottleEvent),
    "broker_name": e.broker_name,
    "broker_id": e.broker_id,
    "throttle_time_type": type(e.throttle_time).__name__,
    "str_prefix": str(e).split(" throttled for ")[0],
    "str_ms": int(str(e).split(" throttled for ")[1].split()[0]) == int(e.throttle_time * 1000),
}, sort_keys=True))
