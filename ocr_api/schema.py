"""OpenAPI (drf-spectacular) description of the API-key authentication."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """``Authorization: Api-Key <key>`` as an OpenAPI ``apiKey`` security scheme."""

    target_class = "ocr_api.authentication.ApiKeyAuthentication"
    name = "ApiKeyAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "header", "name": "Authorization",
                "description": "`Api-Key <key>`; keys are created in Django admin or with "
                               "`manage.py create_api_key`."}
