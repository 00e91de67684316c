"""WSGI entry point of the in-process baseline: ``gunicorn bench.inprocess.wsgi``.

Importing it loads the model (and warms it up) in the importing process. gunicorn imports
the application in every worker after forking (``preload_app`` is off in
``deploy/gunicorn.conf.py``), so each worker holds its own copy of the model.
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.inprocess.settings")
application = get_wsgi_application()

from . import views  # noqa: E402 - after Django is configured

views.load_model()
