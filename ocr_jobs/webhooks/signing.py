"""Standard Webhooks signing: the secret, the message id, the body and its three headers.

Standard Webhooks 1.0.0, "Signature scheme" and "Webhook headers"
(https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md):
HMAC-SHA256 over ``{msg_id}.{timestamp}.{payload}``; the secret is 24-64 random bytes shown
as ``whsec_`` + base64; headers ``webhook-id`` (the same on every retry: the receiver's
idempotency key), ``webhook-timestamp`` (integer Unix seconds of *this attempt*: receivers
refuse ones more than 5 minutes off) and ``webhook-signature`` (``v1,<base64>``). The HMAC
itself is the ``standardwebhooks`` package's, the one receivers verify with.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import secrets
from datetime import datetime, UTC
from typing import Any

from standardwebhooks import Webhook

SECRET_PREFIX = "whsec_"
#: Bytes of randomness in a new secret (the spec asks 24 at least, 64 at most).
SECRET_BYTES = 32
_SECRET_MIN_BYTES, _SECRET_MAX_BYTES = 24, 64
#: A message id: not user-controlled and without ``.`` (the spec: the signed content is
#: ``.``-delimited).
_MESSAGE_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


def new_secret() -> str:
    """A new signing secret, ``whsec_`` + base64 of :data:`SECRET_BYTES` random bytes. Store it
    as a secret (it signs; it is not a password hash) and show it to the key's owner once."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def new_message_id() -> str:
    """A new ``webhook-id``: ``msg_`` + 22 URL-safe random characters. Make it once per event
    (job end) and store it with the job, so every retry sends the same one."""
    return "msg_" + secrets.token_urlsafe(16)


def check_secret(secret: str) -> None:
    """Raise :class:`ValueError` unless ``secret`` is ``whsec_`` + base64 of 24-64 bytes."""
    if not isinstance(secret, str) or not secret.startswith(SECRET_PREFIX):
        raise ValueError("webhook secret must start with 'whsec_'")
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX):], validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("webhook secret is not valid base64") from None
    if not _SECRET_MIN_BYTES <= len(key) <= _SECRET_MAX_BYTES:
        raise ValueError(f"webhook secret must hold {_SECRET_MIN_BYTES}-{_SECRET_MAX_BYTES} "
                         "bytes")


def check_message_id(message_id: str) -> None:
    """Raise :class:`ValueError` unless ``message_id`` is 1-128 of ``[A-Za-z0-9_-]``."""
    if not isinstance(message_id, str) or not _MESSAGE_ID.match(message_id):
        raise ValueError("webhook message id must be 1-128 characters of [A-Za-z0-9_-]")


def encode_payload(payload: dict[str, Any]) -> str:
    """The body text: minified JSON (what is signed is byte for byte what is sent).

    Raises:
        TypeError, ValueError: ``payload`` is not JSON-serialisable (NaN included).
    """
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def signed_headers(secret: str, message_id: str, timestamp: int, body: str) -> dict[str, str]:
    """The three Standard Webhooks headers for ``body`` sent at ``timestamp``.

    Args:
        secret: ``whsec_…`` (:func:`new_secret`).
        message_id: the event's ``webhook-id`` (:func:`new_message_id`).
        timestamp: this attempt's time, integer Unix seconds.
        body: the exact body text (:func:`encode_payload`).

    Raises:
        ValueError: a malformed secret or message id.
    """
    check_secret(secret)
    check_message_id(message_id)
    when = datetime.fromtimestamp(int(timestamp), tz=UTC)
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(timestamp)),
        "webhook-signature": Webhook(secret).sign(message_id, when, body),
    }
