"""The API's resources as TypedDicts, mirroring the component schemas of /openapi.json.

Results are the decoded JSON objects themselves (``signal["performance"]["status"]``), typed for
mypy and editors; a field the API adds later is simply there. ``tests/test_types.py`` walks the
served document and fails when a documented field, its required-ness, its nullability or its
allowed values differ from these declarations.

A TypedDict with both required and optional keys is a required base plus a ``total=False``
subclass (``NotRequired`` needs Python 3.11).
"""

from dataclasses import dataclass
from typing import Dict, Generic, Iterator, List, Literal, Optional, TypedDict, TypeVar, Union

SignalType = Literal["new", "3d", "7d", "30d", "wallet", "premium"]
SignalStatus = Literal["active", "winner", "dead", "rugged"]
WebhookEvent = Literal["signal.new", "signal.winner", "signal.dead", "signal.rugged"]
DeliveryEvent = Literal["signal.new", "signal.winner", "signal.dead", "signal.rugged", "webhook.test"]
DeliveryStatus = Literal["pending", "succeeded", "failed"]
StatsPeriod = Literal["24h", "7d", "30d", "all"]
ApiKeyStatus = Literal["active", "expired", "revoked"]
SubscriptionStatus = Literal["enabled", "disabled"]
ErrorCode = Literal[
    "VALIDATION_ERROR",
    "UNAUTHORIZED",
    "KEY_EXPIRED",
    "FORBIDDEN",
    "NOT_FOUND",
    "METHOD_NOT_ALLOWED",
    "CONFLICT",
    "INVALID_STATUS_TRANSITION",
    "IDEMPOTENCY_CONFLICT",
    "PAYLOAD_TOO_LARGE",
    "UNSUPPORTED_MEDIA_TYPE",
    "RATE_LIMIT_EXCEEDED",
    "INTERNAL_ERROR",
    "BAD_GATEWAY",
    "SERVICE_UNAVAILABLE",
    "GATEWAY_TIMEOUT",
]

# -- signals ---------------------------------------------------------------------------------


class SignalToken(TypedDict):
    symbol: str
    name: str
    contract: str
    age_hours: float


class SignalMetrics(TypedDict):
    mcap_entry: float
    mcap_current: float
    volume_24h: float
    holders: float
    liquidity: float


class SignalPerformance(TypedDict):
    roi: float
    ath_roi: float
    status: SignalStatus


class SignalListItem(TypedDict):
    id: str
    token: SignalToken
    metrics: SignalMetrics
    performance: SignalPerformance
    type: SignalType
    is_premium: bool
    created_at: str


class TokenSocials(TypedDict):
    twitter: Optional[str]
    telegram: Optional[str]
    website: Optional[str]


class SignalDetailToken(TypedDict):
    symbol: str
    name: str
    contract: str
    age_hours: float
    dex_paid: bool
    socials: TokenSocials


class SignalDetailMetrics(TypedDict):
    mcap_entry: float
    mcap_current: float
    volume_24h: float
    holders: float
    liquidity: float
    mcap_ath: float


class SignalDetailPerformance(TypedDict):
    roi: float
    ath_roi: float
    status: SignalStatus
    time_to_ath_hours: float


class SignalDetail(TypedDict):
    id: str
    token: SignalDetailToken
    metrics: SignalDetailMetrics
    performance: SignalDetailPerformance
    type: SignalType
    is_premium: bool
    created_at: str
    updated_at: str


class ListMeta(TypedDict):
    """``meta`` of GET /v1/signals: ``next_cursor`` is None on the last page."""

    total: int
    page: int
    per_page: int
    total_pages: int
    next_cursor: Optional[str]


class DeliveryListMeta(ListMeta):
    """``meta`` of a delivery list: ``prev_cursor`` walks back (None on the first page)."""

    prev_cursor: Optional[str]


class PageMeta(TypedDict):
    """``meta`` of the other lists (subscriptions, keys): page numbers only."""

    total: int
    page: int
    per_page: int
    total_pages: int


# -- statistics ------------------------------------------------------------------------------


class TypeStatistics(TypedDict):
    total: int
    winners: int
    win_rate: float
    """Percent, 0–100 (not a fraction): winners per 100 signals (27.5 means 27.5 %)."""


# Keys such as "3d" are not identifiers: the functional form declares them.
StatisticsByType = TypedDict(
    "StatisticsByType",
    {
        "new": TypeStatistics,
        "3d": TypeStatistics,
        "7d": TypeStatistics,
        "30d": TypeStatistics,
        "wallet": TypeStatistics,
        "premium": TypeStatistics,
    },
)


class Statistics(TypedDict):
    total_signals: int
    winners: int
    win_rate: float
    """Percent, 0–100 (not a fraction): winners per 100 signals of the period."""
    avg_roi: float
    best_roi: float
    by_type: StatisticsByType


# -- webhooks --------------------------------------------------------------------------------


class WebhookHealth(TypedDict):
    """A subscription's delivery health, kept as attempts are recorded."""

    last_delivery_status: Optional[Literal["succeeded", "failed"]]
    last_delivery_at: Optional[str]
    last_response_status: Optional[int]
    last_error: Optional[str]
    failing_since: Optional[str]
    failures_24h: int


class WebhookSubscription(TypedDict):
    id: str
    url: str
    events: List[WebhookEvent]
    types: Optional[List[SignalType]]
    description: Optional[str]
    status: SubscriptionStatus
    disabled_reason: Optional[str]
    created_at: str
    updated_at: str
    health: WebhookHealth


