# mypy: disable-error-code="arg-type,return-value,assignment,override,import-untyped,import-not-found,misc"
"""``SchemaRegistryClient``: the registry's REST API with confluent-kafka's method names and
results, over the standard library's HTTP client: every request has a timeout, transient
failures (connection errors, 408, 429, 5xx) are retried with jittered exponential backoff, and
ids, schemas and versions are cached (latest versions for ``cache.latest.ttl.sec``)."""
import base64
import json
import random
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import OrderedDict
from typing import Any, Dict, List, Optional

from .error import SchemaRegistryError

__all__ = [
    "RegisteredSchema",
    "Schema",
    "SchemaReference",
    "SchemaRegistryClient",
    "SchemaVersion",
    "record_subject_name_strategy",
    "reference_subject_name_strategy",
    "topic_record_subject_name_strategy",
    "topic_subject_name_strategy",
]

_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_KNOWN_CONF = {
    "url", "ssl.ca.location", "ssl.certificate.location", "ssl.key.location",
    "ssl.key.password", "basic.auth.credentials.source", "basic.auth.user.info",
    "timeout", "cache.capacity", "cache.latest.ttl.sec", "max.retries", "retries.wait.ms",
    "retries.max.wait.ms", "proxy",
}


def topic_subject_name_strategy(ctx: Any, record_name: Optional[str]) -> Optional[str]:
    """``<topic>-key`` / ``<topic>-value`` (the default)."""
    return ctx.topic + "-" + str(ctx.field)


def topic_record_subject_name_strategy(ctx: Any, record_name: Optional[str]) -> Optional[str]:
    """``<topic>-<fully qualified record name>``."""
    return ctx.topic + "-" + record_name if record_name is not None else None


def record_subject_name_strategy(ctx: Any, record_name: Optional[str]) -> Optional[str]:
    """``<fully qualified record name>``."""
    return record_name


def reference_subject_name_strategy(ctx: Any, schema_ref: Any) -> Optional[str]:
    """A reference's subject: its name (a Protobuf import path)."""
    return schema_ref.name if schema_ref is not None else None


def _urlencode(s: str) -> str:
    return urllib.parse.quote(s, safe="")


class SchemaReference(object):
    """A reference to ``subject``'s ``version``, named ``name`` in the referring schema."""

    def __init__(self, name: Optional[str], subject: Optional[str], version: Optional[int]) -> None:
        self.name, self.subject, self.version = name, subject, version

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "SchemaReference":
        return cls(d.get("name"), d.get("subject"), d.get("version"))

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, SchemaReference) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.name, self.subject, self.version))

    def __repr__(self) -> str:
        return "SchemaReference(%r, %r, %r)" % (self.name, self.subject, self.version)


class Schema(object):
    """A schema: text, type (AVRO, JSON or PROTOBUF) and references."""

    def __init__(self, schema_str: Optional[str], schema_type: Optional[str] = "AVRO",
                 references: Optional[List[SchemaReference]] = None, metadata: Any = None,
                 rule_set: Any = None) -> None:
        self.schema_str = schema_str
        self.schema_type = schema_type or "AVRO"
        self.references = list(references or [])
        self.metadata = metadata
        self.rule_set = rule_set

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"schema": self.schema_str}
        if self.schema_type and self.schema_type != "AVRO":
            d["schemaType"] = self.schema_type
        if self.references:
            d["references"] = [r.to_dict() for r in self.references]
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Schema":
        return cls(d.get("schema"), d.get("schemaType", "AVRO"),
                   [SchemaReference.from_dict(r) for r in d.get("references") or []])

    def _key(self) -> tuple:
        return (self.schema_str, self.schema_type,
                tuple((r.name, r.subject, r.version) for r in self.references))

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Schema) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return "Schema(%r, %r)" % (self.schema_type, (self.schema_str or "")[:60])


class RegisteredSchema(object):
    """A schema with its id, subject and version."""

    def __init__(self, schema_id: Optional[int], schema: Schema, subject: Optional[str],
                 version: Optional[int], guid: Optional[str] = None) -> None:
        self.schema_id = schema_id
        self.guid = guid
        self.schema = schema
        self.subject = subject
        self.version = version

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "RegisteredSchema":
        return cls(d.get("id"), Schema.from_dict(d), d.get("subject"), d.get("version"), d.get("guid"))

    def __repr__(self) -> str:
        return "RegisteredSchema(id=%r, subject=%r, version=%r)" % (self.schema_id, self.subject, self.version)


