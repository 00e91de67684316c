"""The admin's own pages, beside Django admin's model pages: Triton's model repository
(``/admin/triton/models/``) and API usage charts from the audit log (``/admin/usage/``).

Modules: ``sites`` (the admin site and its extra URLs), ``usage`` (numbers from the audit log),
``charts`` (those numbers as inline SVG).
"""
