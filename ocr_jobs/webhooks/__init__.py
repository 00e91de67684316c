"""The jobs' webhook sender, free of Django: sent once when a job ends, signed the Standard
Webhooks way, retried with backoff by the task queue, SSRF-safe.

One module per job:

- :mod:`.policy` — the operator's switches (``OCR_WEBHOOK_ALLOW_PRIVATE``,
  ``OCR_WEBHOOK_HTTP_HOSTS``, ``OCR_WEBHOOK_CA_FILE``).
- :mod:`.addresses` — which IP addresses may be called.
- :mod:`.callback_url` — URL checks at job creation and send time; one DNS resolution.
- :mod:`.signing` — secrets, message ids, the signed headers (``standardwebhooks``).
- :mod:`.delivery` — one attempt over a connection pinned to the checked address.
- :mod:`.backoff` — when to try again.
"""

from .backoff import MAX_ATTEMPTS, RETRY_DELAYS_S, delay_bounds_s, next_delay_s
from .callback_url import (CallbackUrl, CallbackUrlError, CallbackUrlRefused,
                           CallbackUrlUnresolvable, ResolvedCallbackUrl, resolve_callback_url,
                           validate_callback_url)
from .delivery import DEFAULT_ATTEMPT_TIMEOUT_S, DeliveryResult, Outcome, deliver
from .policy import WebhookPolicy
from .signing import new_message_id, new_secret, signed_headers

__all__ = [
    "MAX_ATTEMPTS", "RETRY_DELAYS_S", "delay_bounds_s", "next_delay_s",
    "CallbackUrl", "CallbackUrlError", "CallbackUrlRefused", "CallbackUrlUnresolvable",
    "ResolvedCallbackUrl", "resolve_callback_url", "validate_callback_url",
    "DEFAULT_ATTEMPT_TIMEOUT_S", "DeliveryResult", "Outcome", "deliver",
    "WebhookPolicy",
    "new_message_id", "new_secret", "signed_headers",
]
