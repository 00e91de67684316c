"""App configurations of the gateway project itself."""

from django.contrib.staticfiles.apps import StaticFilesConfig


class GatewayStaticFilesConfig(StaticFilesConfig):
    """``django.contrib.staticfiles`` whose ``collectstatic`` leaves out source maps (``*.map``).

    The API docs' bundles (Swagger UI, Redoc: drf-spectacular-sidecar) ship 6.4 MB of them, and
    WhiteNoise would keep a gzip and a Brotli copy of each beside it (9 MB of the gateway image
    in all). Only a developer's browser tools ask for them; without them the docs work the
    same. The way Django documents to change the ignored patterns (the staticfiles app's
    ``ignore_patterns``).
    """

    ignore_patterns = [*StaticFilesConfig.ignore_patterns, "*.map"]
