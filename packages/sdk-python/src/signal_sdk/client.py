"""SignalClient: every public operation of /openapi.json, with retries, pagination and timeouts."""

import json
import random
import re
import threading
import time
import urllib.error
import urllib.request
import uuid
from datetime import datetime
from email.message import Message
from http.client import HTTPException, HTTPResponse
from typing import (
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
    cast,
)

from .errors import NotFoundError, SignalConnectionError, SignalTimeoutError
from .stream import SignalStream
from .transport import (
    QueryValue,
    RateLimit,
    RetryInfo,
    error_from,
    is_timeout,
    iso_time,
    network_failure,
    parse_retry_after,
    query_string,
    rate_limit_of,
)
from .types import (
    ApiKey,
    ApiKeyPage,
    ApiKeyWithSecret,
    DeliveryEvent,
    DeliveryListMeta,
    DeliveryPage,
    DeliveryStatus,
    ListMeta,
    LogoutResult,
    Page,
    PageMeta,
    RecoverResult,
    RolledApiKey,
    Session,
    SignalDetail,
    SignalListItem,
    SignalPage,
    SignalStatus,
    SignalType,
    Statistics,
    StatsPeriod,
    WebhookDelivery,
    WebhookDeliveryDetail,
    WebhookEvent,
    WebhookPage,
    WebhookSubscription,
    WebhookSubscriptionWithSecret,
)

from .routes import OPERATIONS, path_of
from .version import __version__


# The fixed words of the API's paths ("stream", "deliveries", ...): never an id.
_ROUTE_WORDS = frozenset(w for o in OPERATIONS.values() for w in o.path.split("/") if w and not w.startswith("{"))


def _id_path(operation: str, **ids: str) -> str:
    """The path of ``operation`` for these ids, refused before anything is sent when one names no
    resource: an id that is empty, ``.`` or ``..`` (or not a string) would make the URL name another
    one once resolved (the list, or the webhook a delivery belongs to), and one that is a word of the
    paths another route (``signals.get("stream")`` would open the live stream), returned as if it were
    the one asked for. It is the NotFoundError the API gives a malformed id."""
    for name, value in ids.items():
        if not isinstance(value, str) or value in ("", ".", "..") or value in _ROUTE_WORDS:
            raise NotFoundError(404, "NOT_FOUND", f"{name} {value!r} is not an id: nothing was sent.")
    return path_of(operation, **ids)

DEFAULT_BASE_URL = "http://127.0.0.1:8080"

# Importable from here as before: the client's retry notice and Retry-After parsing.
__all__ = ["DEFAULT_BASE_URL", "UNSET", "RateLimit", "RetryInfo", "SignalClient", "parse_retry_after"]


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""The default of update's fields: a field left UNSET is not sent (None clears it)."""

# POSTs the server deduplicates on their Idempotency-Key (a repeat answers as the first did), as
# path patterns: only these are sent again after a lost response or a 5xx, as the repeat cannot
# create twice, rotate a secret twice or send a test twice.
_DEDUPLICATED_POSTS = tuple(
    re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", op.path) + "$")
    for op in OPERATIONS.values()
    if op.method == "POST" and op.idempotency_key
)


