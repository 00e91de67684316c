"""Google Cloud Vision's REST routes over the gateway: ``POST /v1/images:annotate`` and
``POST /v1/files:annotate`` (``TEXT_DETECTION``, ``DOCUMENT_TEXT_DETECTION``), so that a Cloud
Vision client works unchanged with its endpoint pointed here. The images are read by the same
pipeline as ``/api/ocr``, with the same keys, limits and audit log; :mod:`.annotations` turns
the gateway's answer into Cloud Vision's, :mod:`.requests` reads Cloud Vision's requests."""
