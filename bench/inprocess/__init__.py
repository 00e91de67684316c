"""The "just serve it from Django" baseline: the model inside each gunicorn worker.

Benchmark-only (never part of the gateway): a minimal Django project whose one view decodes
the upload, runs CRAFT and the LinkRefiner in the worker process with the same engine the
Triton cpu flavour uses, and extracts the boxes - everything ``ensemble_ocr`` does, without
Triton. Served by gunicorn with the gateway's ``deploy/gunicorn.conf.py``.
"""
