"""WSGI entry point (gunicorn ``gateway.wsgi``): Django, wrapped so that a body the gateway
refused unread is read and dropped before the answer goes out
(:mod:`gateway.unread_body`)."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")
django_application = get_wsgi_application()

from django.conf import settings  # configured by get_wsgi_application() above

from gateway.unread_body import UnreadBodyDrain

application = UnreadBodyDrain(django_application, settings.OCR_UNREAD_BODY_MAX_BYTES)
