"""Operators' management commands: ``serve_embedded`` (the ``make serve`` stack),
``fetch_models`` (weights), ``triton_models`` (model control), ``evaluate_detection``
(detection quality through a served ensemble)."""
