"""The API key as Cloud Vision's clients send it: the ``x-goog-api-key`` header (the Python
client's ``client_options={"api_key": ...}``) or the ``key`` query parameter (REST calls).
The same hashed keys as ``Authorization: Api-Key`` (:mod:`ocr_api.authentication`)."""

from __future__ import annotations

from ocr_api.authentication import ApiKeyAuthentication

HEADER = "X-Goog-Api-Key"


class GoogleApiKeyAuthentication(ApiKeyAuthentication):
    """:class:`~ocr_api.authentication.ApiKeyAuthentication` reading ``x-goog-api-key`` or
    ``?key=`` (the header first).

    Raises:
        AuthenticationFailed: a key that is unknown, revoked or expired (401).
    """

    def authenticate(self, request):
        key = request.headers.get(HEADER) or request.query_params.get("key")
        return self.check_key(key) if key else None

    def authenticate_header(self, request):
        return HEADER
