"""The live stream GET /v1/signals/stream (Server-Sent Events) as a reconnecting generator.

Each event arrives as ``event: <name>``, ``id: <event id>``, ``data: <the webhook payload JSON>``.
When the connection ends (network, server restart, idle beyond ``idle_timeout`` although the
server sends heartbeat comments), the generator reconnects after a back-off, sending the id of
the last event it handed out as ``Last-Event-ID``; the server then sends every matching event
missed meanwhile, in order. An id the server no longer knows gets one ``reset`` event: the
consumer re-syncs from ``client.signals.list``/``iterate`` and the live events follow. The
server's ``retry:`` hint is the first reconnect's wait; consecutive failures double it up to
``max_backoff`` (default 30 s, as the TypeScript SDK's ``maxBackoffMs``); a refusal whose
Retry-After is longer than the client's ``max_retry_wait`` is raised. Ids already handed out
are remembered (the latest 1024), so an event the server sends again after a reconnect is not
handed out twice.
"""

import json
import random
import socket
import threading
import urllib.error
from collections import OrderedDict
from email.message import Message
from dataclasses import dataclass
from http.client import HTTPException
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from .errors import SignalApiError, SignalConnectionError
from .routes import path_of
from .transport import QueryValue, RetryInfo, error_from, is_timeout
from .types import SignalType, WebhookEvent

try:
    from typing import Protocol
except ImportError:  # pragma: no cover - Python < 3.8 is not supported (requires-python >= 3.9)
    Protocol = object  # type: ignore[assignment,misc]

STREAM_PATH = path_of("streamSignals")
MAX_LINE_BYTES = 1 << 20
_REMEMBERED_IDS = 1024


@dataclass(frozen=True)
class StreamEvent:
    """One event: ``event`` is ``signal.new``, ``signal.winner``, ``signal.dead``, ``signal.rugged``
    or ``reset``; ``data`` is the decoded JSON (for signal events the webhook payload: ``event``,
    ``timestamp``, ``data`` = the signal), or the text when it is not JSON."""

    event: str
    id: Optional[str]
    data: Any
    raw: str


class StreamTransport(Protocol):
    """What the stream borrows from the client (SignalClient is one): its URL, headers, one
    attempt, the wait before a retry and the longest wait it accepts."""

    max_retry_wait: float
    max_retries: int

    def _url(self, path: str, query: Mapping[str, QueryValue]) -> str: ...

    def _headers(self, method: str, has_body: bool, auth: str, idempotency_key: Optional[str]) -> Dict[str, str]: ...

    def _open(
        self, method: str, url: str, headers: Mapping[str, str], payload: Optional[bytes], timeout: float
    ) -> Tuple[int, Message, Any]: ...

    def _wait(self, info: RetryInfo, interrupt: Optional[threading.Event] = None) -> None: ...


class _Dropped(Exception):
    """The connection broke the stream's framing (a line beyond MAX_LINE_BYTES)."""


def _as_list(value: Union[str, Sequence[str], None]) -> Optional[str]:
    if value is None:
        return None
    return value if isinstance(value, str) else ",".join(value)


