"""OpenAPI (drf-spectacular) description of Cloud Vision's key: ``x-goog-api-key``."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension

from .authentication import HEADER


class GoogleApiKeyScheme(OpenApiAuthenticationExtension):
    """The ``x-goog-api-key`` header (``?key=`` is read too) as an ``apiKey`` scheme."""

    target_class = "ocr_vision.authentication.GoogleApiKeyAuthentication"
    name = "GoogleApiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "header", "name": HEADER,
                "description": "An API key of this gateway, as Cloud Vision's clients send "
                               "theirs (also accepted as the `key` query parameter)."}
