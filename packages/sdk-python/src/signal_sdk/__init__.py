"""signal_sdk: the Python client of the Signal Service API (standard library only).

    from signal_sdk import SignalClient, verify_webhook
    client = SignalClient("sk_live_…", base_url="https://api.example.com")
    for signal in client.signals.iterate(type="new"):
        ...
"""

from .client import DEFAULT_BASE_URL, UNSET, SignalClient
from .errors import (
    AuthenticationError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    RateLimitError,
    ServerError,
    SignalApiError,
    SignalConnectionError,
    SignalError,
    SignalTimeoutError,
    ValidationError,
    WebhookVerificationError,
)
from .stream import SignalStream, StreamEvent
from .transport import RateLimit, RetryInfo, parse_retry_after
from .types import (
    ApiKey,
    ApiKeyWithSecret,
    DeliveryAttempt,
    DeliveryAttemptRequest,
    DeliveryAttemptResponse,
    DeliveryListMeta,
    ListMeta,
    Page,
    PageMeta,
    RecoverResult,
    RolledApiKey,
    SignalChangePayload,
    SignalDetail,
    SignalListItem,
    SignalNewPayload,
    Statistics,
    WebhookDelivery,
    WebhookDeliveryDetail,
    WebhookPayload,
    WebhookTestPayload,
    WebhookSubscription,
    WebhookSubscriptionWithSecret,
)
from .version import __version__
from .webhooks import generate_secret, sign_webhook, verify_webhook

__all__ = [
    "__version__",
    "DEFAULT_BASE_URL",
    "UNSET",
    "ApiKey",
    "ApiKeyWithSecret",
    "AuthenticationError",
    "ConflictError",
    "DeliveryAttempt",
    "DeliveryAttemptRequest",
    "DeliveryAttemptResponse",
    "ForbiddenError",
    "DeliveryListMeta",
    "ListMeta",
    "NotFoundError",
    "Page",
    "PageMeta",
    "RateLimit",
    "RateLimitError",
    "RecoverResult",
    "RetryInfo",
    "RolledApiKey",
    "ServerError",
    "SignalApiError",
    "SignalChangePayload",
    "SignalClient",
    "SignalConnectionError",
    "SignalDetail",
    "SignalError",
    "SignalListItem",
    "SignalNewPayload",
    "SignalStream",
    "SignalTimeoutError",
    "Statistics",
    "StreamEvent",
    "ValidationError",
    "WebhookDelivery",
    "WebhookDeliveryDetail",
    "WebhookPayload",
    "WebhookSubscription",
    "WebhookSubscriptionWithSecret",
    "WebhookTestPayload",
    "WebhookVerificationError",
    "generate_secret",
    "parse_retry_after",
    "sign_webhook",
    "verify_webhook",
]
