"""Operators' management commands: ``serve_embedded`` (the ``make serve`` stack),
``fetch_models`` (weights), ``quantize_models`` (INT8 networks), ``triton_models`` (model
control), ``evaluate_detection`` and ``evaluate_recognition`` (quality through a served
ensemble)."""