class SignalClient:
    """The Signal Service API.

    ``SignalClient(api_key, base_url="https://api.example.com")``. 429 and 503 are retried up to
    ``max_retries`` times, waiting what Retry-After asks for, within ``max_retry_wait``: the most
    one call spends waiting between its attempts, all waits together, in seconds (default 5, as
    the TypeScript SDK's ``maxRetryWait``). A wait that would pass it (a 429 whose Retry-After is
    the rest of the minute, or a used-up daily quota) is not started: the RateLimitError (with
    ``retry_after``) is raised at once for the caller to plan around, so a call never sits silent
    for long. Before every wait ``on_retry(RetryInfo)`` is called.
    ``timeout`` is per attempt, in seconds.
    """

    def __init__(
        self,
        api_key: Optional[str],
        *,
        base_url: str = DEFAULT_BASE_URL,
        timeout: float = 10.0,
        max_retries: int = 3,
        on_retry: Optional[Callable[[RetryInfo], None]] = None,
        max_retry_wait: float = 5.0,
        retry_base_wait: float = 0.5,
        session_token: Optional[str] = None,
        user_agent: Optional[str] = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not base_url:
            raise ValueError("base_url is required")
        self.api_key = api_key
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_retries = max_retries
        self.on_retry = on_retry
        self.max_retry_wait = max_retry_wait
        self.retry_base_wait = retry_base_wait
        self.session_token = session_token
        self.rate_limit: Optional[RateLimit] = None
        """From the latest response that carried the X-RateLimit-* headers: pace a bot by it."""
        self.user_agent = user_agent or f"signal-sdk-python/{__version__}"
        self._sleep = sleep
        # No redirect following: a 3xx is not a response of this API, and a redirect would carry
        # the Authorization header to wherever it points.
        self._opener = urllib.request.build_opener(_NoRedirect())
        self.signals = Signals(self)
        self.stats = Stats(self)
        self.webhooks = Webhooks(self)
        self.auth = Auth(self)
        self.account = Account(self)

    # -- transport -------------------------------------------------------------------------

    def _headers(self, method: str, has_body: bool, auth: str, idempotency_key: Optional[str]) -> Dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": self.user_agent}
        if has_body:
            headers["Content-Type"] = "application/json"
        token = self.api_key if auth == "api_key" else self.session_token if auth == "session" else None
        if auth != "none" and not token:
            raise ValueError("api_key is required" if auth == "api_key" else "log in first (client.auth.login)")
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if method == "POST":
            headers["Idempotency-Key"] = idempotency_key or str(uuid.uuid4())
        return headers

    def _url(self, path: str, query: Mapping[str, QueryValue]) -> str:
        qs = query_string(query)
        return f"{self.base_url}{path}" + (f"?{qs}" if qs else "")

    def retry_wait(self, attempt: int, retry_after: Optional[int]) -> float:
        """Seconds before retry ``attempt`` (1-based): Retry-After when given, else jittered backoff."""
        if retry_after is not None:
            return float(retry_after)
        wanted = float(self.retry_base_wait * 2 ** (attempt - 1) * (0.8 + random.random() * 0.4))
        return min(float(self.max_retry_wait), max(0.0, wanted))

    def _wait(self, info: RetryInfo, interrupt: Optional[threading.Event] = None) -> None:
        """Tells ``on_retry``, then sleeps ``info.wait``; with the default sleep, ``interrupt`` being
        set ends the wait early (a stream closed from another thread). An injected ``sleep`` is
        always the one used."""
        if self.on_retry is not None:
            self.on_retry(info)
        if interrupt is not None and self._sleep is time.sleep:
            interrupt.wait(info.wait)
        else:
            self._sleep(info.wait)

    def _open(
        self, method: str, url: str, headers: Mapping[str, str], payload: Optional[bytes], timeout: float
    ) -> Tuple[int, Message, Any]:
        """One attempt: (status, headers, the open response or the error's body bytes)."""
        req = urllib.request.Request(url, data=payload, method=method, headers=dict(headers))
        try:
            res = self._opener.open(req, timeout=timeout)
            return res.status, res.headers, res
        except urllib.error.HTTPError as err:
            try:
                body = err.read()
            finally:
                err.close()
            return err.code, err.headers, body

    def request(
        self,
        method: str,
        path: str,
        query: Optional[Mapping[str, QueryValue]] = None,
        body: Any = None,
        *,
        auth: str = "api_key",
        idempotency_key: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Dict[str, Any]:
        """One API call with retries; returns the success envelope ``{success, data, meta?}``."""
        headers = self._headers(method, body is not None, auth, idempotency_key)
        url = self._url(path, query or {})
        payload = None if body is None else json.dumps(body).encode("utf-8")
        per_attempt = self.timeout if timeout is None else timeout
        deduplicated = method == "POST" and any(p.match(path) for p in _DEDUPLICATED_POSTS)
        attempt = 0
        # Seconds waited so far: all the call's waits together stay within max_retry_wait.
        waited = 0.0
        while True:
            last = attempt >= self.max_retries
            try:
                deadline = time.monotonic() + per_attempt
                status, res_headers, res = self._open(method, url, headers, payload, per_attempt)
                raw = res if isinstance(res, bytes) else _read_all(res, deadline)
            except (urllib.error.URLError, HTTPException, OSError) as err:
                timed_out = is_timeout(err)
                wait = self.retry_wait(attempt + 1, None)
                # A POST that got no response may have happened: it is sent again only where the
                # server responds to a repeat with what the first made.
                if last or (method == "POST" and not deduplicated) or waited + wait > self.max_retry_wait:
                    if timed_out:
                        raise SignalTimeoutError(f"{method} {path}: no complete response within {per_attempt} s") from err
                    raise SignalConnectionError(f"{method} {path}: {network_failure(err, self.base_url)}") from err
                attempt += 1
                waited += wait
                self._wait(RetryInfo(attempt, wait, method, path, None, "timeout" if timed_out else "connection"))
                continue
            self.rate_limit = rate_limit_of(res_headers) or self.rate_limit
            try:
                decoded = json.loads(raw.decode("utf-8")) if raw else None
            except (UnicodeDecodeError, ValueError):
                decoded = None
            if 200 <= status < 300 and isinstance(decoded, dict) and decoded.get("success") is True:
                return decoded
            if 200 <= status < 300:
                raise SignalConnectionError(f"{method} {path}: HTTP {status} without the API's envelope")
            error = error_from(status, decoded, res_headers)
            retried = status in (429, 503) or (deduplicated and status >= 500)
            if last or not retried:
                raise error
            wait = self.retry_wait(attempt + 1, error.retry_after)
            if waited + wait > self.max_retry_wait:
                raise error
            attempt += 1
            waited += wait
            reason = "rate_limited" if status == 429 else "unavailable" if status == 503 else "server_error"
            self._wait(RetryInfo(attempt, wait, method, path, status, reason, error.request_id))

    def _data(self, method: str, path: str, query: Optional[Mapping[str, QueryValue]] = None, body: Any = None, **kw: Any) -> Any:
        return self.request(method, path, query, body, **kw)["data"]

    def _page(self, path: str, query: Mapping[str, QueryValue], auth: str = "api_key") -> Page[Any, Any]:
        envelope = self.request("GET", path, query, auth=auth)
        if not isinstance(envelope.get("meta"), dict):
            raise SignalConnectionError(f"GET {path}: the response has no meta")
        return Page(envelope["data"], envelope["meta"])

    def _pages(self, path: str, query: Mapping[str, QueryValue], auth: str = "api_key") -> Iterator[Any]:
        page = 1
        while True:
            result = self._page(path, {**query, "page": page}, auth)
            yield from result.data
            if not result.data or page >= result.meta["total_pages"]:
                return
            page += 1


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _read_all(res: HTTPResponse, deadline: float) -> bytes:
    """The whole body within the attempt's time: the socket's timeout bounds one read only, so a
    body that trickles (or a stream's keep-alives) would hold the call for ever."""
    chunks: List[bytes] = []
    try:
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError("the response's body did not complete in time")
            chunk = res.read1(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        res.close()


class Signals:
    def __init__(self, client: SignalClient) -> None:
        self._c = client

    def list(
        self,
        *,
        type: Optional[SignalType] = None,
        status: Optional[SignalStatus] = None,
        since: Union[str, datetime, None] = None,
        limit: Optional[int] = None,
        page: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> SignalPage:
        """One page of signals, newest first (operationId listSignals), and the list's ``meta``."""
        query = {"type": type, "status": status, "since": since, "limit": limit, "page": page, "cursor": cursor}
        return cast(SignalPage, self._c._page(path_of("listSignals"), query))

    def iterate(
        self,
        *,
        type: Optional[SignalType] = None,
        status: Optional[SignalStatus] = None,
        since: Union[str, datetime, None] = None,
        limit: Optional[int] = None,
    ) -> Iterator[SignalListItem]:
        """Every matching signal, newest first, page after page by ``meta.next_cursor``."""
        cursor: Optional[str] = None
        while True:
            result = self.list(type=type, status=status, since=since, limit=limit, cursor=cursor)
            yield from result.data
            meta: ListMeta = result.meta
            if not result.data or not meta.get("next_cursor"):
                return
            cursor = meta["next_cursor"]

    def get(self, signal_id: str) -> SignalDetail:
        """operationId getSignal."""
        return cast(SignalDetail, self._c._data("GET", _id_path("getSignal", signal_id=signal_id)))

    def stream(
        self,
        *,
        type: Union[SignalType, Sequence[SignalType], None] = None,
        events: Union[WebhookEvent, Sequence[WebhookEvent], None] = None,
        last_event_id: Optional[str] = None,
        idle_timeout: float = 45.0,
        max_reconnects: Optional[int] = None,
        max_backoff: float = 30.0,
    ) -> SignalStream:
        """The live stream GET /v1/signals/stream, an iterator of StreamEvent that reconnects and
        resumes by Last-Event-ID: see signal_sdk.stream."""
        return SignalStream(
            self._c,
            type=type,
            events=events,
            last_event_id=last_event_id,
            idle_timeout=idle_timeout,
            max_reconnects=max_reconnects,
            max_backoff=max_backoff,
        )


class Stats:
    def __init__(self, client: SignalClient) -> None:
        self._c = client

    def get(self, *, type: Optional[SignalType] = None, period: Optional[StatsPeriod] = None) -> Statistics:
        """operationId getStats."""
        return cast(Statistics, self._c._data("GET", path_of("getStats"), {"type": type, "period": period}))


class Deliveries:
    def __init__(self, client: SignalClient) -> None:
        self._c = client

    def list(
        self,
        webhook_id: str,
        *,
        status: Optional[DeliveryStatus] = None,
        event: Optional[DeliveryEvent] = None,
        limit: Optional[int] = None,
        page: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> DeliveryPage:
        """One page of the subscription's deliveries, newest first (operationId listWebhookDeliveries):
        by ``page``, or by a page's ``meta.next_cursor`` (the page after it) or ``meta.prev_cursor``
        (the page before it) as ``cursor``."""
        query = {"status": status, "event": event, "limit": limit, "page": page, "cursor": cursor}
        return cast(DeliveryPage, self._c._page(_id_path("listWebhookDeliveries", webhook_id=webhook_id), query))

    def iterate(
        self,
        webhook_id: str,
        *,
        status: Optional[DeliveryStatus] = None,
        event: Optional[DeliveryEvent] = None,
        limit: Optional[int] = None,
    ) -> Iterator[WebhookDelivery]:
        """Every delivery, newest first, page after page by ``meta.next_cursor``: deliveries made
        during the walk do not shift it, so none comes twice."""
        cursor: Optional[str] = None
        while True:
            result = self.list(webhook_id, status=status, event=event, limit=limit, cursor=cursor)
            yield from result.data
            meta: DeliveryListMeta = result.meta
            if not result.data or not meta.get("next_cursor"):
                return
            cursor = meta["next_cursor"]

    def get(self, webhook_id: str, delivery_id: str) -> WebhookDeliveryDetail:
        """One delivery with its ``attempts``, each with the request sent and the response
        (operationId getWebhookDelivery)."""
        path = _id_path("getWebhookDelivery", webhook_id=webhook_id, delivery_id=delivery_id)
        return cast(WebhookDeliveryDetail, self._c._data("GET", path))

    def retry(self, webhook_id: str, delivery_id: str, *, idempotency_key: Optional[str] = None) -> WebhookDelivery:
        """Sends the delivery again (operationId retryWebhookDelivery). The same ``idempotency_key``
        again answers with the delivery as it stands, without another attempt."""
        path = _id_path("retryWebhookDelivery", webhook_id=webhook_id, delivery_id=delivery_id)
        return cast(WebhookDelivery, self._c._data("POST", path, idempotency_key=idempotency_key))


class Webhooks:
    def __init__(self, client: SignalClient) -> None:
        self._c = client
        self.deliveries = Deliveries(client)

    def create(
        self,
        *,
        url: str,
        events: Sequence[WebhookEvent],
        types: Optional[Sequence[SignalType]] = None,
        description: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> WebhookSubscriptionWithSecret:
        """A new subscription and its signing secret (operationId createWebhook).

        The same ``idempotency_key`` and body again return the same subscription, so a create
        whose response was lost can be repeated safely; without one the client makes a key per call
        (kept across its own retries).
        """
        body: Dict[str, Any] = {"url": url, "events": list(events)}
        if types is not None:
            body["types"] = list(types)
        if description is not None:
            body["description"] = description
        return cast(
            WebhookSubscriptionWithSecret,
            self._c._data("POST", path_of("createWebhook"), body=body, idempotency_key=idempotency_key),
        )

    def list(self, *, page: Optional[int] = None, limit: Optional[int] = None) -> WebhookPage:
        """One page of subscriptions, newest first (operationId listWebhooks), the first 100
        without ``page``/``limit``: iterate it (``for hook in client.webhooks.list()``), ``len()``
        it, or read ``.data`` and ``.meta`` (total, pages); ``iterate()`` walks every page."""
        return cast(WebhookPage, self._c._page(path_of("listWebhooks"), {"page": page, "limit": limit}))

    def iterate(self, *, limit: Optional[int] = None) -> Iterator[WebhookSubscription]:
        """Every subscription, newest first, page after page."""
        return self._c._pages(path_of("listWebhooks"), {"limit": limit})

    def get(self, webhook_id: str) -> WebhookSubscription:
        """operationId getWebhook."""
        return cast(WebhookSubscription, self._c._data("GET", _id_path("getWebhook", webhook_id=webhook_id)))

    def update(
        self,
        webhook_id: str,
        *,
        url: str = UNSET,
        events: Sequence[WebhookEvent] = UNSET,
        types: Optional[Sequence[SignalType]] = UNSET,
        description: Optional[str] = UNSET,
        enabled: bool = UNSET,
    ) -> WebhookSubscription:
        """Changes the given fields (operationId updateWebhook); ``types=None`` means every type."""
        fields = {"url": url, "events": events, "types": types, "description": description, "enabled": enabled}
        body = {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in fields.items() if v is not UNSET}
        path = _id_path("updateWebhook", webhook_id=webhook_id)
        return cast(WebhookSubscription, self._c._data("PATCH", path, body=body))

    def delete(self, webhook_id: str) -> WebhookSubscription:
        """operationId deleteWebhook: returns what was deleted."""
        return cast(WebhookSubscription, self._c._data("DELETE", _id_path("deleteWebhook", webhook_id=webhook_id)))

    def rotate_secret(self, webhook_id: str, *, idempotency_key: Optional[str] = None) -> WebhookSubscriptionWithSecret:
        """A new secret signs from now on; the previous one keeps signing for the overlap. The same
        ``idempotency_key`` again answers with the secret this rotation made, without rotating again."""
        path = _id_path("rotateWebhookSecret", webhook_id=webhook_id)
        return cast(WebhookSubscriptionWithSecret, self._c._data("POST", path, idempotency_key=idempotency_key))

    def send_test(
        self, webhook_id: str, event: Optional[DeliveryEvent] = None, *, idempotency_key: Optional[str] = None
    ) -> WebhookDelivery:
        """Queues a signed test delivery to the subscription's URL (operationId sendWebhookTest):
        ``webhook.test``, or with ``event`` a sample of that event in its payload shape, marked
        ``test: True``. The same ``idempotency_key`` again answers with that delivery, queuing none."""
        body = None if event is None else {"event": event}
        path = _id_path("sendWebhookTest", webhook_id=webhook_id)
        return cast(WebhookDelivery, self._c._data("POST", path, body=body, idempotency_key=idempotency_key))

    def recover(
        self,
        webhook_id: str,
        since: Union[str, datetime],
        cursor: Optional[str] = None,
        limit: Optional[int] = None,
        *,
        idempotency_key: Optional[str] = None,
    ) -> RecoverResult:
        """Attempts now every failed or pending delivery created since ``since``, one page per call
        (operationId recoverWebhook): pass the result's ``next_cursor`` as ``cursor`` until it is
        None. A failed delivery gets one more attempt, once: a repeat skips those queued or already
        given it, and queues 0 (with the same ``idempotency_key``, it answers as the first did)."""
        when = iso_time(since) if isinstance(since, datetime) else since
        body: Dict[str, Any] = {"since": when}
        if cursor is not None:
            body["cursor"] = cursor
        if limit is not None:
            body["limit"] = limit
        path = _id_path("recoverWebhook", webhook_id=webhook_id)
        return cast(RecoverResult, self._c._data("POST", path, body=body, idempotency_key=idempotency_key))


class Auth:
    def __init__(self, client: SignalClient) -> None:
        self._c = client

    def login(self, email: str, password: str) -> Session:
        """A dashboard session, kept by the client for the ``account`` operations (operationId login)."""
        session = cast(
            Session, self._c._data("POST", path_of("login"), body={"email": email, "password": password}, auth="none")
        )
        self._c.session_token = session.get("token")
        return session

    def logout(self) -> LogoutResult:
        """Ends the kept session (operationId logout)."""
        out = cast(LogoutResult, self._c._data("POST", path_of("logout"), auth="session"))
        self._c.session_token = None
        return out


class Account:
    """The account's API keys and password; these need a session (client.auth.login)."""

    def __init__(self, client: SignalClient) -> None:
        self._c = client

    def change_password(self, current_password: str, new_password: str) -> Session:
        """Every session so far ends; the new one is kept (operationId changePassword)."""
        body = {"current_password": current_password, "new_password": new_password}
        session = cast(Session, self._c._data("POST", path_of("changePassword"), body=body, auth="session"))
        self._c.session_token = session.get("token")
        return session

    def list_keys(self, *, page: Optional[int] = None, limit: Optional[int] = None) -> ApiKeyPage:
        """operationId listApiKeys."""
        return cast(ApiKeyPage, self._c._page(path_of("listApiKeys"), {"page": page, "limit": limit}, auth="session"))

    def iterate_keys(self, *, limit: Optional[int] = None) -> Iterator[ApiKey]:
        """Every key of the account, newest first, page after page (as TypeScript's ``iterateKeys``)."""
        return self._c._pages(path_of("listApiKeys"), {"limit": limit}, auth="session")

    def create_key(
        self, name: str, *, expires_at: Union[str, datetime, None] = None, idempotency_key: Optional[str] = None
    ) -> ApiKeyWithSecret:
        """A new API key; ``key`` is shown only in this response (operationId createApiKey)."""
        body: Dict[str, Any] = {"name": name}
        if expires_at is not None:
            body["expires_at"] = iso_time(expires_at) if isinstance(expires_at, datetime) else expires_at
        return cast(
            ApiKeyWithSecret,
            self._c._data("POST", path_of("createApiKey"), body=body, auth="session", idempotency_key=idempotency_key),
        )

    def roll_key(self, key_id: str, *, overlap_seconds: int, idempotency_key: Optional[str] = None) -> RolledApiKey:
        """operationId rollApiKey: a new key now (``created["key"]``, shown only here); the old one
        revoked at once (``overlap_seconds=0``) or working that much longer (60 s to 7 days)."""
        return cast(
            RolledApiKey,
            self._c._data(
                "POST",
                _id_path("rollApiKey", key_id=key_id),
                body={"overlap_seconds": overlap_seconds},
                auth="session",
                idempotency_key=idempotency_key,
            ),
        )

    def rename_key(self, key_id: str, name: str) -> ApiKey:
        """operationId renameApiKey: a new name; the key's secret, expiry and status stay."""
        return cast(
            ApiKey, self._c._data("PATCH", _id_path("renameApiKey", key_id=key_id), body={"name": name}, auth="session")
        )

    def revoke_key(self, key_id: str) -> ApiKey:
        """operationId revokeApiKey: from now on every request with the key fails."""
        return cast(ApiKey, self._c._data("DELETE", _id_path("revokeApiKey", key_id=key_id), auth="session"))

