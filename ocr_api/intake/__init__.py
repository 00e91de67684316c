"""What a request brings, read and opened before anything is inferred: the uploaded bytes and
the parameters (:mod:`.uploads`, with the body parsers of :mod:`.parsers`), an image's format
and size from its header (:mod:`.image_probe`), and an upload opened as a document of pages
(:mod:`.documents`). Nothing here decodes a pixel."""
