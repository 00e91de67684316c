"""API-key authentication: ``Authorization: Api-Key <prefix>.<secret>``.

Keys are hashed at rest by djangorestframework-api-key (SHA-512 of a 32-character random
secret; the 8-character prefix finds the row). Authentication (not only a permission) is used
so that a missing key answers 401 with ``WWW-Authenticate: Api-Key`` and an unknown, revoked
or expired key answers 401 ``authentication_failed``.
"""

from rest_framework import authentication, exceptions, permissions
from rest_framework_api_key.permissions import KeyParser

from .models import ApiKey


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
        if not key:
            return None
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
    """Allows requests authenticated by :class:`ApiKeyAuthentication`."""

    def has_permission(self, request, view):
        return isinstance(request.auth, ApiKey)
