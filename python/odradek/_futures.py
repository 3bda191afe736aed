"""The futures admin calls hand out: one the application waits on, and a raw one the native
client completes."""

import concurrent.futures
from typing import Any, Callable, Optional, Tuple


def _future() -> "concurrent.futures.Future[Any]":
    f: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
    f.set_running_or_notify_cancel()
    return f


def _timeout(request_timeout: Optional[float]) -> Optional[float]:
    """``request_timeout`` for the native client: None when unset (the client's
    ``default.api.timeout.ms`` bounds the call)."""
    if request_timeout is None or request_timeout < 0:
        return None
    return float(request_timeout)


def _chained(
    convert: Callable[[Any], Any]
) -> Tuple["concurrent.futures.Future[Any]", "concurrent.futures.Future[Any]"]:
    """A future for the application and a raw one the native client completes; the raw
    result goes through ``convert`` (exceptions pass unchanged)."""
    out: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
    out.set_running_or_notify_cancel()
    raw: "concurrent.futures.Future[Any]" = concurrent.futures.Future()
    raw.set_running_or_notify_cancel()

    def done(f: "concurrent.futures.Future[Any]") -> None:
        exc = f.exception()
        if exc is not None:
            out.set_exception(exc)
            return
        try:
            out.set_result(convert(f.result()))
        except Exception as e:  # a conversion bug must not leave the future pending
            out.set_exception(e)

    raw.add_done_callback(done)
    return out, raw
