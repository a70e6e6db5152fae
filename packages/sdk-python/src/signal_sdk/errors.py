"""Errors: one exception class per kind of error code the API returns."""

from typing import Dict, List, Optional, Type


class SignalError(Exception):
    """Base of every error this SDK raises."""


class SignalApiError(SignalError):
    """The API responded with its error envelope ``{ error: { code, message, ... }, request_id }``."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        request_id: Optional[str] = None,
        retry_after: Optional[int] = None,
        details: Optional[List[Dict[str, str]]] = None,
    ) -> None:
        super().__init__(f"{code} ({status}): {message}")
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id
        self.retry_after = retry_after
        self.details = details


class AuthenticationError(SignalApiError):
    """UNAUTHORIZED or KEY_EXPIRED: the key is missing, invalid, revoked or expired."""


class ForbiddenError(SignalApiError):
    """FORBIDDEN."""


class NotFoundError(SignalApiError):
    """NOT_FOUND."""


class ValidationError(SignalApiError):
    """VALIDATION_ERROR (``details`` names the fields), and other refusals of the request's form."""


class ConflictError(SignalApiError):
    """CONFLICT, IDEMPOTENCY_CONFLICT, INVALID_STATUS_TRANSITION."""


class RateLimitError(SignalApiError):
    """RATE_LIMIT_EXCEEDED: ``retry_after`` seconds until the next request is allowed."""


class ServerError(SignalApiError):
    """INTERNAL_ERROR, BAD_GATEWAY, SERVICE_UNAVAILABLE, GATEWAY_TIMEOUT."""


class SignalTimeoutError(SignalError):
    """No response within the timeout (after the last retry)."""


class SignalConnectionError(SignalError):
    """The network failed (refused, reset, DNS) after the last retry, or the response was not the API's."""


class WebhookVerificationError(SignalError):
    """A webhook request whose signature, timestamp or body does not verify."""


ERROR_CLASSES: Dict[str, Type[SignalApiError]] = {
    "UNAUTHORIZED": AuthenticationError,
    "KEY_EXPIRED": AuthenticationError,
    "FORBIDDEN": ForbiddenError,
    "NOT_FOUND": NotFoundError,
    "VALIDATION_ERROR": ValidationError,
    "METHOD_NOT_ALLOWED": ValidationError,
    "PAYLOAD_TOO_LARGE": ValidationError,
    "UNSUPPORTED_MEDIA_TYPE": ValidationError,
    "CONFLICT": ConflictError,
    "IDEMPOTENCY_CONFLICT": ConflictError,
    "INVALID_STATUS_TRANSITION": ConflictError,
    "RATE_LIMIT_EXCEEDED": RateLimitError,
    "INTERNAL_ERROR": ServerError,
    "BAD_GATEWAY": ServerError,
    "SERVICE_UNAVAILABLE": ServerError,
    "GATEWAY_TIMEOUT": ServerError,
}


def code_for_status(status: int) -> str:
    """The code of a response without the envelope (a proxy's page, an empty body)."""
    if status == 401:
        return "UNAUTHORIZED"
    if status == 403:
        return "FORBIDDEN"
    if status == 404:
        return "NOT_FOUND"
    if status == 409:
        return "CONFLICT"
    if status == 429:
        return "RATE_LIMIT_EXCEEDED"
    if status == 502:
        return "BAD_GATEWAY"
    if status == 503:
        return "SERVICE_UNAVAILABLE"
    if status == 504:
        return "GATEWAY_TIMEOUT"
    if status >= 500:
        return "INTERNAL_ERROR"
    return "VALIDATION_ERROR"