class SignalStream:
    """An iterator of StreamEvent: ``for event in client.signals.stream(...)``.

    ``last_event_id`` is the id of the last event handed out: pass it to a new stream to resume
    after the bot restarts. ``close()`` (or leaving ``with client.signals.stream() as s:``) ends
    the connection.

    ``close()`` is safe from any thread: a signal handler, a watchdog, or the thread that reads
    the stream. It cuts the open connection (a read waiting on it returns at once) and stops a
    reconnect wait; the loop reading the stream then ends without an error, and a closed stream
    hands out nothing more. Calling it twice does nothing more.
    """

    def __init__(
        self,
        client: StreamTransport,
        *,
        type: Union[SignalType, Sequence[SignalType], None] = None,
        events: Union[WebhookEvent, Sequence[WebhookEvent], None] = None,
        last_event_id: Optional[str] = None,
        idle_timeout: float = 45.0,
        max_reconnects: Optional[int] = None,
        max_backoff: float = 30.0,
    ) -> None:
        self._client = client
        self._query: Dict[str, Any] = {"type": _as_list(type), "events": _as_list(events)}
        self.last_event_id = last_event_id
        self.idle_timeout = idle_timeout
        self.max_reconnects = max_reconnects
        self.max_backoff = max_backoff
        """The longest wait between reconnects, in seconds: the back-off's own cap, apart from the
        client's ``max_retry_wait`` (a call's retry budget, a few seconds), so a stream whose
        server is down a while asks again every half minute, not every few seconds."""
        self.retry_hint: Optional[float] = None
        """Seconds, from the server's ``retry:`` field."""
        self.reconnects = 0
        """Reconnects over the stream's life (``max_reconnects`` counts those in a row without data)."""
        self._seen: "OrderedDict[str, None]" = OrderedDict()
        self._events_gen: Optional[Iterator[StreamEvent]] = None
        self._closed = threading.Event()
        # The connection open now, so that close() from another thread can cut it.
        self._response: Any = None
        self._response_lock = threading.Lock()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def __iter__(self) -> "SignalStream":
        return self

    def __next__(self) -> StreamEvent:
        if self._closed.is_set():
            raise StopIteration
        if self._events_gen is None:
            self._events_gen = self._run()
        return next(self._events_gen)

    def close(self) -> None:
        """Ends the stream; safe from any thread (see the class)."""
        self._closed.set()
        with self._response_lock:
            res, self._response = self._response, None
        if res is not None:
            _cut(res)

    def _hold(self, res: Any) -> bool:
        """Keeps the open connection where close() finds it; False (and cut) when already closed."""
        with self._response_lock:
            if not self._closed.is_set():
                self._response = res
                return True
        _cut(res)
        return False

    def _release(self) -> None:
        with self._response_lock:
            self._response = None

    def __enter__(self) -> "SignalStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _run(self) -> Iterator[StreamEvent]:
        c = self._client
        url = c._url(STREAM_PATH, self._query)
        # Reconnects in a row without an event or heartbeat, and 429s in a row at opening.
        failures = 0
        refusals = 0
        while not self._closed.is_set():
            headers = c._headers("GET", False, "api_key", None)
            headers["Accept"] = "text/event-stream"
            headers["Cache-Control"] = "no-cache"
            if self.last_event_id is not None:
                headers["Last-Event-ID"] = self.last_event_id
            status: Optional[int] = None
            reason = "stream_ended"
            server_wait: Optional[float] = None
            request_id: Optional[str] = None
            refused: Optional[SignalApiError] = None
            try:
                status, res_headers, res = c._open("GET", url, headers, None, self.idle_timeout)
                if isinstance(res, bytes):
                    try:
                        decoded = json.loads(res.decode("utf-8")) if res else None
                    except (UnicodeDecodeError, ValueError):
                        decoded = None
                    error: SignalApiError = error_from(status, decoded, res_headers)
                    if status not in (429, 503) and status < 500:
                        raise error
                    if status == 429:
                        # The account's streams are all open (or its rate is spent): retried as any
                        # request is, max_retries times, then the refusal is the caller's to see.
                        refusals += 1
                        if refusals > c.max_retries:
                            raise error
                    refused = error
                    reason = "rate_limited" if status == 429 else "unavailable" if status == 503 else "server_error"
                    request_id = error.request_id
                    if error.retry_after is not None:
                        if error.retry_after > c.max_retry_wait:
                            raise error
                        server_wait = float(error.retry_after)
                elif not self._hold(res):
                    return
                else:
                    content_type = res_headers.get("content-type", "")
                    if not content_type.startswith("text/event-stream"):
                        res.close()
                        raise SignalConnectionError(f"GET {STREAM_PATH}: responded {content_type!r}, not an event stream")
                    refusals = 0
                    try:
                        for event in self._events(res):
                            # An event or heartbeat came on this connection: the next reconnect starts the back-off anew.
                            failures = 0
                            if event is None:
                                continue
                            if event.event in ("reconnect", "overflow"):
                                # The server ends this connection (shutdown, or this client fell behind):
                                # reconnect at once and resume from the last event id.
                                reason = event.event
                                server_wait = 0.0
                                break
                            if event.event == "error":
                                # The credential no longer holds (revoked or expired key): reconnecting
                                # would only be refused.
                                raise _stream_error(event)
                            if self._closed.is_set():
                                return
                            yield event
                    except (urllib.error.URLError, HTTPException, OSError, _Dropped) as err:
                        reason = "timeout" if is_timeout(err) else "connection"
                    finally:
                        self._release()
                        res.close()
            except (urllib.error.URLError, HTTPException, OSError) as err:
                reason = "timeout" if is_timeout(err) else "connection"
            if self._closed.is_set():
                return
            if self.max_reconnects is not None and failures >= self.max_reconnects:
                # A refusal says why itself (its code, message and Retry-After).
                if refused is not None:
                    raise refused
                raise SignalConnectionError(f"GET {STREAM_PATH}: no data after {failures} reconnects in a row")
            failures += 1
            self.reconnects += 1
            if server_wait is not None:
                wait = server_wait
            else:
                base = self.retry_hint if self.retry_hint is not None else 1.0
                wait = base if failures == 1 else base * 2 ** (failures - 1) * (0.8 + random.random() * 0.4)
                wait = min(self.max_backoff, wait)
            c._wait(RetryInfo(failures, wait, "GET", STREAM_PATH, status, reason, request_id), self._closed)

    def _events(self, res: Any) -> Iterator[Optional[StreamEvent]]:
        """Parses the stream (the WHATWG event-stream format); yields None for a comment."""
        event_name = ""
        data_lines: List[str] = []
        pending_id: Optional[str] = None
        while True:
            line_bytes = res.readline(MAX_LINE_BYTES + 1)
            if not line_bytes:
                return
            if len(line_bytes) > MAX_LINE_BYTES:
                raise _Dropped()
            line = line_bytes.decode("utf-8", errors="replace").rstrip("\r\n")
            if line == "":
                if pending_id is not None:
                    self.last_event_id = pending_id
                if data_lines or event_name:
                    raw = "\n".join(data_lines)
                    event = StreamEvent(event_name or "message", pending_id, _decode(raw), raw)
                    event_name, data_lines, pending_id = "", [], None
                    if event.id is not None:
                        if event.id in self._seen:
                            continue
                        self._seen[event.id] = None
                        if len(self._seen) > _REMEMBERED_IDS:
                            self._seen.popitem(last=False)
                    yield event
                else:
                    pending_id = None
                continue
            if line.startswith(":"):
                yield None
                continue
            field, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if field == "event":
                event_name = value
            elif field == "data":
                data_lines.append(value)
            elif field == "id" and "\0" not in value:
                pending_id = value
            elif field == "retry" and value.isdigit():
                self.retry_hint = int(value) / 1000.0


def _decode(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _stream_error(event: StreamEvent) -> SignalApiError:
    """The error a stream's final ``error`` event stands for (its data: ``{code, message}``)."""
    data = event.data if isinstance(event.data, dict) else {}
    code = str(data.get("code", "UNAUTHORIZED"))
    message = str(data.get("message", "The stream was ended by the server."))
    return error_from(401, {"success": False, "error": {"code": code, "message": message}}, Message())


def _cut(res: Any) -> None:
    """Ends a response from any thread: shuts its socket down, so that a read blocked on it
    returns at once (the reading thread then closes the response; closing it here would pull
    the file from under that read). The socket is found through http.client's file object; a
    response without one is closed."""
    raw = getattr(getattr(res, "fp", None), "raw", None)
    sock = getattr(raw, "_sock", None)
    if isinstance(sock, socket.socket):
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed or never connected: nothing to cut
        return
    try:
        res.close()
    except (OSError, ValueError):
        pass  # the reading thread closed it meanwhile
