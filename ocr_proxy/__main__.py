"""``python -m ocr_proxy --listen 8080 --upstream gateway:8000 [--output FILE]``: write the
proxy's nginx configuration for this environment's settings (:func:`ocr_proxy.config.main`)."""

import sys

from ocr_proxy.config import main

sys.exit(main())