class WebhookSubscriptionWithSecret(WebhookSubscription):
    """What create and rotate-secret return: the signing secret ``whsec_…``, shown only then."""

    secret: str


class DeliveryAttemptRequest(TypedDict):
    """What an attempt sent: the URL, every header, and the exact body the signature covers."""

    url: str
    headers: Dict[str, str]
    body: str


class DeliveryAttemptResponse(TypedDict):
    """What came back: the status, the headers, the first 4 KB of the body (``body_encoding``
    ``base64`` when the bytes were not UTF-8 or held NUL: decode it to see them)."""

    status: int
    headers: Dict[str, str]
    headers_truncated: bool
    body: str
    body_encoding: Literal["text", "base64"]
    body_truncated: bool


class DeliveryAttempt(TypedDict):
    """``request`` is None when nothing was sent (a refused address); ``response`` when none came."""

    attempt: int
    started_at: str
    duration_ms: float
    status_code: Optional[int]
    error: Optional[str]
    request: Optional[DeliveryAttemptRequest]
    response: Optional[DeliveryAttemptResponse]


class WebhookDelivery(TypedDict):
    """A delivery as lists, test events and re-sends return it: its state, without the attempts."""

    id: str
    webhook_id: str
    event_id: str
    event: DeliveryEvent
    status: DeliveryStatus
    attempts_made: int
    next_attempt_at: Optional[str]
    last_response_status: Optional[int]
    last_error: Optional[str]
    created_at: str
    updated_at: str


class WebhookDeliveryDetail(WebhookDelivery):
    """One delivery read alone (GET …/deliveries/{id}): its state and every attempt so far."""

    attempts: List[DeliveryAttempt]


class RecoverResult(TypedDict):
    """What POST …/recover returns: how many deliveries were queued for an attempt now, and the
    cursor of the next page (None when this call covered the last)."""

    since: str
    queued: int
    next_cursor: Optional[str]


class _WebhookSignalDataRequired(TypedDict):
    id: str
    token: SignalDetailToken
    metrics: SignalDetailMetrics
    type: SignalType
    is_premium: bool


class WebhookSignalData(_WebhookSignalDataRequired, total=False):
    """``data`` of ``signal.new``: the signal as it entered. A test sample of the event
    (``send_test(id, event="signal.new")``) carries ``test: True``, ``subscription_id`` and
    ``message`` too."""

    performance: SignalDetailPerformance
    test: Literal[True]
    subscription_id: str
    message: str


class _SignalChangeDataRequired(_WebhookSignalDataRequired):
    performance: SignalDetailPerformance


class SignalChangeData(_SignalChangeDataRequired, total=False):
    """``data`` of ``signal.winner``, ``signal.dead`` and ``signal.rugged``: the signal with its
    performance as of the event (a test sample is marked as for signal.new)."""

    test: Literal[True]
    subscription_id: str
    message: str


class _WebhookTestDataRequired(_WebhookSignalDataRequired):
    test: Literal[True]
    subscription_id: str
    message: str


class WebhookTestData(_WebhookTestDataRequired, total=False):
    """``data`` of ``webhook.test``: a sample signal marked ``test: True``; its id names no signal."""

    performance: SignalDetailPerformance


class SignalNewPayload(TypedDict):
    event: Literal["signal.new"]
    timestamp: str
    data: WebhookSignalData


class SignalChangePayload(TypedDict):
    event: Literal["signal.winner", "signal.dead", "signal.rugged"]
    timestamp: str
    data: SignalChangeData


class WebhookTestPayload(TypedDict):
    event: Literal["webhook.test"]
    timestamp: str
    data: WebhookTestData


WebhookPayload = Union[SignalNewPayload, SignalChangePayload, WebhookTestPayload]
"""The JSON body of a webhook delivery and the ``data`` of a stream event, one shape per
``event``: check ``payload["event"]`` to narrow it."""


# -- account ---------------------------------------------------------------------------------


class ApiKey(TypedDict):
    id: str
    name: str
    prefix: str
    created_at: str
    expires_at: Optional[str]
    last_used_at: Optional[str]
    revoked_at: Optional[str]
    status: ApiKeyStatus
    replaced_by: Optional[str]
    """The id of the key that replaced it when it was rolled; None for a key never rolled."""


class ApiKeyWithSecret(ApiKey):
    """What creating a key returns: the key ``sk_live_…`` itself, shown only then."""

    key: str


class RolledApiKey(TypedDict):
    """What rolling a key returns: the new key (``created["key"]`` shown only then) and the
    key it replaced (``previous``: revoked, or working until its ``expires_at``)."""

    created: ApiKeyWithSecret
    previous: ApiKey


class Session(TypedDict):
    """A dashboard session (login, change of password)."""

    token: str
    expires_at: str


class LogoutResult(TypedDict):
    logged_out: Literal[True]


# -- pages -----------------------------------------------------------------------------------

T = TypeVar("T")
M = TypeVar("M")


@dataclass(frozen=True)
class Page(Generic[T, M]):
    """One page of a list: its items and the list's ``meta``. A page is a sequence of its items
    as well: ``for hook in client.webhooks.list()``, ``len(page)`` (this page's items; the list's
    total is ``page.meta["total"]``), ``page[0]``. An empty page is falsy."""

    data: List[T]
    meta: M

    def __iter__(self) -> Iterator[T]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int) -> T:
        return self.data[index]


SignalPage = Page[SignalListItem, ListMeta]
WebhookPage = Page[WebhookSubscription, PageMeta]
DeliveryPage = Page[WebhookDelivery, DeliveryListMeta]
ApiKeyPage = Page[ApiKey, PageMeta]

JsonObject = Dict[str, object]
