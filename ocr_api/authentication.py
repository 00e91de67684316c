"""API-key authentication: ``Authorization: Api-Key <prefix>.<secret>``.

Keys are hashed at rest by djangorestframework-api-key (SHA-512 of a 32-character random
secret; the 8-character prefix finds the row). Authentication (not only a permission) is used
so that a missing key answers 401 with ``WWW-Authenticate: Api-Key`` and an unknown, revoked
or expired key answers 401 ``authentication_failed``.

``POST /api/ocr`` also accepts a logged-in staff user's session (the demo page at ``/``),
CSRF-checked; its audit rows have no key and per-key limits do not apply to it.
"""

import re

from rest_framework import authentication, exceptions, permissions
from rest_framework_api_key.permissions import KeyParser

from .models import ApiKey

#: How a request carries its key, as every "no key" answer says.
EXPECTED_FORM = f"Authorization: {KeyParser.keyword} <key>"
#: An Authorization scheme that may be repeated back: a word, never a key (keys have a dot).
_SCHEME = re.compile(r"[A-Za-z][A-Za-z-]{0,19}")


def missing_key_message(request) -> str:
    """Why a request has no API key that counts, and the form that works (the message of 401
    ``not_authenticated``). Never repeats the credential itself.

    Args:
        request: Django's or DRF's request.
    """
    meta = request.META
    scheme, _, rest = meta.get("HTTP_AUTHORIZATION", "").strip().partition(" ")
    ours = scheme.rstrip(":").lower() == KeyParser.keyword.lower()     # (case-insensitive)
    if meta.get("HTTP_X_API_KEY"):
        sent = "The X-Api-Key header is not read."
    elif not scheme:
        return f"No API key: send it as '{EXPECTED_FORM}'."
    elif ours and scheme.endswith(":"):
        sent = f"The Authorization value starts {scheme!r}: no colon after the scheme."
    elif ours:
        sent = f"The Authorization header has the {KeyParser.keyword} scheme but no key."
    elif not rest.strip():
        sent = "The Authorization header has no scheme (a bare key)."
    elif _SCHEME.fullmatch(scheme):
        sent = f"The Authorization header uses the {scheme!r} scheme."
    else:
        sent = "The Authorization header is not in the expected form."
    return f"{sent} Send the API key as '{EXPECTED_FORM}'."


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """Authenticates the request by its API key; ``request.auth`` becomes the :class:`ApiKey`.

    ``request.user`` is left anonymous: keys belong to client apps, not to Django users.

    Raises:
        AuthenticationFailed: the header names an API key that is unknown, revoked or expired.
    """

    keyword = KeyParser.keyword
    key_parser = KeyParser()

    def authenticate(self, request):
        key = self.key_parser.get(request)
        return self.check_key(key) if key else None

    def check_key(self, key: str):
        """``(None, api_key)`` for a valid key.

        Raises:
            AuthenticationFailed: unknown, revoked or expired.
        """
        try:
            api_key = ApiKey.objects.get_from_key(key)
        except ApiKey.DoesNotExist:
            raise exceptions.AuthenticationFailed("Unknown or revoked API key.")
        if api_key.has_expired:
            raise exceptions.AuthenticationFailed("The API key has expired.")
        return (None, api_key)

    def authenticate_header(self, request):
        return self.keyword


class HasApiKey(permissions.BasePermission):
    """Allows requests authenticated by :class:`ApiKeyAuthentication`, and requests of an active
    staff user authenticated by their session (DRF's ``SessionAuthentication``, CSRF-checked;
    listed after the key on ``POST /api/ocr`` so the 401 challenge stays ``Api-Key`` and a
    request that carries a key is judged by its key alone).

    ``request.user`` is only ever a user on views that list the session authentication; with
    ``UNAUTHENTICATED_USER = None`` it is ``None`` otherwise, so key-only views stay key-only.
    """

    def has_permission(self, request, view):
        if isinstance(request.auth, ApiKey):
            return True
        user = request.user
        return bool(user is not None and user.is_active and user.is_staff
                    and isinstance(request.successful_authenticator,
                                   authentication.SessionAuthentication))
