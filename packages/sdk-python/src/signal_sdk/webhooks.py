"""Webhook signatures (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature)."""

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets as _secrets
import time
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union, cast

from .errors import WebhookVerificationError
from .types import WebhookPayload

Headers = Union[Mapping[str, str], Mapping[str, List[str]], Any]
"""A dict (any letter case), http.server's ``self.headers``, or any mapping with ``items()``."""

DEFAULT_TOLERANCE_SECONDS = 300


def _header(headers: Headers, name: str) -> Optional[str]:
    found: List[str] = []
    for key, value in headers.items():
        if str(key).lower() == name:
            found.extend(value if isinstance(value, (list, tuple)) else [str(value)])
    return " ".join(found) if found else None


def _key(secret: str) -> bytes:
    raw = secret[len("whsec_") :] if secret.startswith("whsec_") else secret
    try:
        return base64.b64decode(raw + "=" * (-len(raw) % 4), validate=True)
    except (binascii.Error, ValueError) as err:
        raise ValueError("the webhook secret is not `whsec_` + base64") from err


def _signature(key: bytes, msg_id: str, timestamp: str, body: bytes) -> bytes:
    return hmac.new(key, f"{msg_id}.{timestamp}.".encode("utf-8") + body, hashlib.sha256).digest()


def _given_signatures(header: str) -> Iterable[bytes]:
    for part in header.split():
        version, _, value = part.partition(",")
        if version != "v1" or not value:
            continue
        try:
            yield base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            continue


def verify_webhook(
    body: Union[bytes, str],
    headers: Headers,
    secret: Union[str, Sequence[str]],
    *,
    tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS,
    now: Optional[float] = None,
) -> WebhookPayload:
    """Checks a delivery's signature and freshness and returns its parsed payload.

    Pass the raw body exactly as received, not JSON decoded and encoded again. During a secret
    rotation pass ``[new_secret, old_secret]``: the service signs with every live secret (the
    header then carries several signatures) and any one of them verifies. A timestamp more than
    ``tolerance_seconds`` away from ``now`` is refused, so a captured request cannot be replayed
    later. Raises WebhookVerificationError.
    """
    msg_id = _header(headers, "webhook-id")
    timestamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not msg_id or not timestamp or not signatures:
        raise WebhookVerificationError("missing webhook headers")
    if not re.fullmatch(r"\d+", timestamp):
        raise WebhookVerificationError("invalid webhook-timestamp")
    current = int(time.time() if now is None else now)
    if abs(current - int(timestamp)) > tolerance_seconds:
        raise WebhookVerificationError("webhook-timestamp outside the tolerance")
    raw = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    given = list(_given_signatures(signatures))
    keys = [_key(s) for s in ([secret] if isinstance(secret, str) else secret)]
    if not any(
        hmac.compare_digest(g, _signature(k, msg_id, timestamp, raw)) for k in keys for g in given
    ):
        raise WebhookVerificationError("no matching signature")
    try:
        payload = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise WebhookVerificationError("body is not JSON") from err
    if (
        not isinstance(payload, dict)
        or not isinstance(payload.get("event"), str)
        or not isinstance(payload.get("timestamp"), str)
        or not isinstance(payload.get("data"), dict)
    ):
        raise WebhookVerificationError("body is not a webhook payload")
    return cast(WebhookPayload, payload)


def sign_webhook(
    body: Union[bytes, str],
    secret: Union[str, Sequence[str]],
    *,
    msg_id: Optional[str] = None,
    timestamp: Optional[int] = None,
) -> Dict[str, str]:
    """The headers the service sends with ``body``: for testing a webhook handler locally."""
    raw = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    msg_id = msg_id or f"msg_{_secrets.token_hex(12)}"
    ts = str(int(time.time()) if timestamp is None else timestamp)
    secrets_list = [secret] if isinstance(secret, str) else list(secret)
    signature = " ".join(
        "v1," + base64.b64encode(_signature(_key(s), msg_id, ts, raw)).decode("ascii") for s in secrets_list
    )
    return {"webhook-id": msg_id, "webhook-timestamp": ts, "webhook-signature": signature}


def generate_secret() -> str:
    """A new secret in the service's form: ``whsec_`` + base64 of 24 random bytes."""
    return "whsec_" + base64.b64encode(_secrets.token_bytes(24)).decode("ascii")
