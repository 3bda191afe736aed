"""The ACL and SCRAM credential calls of :class:`odradek.admin.AdminClient`, with
confluent-kafka's signatures, checks and result shapes."""

import concurrent.futures
from typing import Any, Dict, List, Optional, Tuple, Union

from ._acl import AclBinding, AclBindingFilter
from ._futures import _chained, _timeout
from ._odradek import KafkaError, KafkaException, _AdminClient
from ._scram import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialAlteration,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)

Future = concurrent.futures.Future


def _check_list(items: Any, cls: type, what: str) -> None:
    if not isinstance(items, list):
        raise TypeError("Expected input to be list of %s" % cls.__name__)
    for item in items:
        if not isinstance(item, cls):
            raise ValueError("Expected list of %s" % repr(cls))
    if len(set(items)) != len(items):
        raise ValueError("duplicate %s not allowed" % what)


def _deleted(raw: List[Tuple[Tuple[Any, ...], Optional[KafkaError]]]) -> List[AclBinding]:
    """A filter's matches; an ACL the broker could not delete fails the filter's future."""
    for _, error in raw:
        if error is not None:
            raise KafkaException(error)
    return [AclBinding._from_wire(b) for b, _ in raw]


def _description(user: str, infos: List[Tuple[int, int]]) -> UserScramCredentialsDescription:
    def mechanism(value: int) -> ScramMechanism:
        try:
            return ScramMechanism(value)
        except ValueError:
            return ScramMechanism.UNKNOWN

    return UserScramCredentialsDescription(
        user, [ScramCredentialInfo(mechanism(m), i) for m, i in infos])


def _check_alterations(alterations: Any) -> None:
    if not isinstance(alterations, list):
        raise TypeError("Expected input to be list")
    if not alterations:
        raise ValueError("Expected at least one alteration")
    for a in alterations:
        if not isinstance(a, UserScramCredentialAlteration):
            raise TypeError(
                "Expected each element of list to be subclass of UserScramCredentialAlteration")
        if a.user is None:
            raise TypeError("'user' cannot be None")
        if not isinstance(a.user, str):
            raise TypeError("'user' must be a string")
        if not a.user:
            raise ValueError("'user' cannot be empty")
        if isinstance(a, UserScramCredentialUpsertion):
            if a.password is None:
                raise TypeError("'password' cannot be None")
            if not isinstance(a.password, bytes):
                raise TypeError("'password' must be bytes")
            if not a.password:
                raise ValueError("'password' cannot be empty")
            if a.salt is not None and not isinstance(a.salt, bytes):
                raise TypeError("'salt' must be bytes")
            if a.salt is not None and not a.salt:
                raise ValueError("'salt' can be None but cannot be empty")
            if not isinstance(a.scram_credential_info, ScramCredentialInfo):
                raise TypeError("Expected credential_info to be ScramCredentialInfo Type")
            if a.scram_credential_info.iterations < 1:
                raise ValueError("Iterations should be positive")
            if not isinstance(a.scram_credential_info.mechanism, ScramMechanism):
                raise TypeError("Expected the mechanism to be ScramMechanism Type")
        elif isinstance(a, UserScramCredentialDeletion):
            if not isinstance(a.mechanism, ScramMechanism):
                raise TypeError("Expected the mechanism to be ScramMechanism Type")
        else:
            raise TypeError("Expected each element of list 'alterations' to be either a "
                            "UserScramCredentialUpsertion or a UserScramCredentialDeletion")


