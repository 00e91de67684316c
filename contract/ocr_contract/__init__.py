"""The contract between the OCR gateway and its Triton model repository.

Every fact both sides need is written once, here, and imported by both: the Django gateway
(validation, OpenAPI schema, the Triton client) and the Python-backend models of
``triton_models/repository`` (preprocess, postprocess, recognize). Pure Python, no
dependencies, no Django, no numpy: it installs anywhere.

Modules:
    formats     -- the image formats accepted, in sniffing order, and how the API names them.
    limits      -- size and bound settings (environment variable, default, unit).
    parameters  -- every request parameter: API name, ensemble tensor, dtype, default, bounds.
    languages   -- recognition languages and which recognizer reads each.
    tensors     -- the ensemble's name and its input/output tensors.
    errors      -- every API error code with its HTTP status, and how models report one.
    settings    -- the typed environment readers, and the settings several places read
                   (Triton's deadline and cache, the engines' cache folder, the listen address).

Files that cannot import Python (``config.pbtxt``, ``deploy/.env.example``, the README
tables) are tested against this package.
"""
