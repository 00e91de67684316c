"""Asynchronous OCR jobs (long documents): the Django app, and its Django-free webhook sender
(:mod:`ocr_jobs.webhooks`)."""
