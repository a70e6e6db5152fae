"""What a request needs besides the client: query strings, Retry-After, the error a response
stands for, the retry notice. The client and the stream both use it; it imports neither."""

import errno
import socket
import time
import urllib.error
import urllib.parse
from dataclasses import dataclass
from datetime import datetime, timezone
from email.message import Message
from email.utils import parsedate_to_datetime
from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

from .errors import ERROR_CLASSES, SignalApiError, code_for_status

QueryValue = Union[str, int, bool, datetime, Sequence[str], None]


@dataclass(frozen=True)
class RetryInfo:
    """What ``on_retry`` is told before each wait: the retry about to happen and why."""

    attempt: int
    """1 for the first retry (or reconnect), 2 for the second, …"""
    wait: float
    """Seconds the client now sleeps."""
    method: str
    path: str
    status: Optional[int]
    """The HTTP status that is retried (429, 503, …); None after a network error or timeout."""
    reason: str
    """``rate_limited``, ``unavailable``, ``server_error``, ``timeout``, ``connection`` or ``stream_ended``."""
    request_id: Optional[str] = None


@dataclass(frozen=True)
class RateLimit:
    """The ``X-RateLimit-*`` headers of the latest response: the window closest to exhaustion."""

    limit: int
    remaining: int
    reset: int
    """Unix time (seconds) when the window resets."""


def rate_limit_of(headers: Message) -> Optional[RateLimit]:
    values = [headers.get(f"x-ratelimit-{n}", "").strip() for n in ("limit", "remaining", "reset")]
    if not all(v.isdigit() for v in values):
        return None
    return RateLimit(int(values[0]), int(values[1]), int(values[2]))


def iso_time(value: datetime) -> str:
    """The instant in UTC, as the API reads times. A datetime without ``tzinfo`` names no instant
    (UTC? this machine's zone?), and the API refuses a time without a zone: so does this, before
    anything is sent, rather than guess and filter by the wrong hours."""
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        raise ValueError(
            f"{value.isoformat()} has no time zone: pass an aware datetime, such as datetime.now(timezone.utc)"
        )
    return value.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def query_string(query: Mapping[str, QueryValue]) -> str:
    pairs: List[Tuple[str, str]] = []
    for key, value in query.items():
        if value is None:
            continue
        if isinstance(value, bool):
            pairs.append((key, "true" if value else "false"))
        elif isinstance(value, datetime):
            pairs.append((key, iso_time(value)))
        elif isinstance(value, (list, tuple)):
            pairs.append((key, ",".join(value)))
        else:
            pairs.append((key, str(value)))
    return urllib.parse.urlencode(pairs)


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[int]:
    """Retry-After as seconds: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return int(value)
    try:
        at = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(0, int(-(-(at.timestamp() - current) // 1)))


def error_from(status: int, body: Any, headers: Message) -> SignalApiError:
    error = body.get("error") if isinstance(body, dict) else None
    error = error if isinstance(error, dict) else {}
    raw_code, raw_message = error.get("code"), error.get("message")
    code: str = raw_code if isinstance(raw_code, str) else code_for_status(status)
    message: str = raw_message if isinstance(raw_message, str) else f"HTTP {status}"
    request_id: Optional[str] = error.get("request_id") if isinstance(error.get("request_id"), str) else None
    if request_id is None and isinstance(body, dict) and isinstance(body.get("request_id"), str):
        request_id = body["request_id"]
    request_id = request_id or headers.get("x-request-id")
    retry_after = error.get("retry_after")
    if not isinstance(retry_after, int) or isinstance(retry_after, bool):
        retry_after = parse_retry_after(headers.get("retry-after"))
    details = error.get("details")
    details = (
        [{"field": str(d.get("field")), "message": str(d.get("message"))} for d in details if isinstance(d, dict)]
        if isinstance(details, list)
        else None
    )
    cls = ERROR_CLASSES.get(code, SignalApiError)
    return cls(status, code, message, request_id, retry_after, details)


def network_failure(err: BaseException, base_url: str) -> str:
    """What a failed connection says of the network, for a person: ``cannot reach <base URL>
    (<reason>)``, as the TypeScript SDK says it. urllib's own words (``<urlopen error [Errno 111]
    Connection refused>``) name neither the address nor the reason plainly, and a wrong base URL is
    the commonest first mistake."""
    reason: BaseException = err
    if isinstance(err, urllib.error.URLError) and isinstance(err.reason, BaseException):
        reason = err.reason
    elif isinstance(err, urllib.error.URLError):
        return f"cannot reach {base_url} ({err.reason})"
    if isinstance(reason, socket.gaierror):
        # A name that does not resolve: node's word for it, so both SDKs say the same.
        unknown = {getattr(socket, n) for n in ("EAI_NONAME", "EAI_NODATA") if hasattr(socket, n)}
        return f"cannot reach {base_url} ({'ENOTFOUND' if reason.errno in unknown else reason.strerror or reason})"
    code = getattr(reason, "errno", None)
    if isinstance(code, int) and code in errno.errorcode:
        return f"cannot reach {base_url} ({errno.errorcode[code]})"
    return f"cannot reach {base_url} ({reason or type(reason).__name__})"


def is_timeout(err: BaseException) -> bool:
    if isinstance(err, urllib.error.URLError) and isinstance(err.reason, BaseException):
        return is_timeout(err.reason)
    return isinstance(err, (socket.timeout, TimeoutError))