class SecurityAdminMixin:
    """ACL and SCRAM credential administration (needs ``self._core``, the native client)."""

    _core: _AdminClient

    def create_acls(self, acls: List[AclBinding], request_timeout: float = -1
                    ) -> Dict[AclBinding, "Future[None]"]:
        """Creates ACLs; one future per binding, resolving to None or raising the broker's
        refusal (``SECURITY_DISABLED`` without an authorizer, ``CLUSTER_AUTHORIZATION_FAILED``
        without ALTER on the cluster)."""
        _check_list(acls, AclBinding, "ACL bindings")
        out: Dict[AclBinding, "Future[None]"] = {}
        raws = []
        for acl in acls:
            out[acl], raw = _chained(lambda r: None)
            raws.append(raw)
        self._core.create_acls([a._wire() for a in acls], _timeout(request_timeout), raws)
        return out

    def describe_acls(self, acl_binding_filter: AclBindingFilter, request_timeout: float = -1
                      ) -> "Future[List[AclBinding]]":
        """The ACLs the filter selects: one future resolving to a list of
        :class:`AclBinding`."""
        if not isinstance(acl_binding_filter, AclBindingFilter):
            raise TypeError("Expected an AclBindingFilter")
        fut, raw = _chained(lambda r: [AclBinding._from_wire(b) for b in r])
        self._core.describe_acls(acl_binding_filter._wire(), _timeout(request_timeout), raw)
        return fut

    def delete_acls(self, acl_binding_filters: List[AclBindingFilter],
                    request_timeout: float = -1
                    ) -> Dict[AclBindingFilter, "Future[List[AclBinding]]"]:
        """Deletes every ACL each filter selects; one future per filter, resolving to the
        deleted :class:`AclBinding` list."""
        _check_list(acl_binding_filters, AclBindingFilter, "ACL binding filters")
        out: Dict[AclBindingFilter, "Future[List[AclBinding]]"] = {}
        raws = []
        for f in acl_binding_filters:
            out[f], raw = _chained(_deleted)
            raws.append(raw)
        self._core.delete_acls([f._wire() for f in acl_binding_filters],
                               _timeout(request_timeout), raws)
        return out

    def describe_user_scram_credentials(
        self, users: Optional[List[str]] = None, request_timeout: float = -1
    ) -> Union["Future[Dict[str, UserScramCredentialsDescription]]",
               Dict[str, "Future[UserScramCredentialsDescription]"]]:
        """SCRAM credentials (mechanisms and iterations). With ``users=None``: one future
        resolving to ``{user: UserScramCredentialsDescription}`` for every user with a
        credential. With a list: one future per user (``RESOURCE_NOT_FOUND`` for a user
        without credentials)."""
        if users is not None:
            if not isinstance(users, list):
                raise TypeError("Expected input to be list of String")
            for u in users:
                if u is None:
                    raise TypeError("'user' cannot be None")
                if not isinstance(u, str):
                    raise TypeError("Each value should be a string")
                if not u:
                    raise ValueError("'user' cannot be empty")
        timeout = _timeout(request_timeout)
        if users is None:
            def every(raw: List[Tuple[str, Optional[KafkaError], List[Tuple[int, int]]]]) -> Any:
                out = {}
                for user, error, infos in raw:
                    if error is not None:
                        raise KafkaException(error)
                    out[user] = _description(user, infos)
                return out

            fut, raw = _chained(every)
            self._core.describe_user_scram_credentials(None, timeout, raw)
            return fut

        futs: Dict[str, "Future[UserScramCredentialsDescription]"] = {}
        for u in users:
            f: "Future[UserScramCredentialsDescription]" = concurrent.futures.Future()
            f.set_running_or_notify_cancel()
            futs[u] = f

        def spread(whole: "Future[Any]") -> None:
            exc = whole.exception()
            answers: Dict[str, Tuple[Optional[KafkaError], List[Tuple[int, int]]]] = {}
            if exc is None:
                answers = {user: (error, infos) for user, error, infos in whole.result()}
            for user, f in futs.items():
                if exc is not None:
                    f.set_exception(exc)
                elif user not in answers:
                    f.set_exception(KafkaException(KafkaError(
                        -1, "the broker returned no result for user %s" % user)))
                elif answers[user][0] is not None:
                    f.set_exception(KafkaException(answers[user][0]))
                else:
                    f.set_result(_description(user, answers[user][1]))

        whole: "Future[Any]" = concurrent.futures.Future()
        whole.set_running_or_notify_cancel()
        whole.add_done_callback(spread)
        self._core.describe_user_scram_credentials(list(users), timeout, whole)
        return futs

    def alter_user_scram_credentials(
        self, alterations: List[UserScramCredentialAlteration], request_timeout: float = -1
    ) -> Dict[str, "Future[None]"]:
        """Creates, replaces or deletes SCRAM credentials; one future per user, resolving to
        None or raising e.g. ``RESOURCE_NOT_FOUND`` (deleting a credential the user does not
        have), ``DUPLICATE_RESOURCE`` (one user and mechanism twice) or
        ``UNACCEPTABLE_CREDENTIAL`` (iterations outside 4096..16384)."""
        _check_alterations(alterations)
        out: Dict[str, "Future[None]"] = {}
        raws = []
        wire: List[Tuple[str, int, int, Optional[bytes], Optional[bytes]]] = []
        for a in alterations:
            if a.user not in out:
                out[a.user], raw = _chained(lambda r: None)
                raws.append(raw)
            if isinstance(a, UserScramCredentialUpsertion):
                info = a.scram_credential_info
                wire.append((a.user, info.mechanism.value, info.iterations, a.password, a.salt))
            else:
                assert isinstance(a, UserScramCredentialDeletion)
                wire.append((a.user, a.mechanism.value, 0, None, None))
        self._core.alter_user_scram_credentials(wire, _timeout(request_timeout), raws)
        return out
