"""API views, one module per route group (docTR ``api/routes`` style)."""
