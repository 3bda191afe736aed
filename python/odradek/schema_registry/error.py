"""The registry's errors, as ``confluent_kafka.schema_registry.error``."""

__all__ = ["SchemaRegistryError", "SchemaParseException", "UnknownType"]


class SchemaRegistryError(Exception):
    """An error answered by the registry (or met reaching it).

    ``http_status_code``, ``error_code`` (Confluent's, e.g. 40401, 409, 42201) and
    ``error_message`` as the registry sent them; ``error_code`` is -1 when the answer had none.
    """

    UNKNOWN = -1

    def __init__(self, http_status_code: int, error_code: int, error_message: str) -> None:
        self.http_status_code = http_status_code
        self.error_code = error_code
        self.error_message = error_message

    def __repr__(self) -> str:
        return self.__str__()

    def __str__(self) -> str:
        return "{} (HTTP status code {}, SR code {})".format(
            self.error_message, self.http_status_code, self.error_code)


class SchemaParseException(Exception):
    """A schema could not be parsed."""


class UnknownType(Exception):
    """A schema type this library does not know."""
