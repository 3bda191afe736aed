"""SASL/SCRAM credential values (confluent-kafka's ``confluent_kafka.admin`` classes)."""

from enum import Enum
from typing import List, Optional


class ScramMechanism(Enum):
    """A SASL/SCRAM mechanism."""

    UNKNOWN = 0  #: Unknown
    SCRAM_SHA_256 = 1  #: SCRAM-SHA-256
    SCRAM_SHA_512 = 2  #: SCRAM-SHA-512

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ScramMechanism):
            return NotImplemented
        return bool(self.value < other.value)


class ScramCredentialInfo:
    """A credential's mechanism and iteration count (Kafka accepts 4096 to 16384)."""

    def __init__(self, mechanism: ScramMechanism, iterations: int) -> None:
        self.mechanism = mechanism
        self.iterations = iterations

    def __repr__(self) -> str:
        return "ScramCredentialInfo(%s,%d)" % (self.mechanism, self.iterations)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScramCredentialInfo):
            return NotImplemented
        return (self.mechanism, self.iterations) == (other.mechanism, other.iterations)


class UserScramCredentialsDescription:
    """Every SCRAM credential a user has (mechanisms and iterations, never keys)."""

    def __init__(self, user: str, scram_credential_infos: List[ScramCredentialInfo]) -> None:
        self.user = user
        self.scram_credential_infos = scram_credential_infos

    def __repr__(self) -> str:
        return "UserScramCredentialsDescription(%s,%r)" % (self.user, self.scram_credential_infos)


class UserScramCredentialAlteration:
    """A change to one user's SCRAM credentials."""

    def __init__(self, user: str) -> None:
        self.user = user


class UserScramCredentialUpsertion(UserScramCredentialAlteration):
    """Sets a user's credential for a mechanism. The password is hashed (PBKDF2 with ``salt``,
    32 random bytes when None) in the client; only the salted hash is sent."""

    def __init__(self, user: str, scram_credential_info: ScramCredentialInfo, password: bytes,
                 salt: Optional[bytes] = None) -> None:
        super().__init__(user)
        self.scram_credential_info = scram_credential_info
        self.password = password
        self.salt = salt

    def __repr__(self) -> str:
        # The password stays out of logs and tracebacks.
        return "UserScramCredentialUpsertion(%s,%r,password=***)" % (
            self.user, self.scram_credential_info)


class UserScramCredentialDeletion(UserScramCredentialAlteration):
    """Removes a user's credential for a mechanism."""

    def __init__(self, user: str, mechanism: ScramMechanism) -> None:
        super().__init__(user)
        self.mechanism = mechanism
