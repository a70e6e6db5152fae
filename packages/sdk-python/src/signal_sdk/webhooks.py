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

MAX_ID_LENGTH = 256
"""Longest ``webhook-id`` taken (the service's are 30 characters)."""
MAX_SIGNATURE_HEADER_LENGTH = 4096
"""Longest ``webhook-signature`` taken: room for dozens of signatures (the service sends one per live secret)."""
MAX_TIMESTAMP_DIGITS = 12
"""A ``webhook-timestamp`` has at most this many digits (seconds since 1970 have 10 until 2286)."""


def _header(headers: Headers, name: str) -> Optional[str]:
    found: List[str] = []
    try:
        for key, value in headers.items():
            if str(key).lower() != name:
                continue
            if isinstance(value, (list, tuple)):
                found.extend(str(v) for v in value)
            else:
                found.append(str(value))
    except (AttributeError, TypeError, ValueError) as err:
        raise WebhookVerificationError("headers are not a mapping of names to values") from err
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


def _raw_body(body: object) -> Union[bytes, str]:
    """The body as given, when it is the raw one. Anything else is a mistake of the caller's code,
    not of the request (``request.get_json()`` passed on, or no body read): a TypeError that says
    what to pass, never the WebhookVerificationError a forged request gets."""
    if isinstance(body, (str, bytes)):
        return body
    if isinstance(body, (bytearray, memoryview)):
        return bytes(body)
    if body is None:
        raise TypeError(
            "body is missing: pass the raw request body (string or bytes) exactly as received "
            "(Flask: request.get_data(); http.server: self.rfile.read(length))"
        )
    raise TypeError(
        "body must be the raw request body (string or bytes) exactly as received, not parsed JSON "
        "(Flask: request.get_data(), not request.get_json())"
    )


def _secrets_of(secret: Union[str, Sequence[str], None]) -> List[str]:
    """The secrets to verify with. An empty or missing one is a configuration mistake (an unset
    environment variable, most often): a TypeError that says so, not a verification failure that
    would look like a forged request."""
    given: Sequence[object]
    if secret is None or isinstance(secret, (str, bytes)):
        given = (secret,)
    else:
        try:
            given = tuple(secret)
        except TypeError:
            given = (secret,)
    if not given or any(s is None or s == "" for s in given):
        raise TypeError("secret is missing: pass the subscription's whsec_ signing secret (is SIGNAL_WEBHOOK_SECRET set?)")
    found = [s for s in given if isinstance(s, str)]
    if len(found) != len(given):
        raise TypeError("secret must be the subscription's whsec_ signing secret as a str, or a list of them during a rotation")
    return found


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
    later. Raises WebhookVerificationError for a request that does not verify, and TypeError for
    a call that cannot verify anything: a body that is not the raw one (parsed JSON, None) or a
    missing secret.
    """
    body = _raw_body(body)
    secrets_list = _secrets_of(secret)
    msg_id = _header(headers, "webhook-id")
    timestamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not msg_id or not timestamp or not signatures:
        raise WebhookVerificationError("missing webhook headers")
    if len(msg_id) > MAX_ID_LENGTH:
        raise WebhookVerificationError("webhook-id too long")
    if len(signatures) > MAX_SIGNATURE_HEADER_LENGTH:
        raise WebhookVerificationError("webhook-signature too long")
    # Bounded before int(): Python refuses to convert more than 4,300 digits (ValueError).
    if not re.fullmatch(r"[0-9]{1,%d}" % MAX_TIMESTAMP_DIGITS, timestamp):
        raise WebhookVerificationError("invalid webhook-timestamp")
    current = int(time.time() if now is None else now)
    if abs(current - int(timestamp)) > tolerance_seconds:
        raise WebhookVerificationError("webhook-timestamp outside the tolerance")
    try:
        raw = body.encode("utf-8") if isinstance(body, str) else bytes(body)
        signed_prefix = f"{msg_id}.{timestamp}.".encode("utf-8")
    except (UnicodeEncodeError, TypeError, ValueError) as err:
        raise WebhookVerificationError("body or webhook-id is not encodable") from err
    given = list(_given_signatures(signatures))
    keys = [_key(s) for s in secrets_list]
    # One MAC per secret, however many signatures the header carries (each is then a compare).
    expected = [hmac.new(k, signed_prefix + raw, hashlib.sha256).digest() for k in keys]
    if not any(hmac.compare_digest(g, e) for e in expected for g in given):
        raise WebhookVerificationError("no matching signature")
    try:
        payload = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
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
    given = _raw_body(body)
    raw = given.encode("utf-8") if isinstance(given, str) else given
    msg_id = msg_id or f"msg_{_secrets.token_hex(12)}"
    ts = str(int(time.time()) if timestamp is None else timestamp)
    secrets_list = _secrets_of(secret)
    signature = " ".join(
        "v1," + base64.b64encode(_signature(_key(s), msg_id, ts, raw)).decode("ascii") for s in secrets_list
    )
    return {"webhook-id": msg_id, "webhook-timestamp": ts, "webhook-signature": signature}


def generate_secret() -> str:
    """A new secret in the service's form: ``whsec_`` + base64 of 24 random bytes."""
    return "whsec_" + base64.b64encode(_secrets.token_bytes(24)).decode("ascii")