class SchemaVersion(object):
    """A (subject, version) pair."""

    def __init__(self, subject: Optional[str], version: Optional[int]) -> None:
        self.subject, self.version = subject, version

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, SchemaVersion) and (self.subject, self.version) == (other.subject, other.version)

    def __repr__(self) -> str:
        return "SchemaVersion(%r, %r)" % (self.subject, self.version)


class _LRU(object):
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.d: "OrderedDict[Any, Any]" = OrderedDict()
        self.lock = threading.Lock()

    def get(self, k: Any) -> Any:
        with self.lock:
            v = self.d.get(k)
            if v is not None:
                self.d.move_to_end(k)
            return v

    def put(self, k: Any, v: Any) -> None:
        with self.lock:
            self.d[k] = v
            self.d.move_to_end(k)
            while len(self.d) > self.capacity:
                self.d.popitem(last=False)

    def drop(self, pred: Any) -> None:
        with self.lock:
            for k in [k for k in self.d if pred(k)]:
                del self.d[k]


def _strip_userinfo(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


class _Rest(object):
    def __init__(self, conf: Dict[str, Any]) -> None:
        urls = conf.get("url")
        if not isinstance(urls, str) or not urls:
            raise ValueError("Missing required configuration property url")
        self.urls = [u.strip().rstrip("/") for u in urls.split(",") if u.strip()]
        for u in self.urls:
            if not u.startswith(("http://", "https://")):
                raise ValueError("Invalid url %s" % u)
        self.timeout = float(conf.get("timeout") or 10)
        self.max_retries = int(conf.get("max.retries", 3))
        self.wait_ms = int(conf.get("retries.wait.ms", 1000))
        self.max_wait_ms = int(conf.get("retries.max.wait.ms", 20000))
        self.auth = None
        source = conf.get("basic.auth.credentials.source", "URL" if "@" in self.urls[0] else "USER_INFO")
        if source == "USER_INFO" and conf.get("basic.auth.user.info"):
            self.auth = conf["basic.auth.user.info"]
        elif source == "URL":
            parsed = urllib.parse.urlsplit(self.urls[0])
            if parsed.username is not None:
                self.auth = "%s:%s" % (urllib.parse.unquote(parsed.username),
                                       urllib.parse.unquote(parsed.password or ""))
                self.urls = [_strip_userinfo(u) for u in self.urls]
        elif source not in ("USER_INFO", "URL"):
            raise ValueError("basic.auth.credentials.source must be USER_INFO or URL")
        self.ssl = None
        if conf.get("ssl.ca.location") or conf.get("ssl.certificate.location"):
            self.ssl = ssl.create_default_context(cafile=conf.get("ssl.ca.location"))
            if conf.get("ssl.certificate.location"):
                self.ssl.load_cert_chain(conf["ssl.certificate.location"], conf.get("ssl.key.location"),
                                         conf.get("ssl.key.password"))

    def send(self, method: str, path: str, body: Any = None, query: Optional[Dict[str, Any]] = None) -> Any:
        if query:
            q = {k: (str(v).lower() if isinstance(v, bool) else v) for k, v in query.items() if v is not None}
            if q:
                path = path + ("&" if "?" in path else "?") + urllib.parse.urlencode(q)
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Accept": _CONTENT_TYPE + ", application/json"}
        if data is not None:
            headers["Content-Type"] = _CONTENT_TYPE
        if self.auth:
            headers["Authorization"] = "Basic " + base64.b64encode(self.auth.encode()).decode()
        attempt = 0
        while True:
            url = self.urls[attempt % len(self.urls)] + "/" + path.lstrip("/")
            req = urllib.request.Request(url, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout, context=self.ssl) as resp:
                    raw = resp.read()
                    return json.loads(raw) if raw else None
            except urllib.error.HTTPError as e:
                raw = e.read()
                status = e.code
                try:
                    payload = json.loads(raw)
                    err = SchemaRegistryError(status, payload.get("error_code", -1), payload.get("message", ""))
                except (ValueError, AttributeError):
                    err = SchemaRegistryError(status, -1, raw.decode(errors="replace") or "Unknown Schema Registry Error")
                if not (status in (408, 429) or status >= 500) or attempt >= self.max_retries:
                    raise err
            except (urllib.error.URLError, OSError) as e:
                if attempt >= self.max_retries:
                    raise SchemaRegistryError(-1, -1, "cannot reach the schema registry at %s: %s" % (url, e))
            wait = min(self.wait_ms * (2 ** attempt), self.max_wait_ms) / 1000.0
            time.sleep(wait * random.uniform(0.5, 1.0))
            attempt += 1


class SchemaRegistryClient(object):
    """A client of a Confluent-compatible Schema Registry (``{'url': 'http://host:8081'}``)."""

    def __init__(self, conf: Dict[str, Any]) -> None:
        if not isinstance(conf, dict):
            raise TypeError("conf must be a dict")
        unknown = set(conf) - _KNOWN_CONF
        if unknown:
            raise ValueError("Unrecognized properties: {}".format(", ".join(sorted(unknown))))
        self._rest = _Rest(conf)
        cap = int(conf.get("cache.capacity", 1000))
        self._ttl = conf.get("cache.latest.ttl.sec")
        self._by_id = _LRU(cap)           # (id, subject, fmt) -> Schema
        self._id_by_schema = _LRU(cap)    # (subject, Schema) -> id
        self._versions = _LRU(cap)        # (subject, version, deleted, fmt) -> RegisteredSchema
        self._latest = _LRU(cap)          # (subject, fmt) -> (time, RegisteredSchema)

    def __enter__(self) -> "SchemaRegistryClient":
        return self

    def __exit__(self, *args: Any) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to release (a connection per request)."""

    # registering and looking up
    def register_schema(self, subject_name: str, schema: Schema, normalize_schemas: bool = False) -> int:
        """Registers ``schema`` under ``subject_name``; returns its id."""
        return self.register_schema_full_response(subject_name, schema, normalize_schemas).schema_id

    def register_schema_full_response(self, subject_name: str, schema: Schema,
                                      normalize_schemas: bool = False) -> RegisteredSchema:
        """Registers ``schema``; returns the RegisteredSchema (id, subject, version)."""
        cached = self._id_by_schema.get((subject_name, schema))
        if cached is not None:
            return RegisteredSchema(cached, schema, subject_name, None)
        r = self._rest.send("POST", "subjects/%s/versions" % _urlencode(subject_name), schema.to_dict(),
                            {"normalize": normalize_schemas})
        reg = RegisteredSchema(r["id"], schema, r.get("subject", subject_name), r.get("version"), r.get("guid"))
        self._id_by_schema.put((subject_name, schema), reg.schema_id)
        self._by_id.put((reg.schema_id, subject_name, None), schema)
        return reg

    def get_schema(self, schema_id: int, subject_name: Optional[str] = None, fmt: Optional[str] = None,
                   reference_format: Optional[str] = None) -> Schema:
        """The schema an id names."""
        key = (schema_id, subject_name, fmt)
        s = self._by_id.get(key)
        if s is None:
            r = self._rest.send("GET", "schemas/ids/%d" % schema_id, query={"subject": subject_name, "format": fmt})
            s = Schema.from_dict(r)
            self._by_id.put(key, s)
        return s

    def get_schema_types(self) -> List[str]:
        return self._rest.send("GET", "schemas/types")

    def get_subjects_by_schema_id(self, schema_id: int, subject_name: Optional[str] = None,
                                  deleted: bool = False) -> List[str]:
        return self._rest.send("GET", "schemas/ids/%d/subjects" % schema_id, query={"deleted": deleted})

    def get_schema_versions(self, schema_id: int, subject_name: Optional[str] = None,
                            deleted: bool = False) -> List[SchemaVersion]:
        r = self._rest.send("GET", "schemas/ids/%d/versions" % schema_id, query={"deleted": deleted})
        return [SchemaVersion(v.get("subject"), v.get("version")) for v in r]

    def lookup_schema(self, subject_name: str, schema: Schema, normalize_schemas: bool = False,
                      deleted: bool = False) -> RegisteredSchema:
        """The version of ``subject_name`` holding ``schema``."""
        r = self._rest.send("POST", "subjects/%s" % _urlencode(subject_name), schema.to_dict(),
                            {"normalize": normalize_schemas, "deleted": deleted})
        return RegisteredSchema.from_dict(r)

    # subjects and versions
    def get_subjects(self, subject_prefix: Optional[str] = None, deleted: bool = False) -> List[str]:
        return self._rest.send("GET", "subjects", query={"subjectPrefix": subject_prefix, "deleted": deleted})

    def delete_subject(self, subject_name: str, permanent: bool = False) -> List[int]:
        """Soft-deletes a subject (``permanent=True`` deletes a soft-deleted one for good)."""
        r = self._rest.send("DELETE", "subjects/%s" % _urlencode(subject_name), query={"permanent": permanent})
        self._forget(subject_name)
        return r

    def get_latest_version(self, subject_name: str, fmt: Optional[str] = None) -> RegisteredSchema:
        key = (subject_name, fmt)
        hit = self._latest.get(key)
        if hit is not None and (self._ttl is None or time.monotonic() - hit[0] < float(self._ttl)):
            return hit[1]
        r = RegisteredSchema.from_dict(self._rest.send(
            "GET", "subjects/%s/versions/latest" % _urlencode(subject_name), query={"format": fmt}))
        self._latest.put(key, (time.monotonic(), r))
        return r

    def get_version(self, subject_name: str, version: Any, deleted: bool = False,
                    fmt: Optional[str] = None) -> RegisteredSchema:
        key = (subject_name, version, deleted, fmt)
        r = self._versions.get(key) if version != "latest" else None
        if r is None:
            r = RegisteredSchema.from_dict(self._rest.send(
                "GET", "subjects/%s/versions/%s" % (_urlencode(subject_name), version),
                query={"deleted": deleted, "format": fmt}))
            if version != "latest":
                self._versions.put(key, r)
        return r

    def get_referenced_by(self, subject_name: str, version: Any = "latest") -> List[int]:
        return self._rest.send("GET", "subjects/%s/versions/%s/referencedby" % (_urlencode(subject_name), version))

    def get_versions(self, subject_name: str, deleted: bool = False) -> List[int]:
        return self._rest.send("GET", "subjects/%s/versions" % _urlencode(subject_name), query={"deleted": deleted})

    def delete_version(self, subject_name: str, version: int, permanent: bool = False) -> int:
        r = self._rest.send("DELETE", "subjects/%s/versions/%s" % (_urlencode(subject_name), version),
                            query={"permanent": permanent})
        self._forget(subject_name)
        return r

    def _forget(self, subject: str) -> None:
        self._versions.drop(lambda k: k[0] == subject)
        self._latest.drop(lambda k: k[0] == subject)
        self._id_by_schema.drop(lambda k: k[0] == subject)

    # compatibility and modes
    def set_compatibility(self, subject_name: Optional[str] = None, level: Optional[str] = None) -> Dict[str, Any]:
        """Sets a level; returns the registry's answer (``{'compatibility': level}``), as
        confluent-kafka does."""
        if level is None:
            raise ValueError("level must be set")
        path = "config" if subject_name is None else "config/%s" % _urlencode(subject_name)
        return self._rest.send("PUT", path, {"compatibility": level.upper()})

    def get_compatibility(self, subject_name: Optional[str] = None) -> str:
        path = "config" if subject_name is None else "config/%s" % _urlencode(subject_name)
        return self._rest.send("GET", path)["compatibilityLevel"]

    def test_compatibility(self, subject_name: str, schema: Schema, version: Any = "latest") -> bool:
        r = self._rest.send("POST", "compatibility/subjects/%s/versions/%s" % (_urlencode(subject_name), version),
                            schema.to_dict())
        return bool(r["is_compatible"])

    def test_compatibility_all_versions(self, subject_name: str, schema: Schema) -> bool:
        r = self._rest.send("POST", "compatibility/subjects/%s/versions" % _urlencode(subject_name), schema.to_dict())
        return bool(r["is_compatible"])

    def get_mode(self, subject_name: Optional[str] = None) -> str:
        path = "mode" if subject_name is None else "mode/%s" % _urlencode(subject_name)
        return self._rest.send("GET", path)["mode"]

    def update_mode(self, subject_name: Optional[str], mode: str, force: bool = False) -> str:
        path = "mode" if subject_name is None else "mode/%s" % _urlencode(subject_name)
        return self._rest.send("PUT", path, {"mode": mode}, {"force": force})["mode"]

    def delete_mode(self, subject_name: str) -> str:
        return self._rest.send("DELETE", "mode/%s" % _urlencode(subject_name))["mode"]
