"""Image and document formats the service accepts.

Names are Pillow's format names. The gateway sniffs an upload's format from its first bytes
with Pillow's (and pi-heif's) signature checks in this order; Triton's ``preprocess``
decodes with exactly these readers, so Pillow's other readers (EPS, PSD, ...) never see
untrusted bytes.
"""

#: Pillow format names, in the order their signatures are tried.
ACCEPTED_FORMATS = ("JPEG", "PNG", "WEBP", "BMP", "TIFF", "GIF", "HEIF")

#: Documents besides images: PDF, rendered page by page with PDFium (pypdfium2).
PDF = "PDF"
#: A PDF starts with this signature within its first :data:`PDF_SIGNATURE_WINDOW` bytes (the
#: PDF reference allows leading bytes; readers look for it in the first 1024).
PDF_SIGNATURE = b"%PDF-"
PDF_SIGNATURE_WINDOW = 1024
#: Formats whose files may hold several pages, each read as a page of the answer.
MULTI_PAGE_FORMATS = (PDF, "TIFF")


def is_pdf(data: bytes) -> bool:
    """The bytes carry the PDF signature where readers look for it."""
    return PDF_SIGNATURE in data[:PDF_SIGNATURE_WINDOW]

#: How the API reports a format where it differs from Pillow's name (pi-heif reads both
#: HEIC and HEIF as "HEIF"; phones call the files HEIC).
_REPORTED = {"HEIF": "HEIC"}
#: How people read the accepted list, where it differs from the reported name.
_LISTED = {"HEIF": "HEIC/HEIF"}


def reported_name(pillow_format: str) -> str:
    """The ``image.format`` the API answers for a Pillow format name (``HEIF`` -> ``HEIC``)."""
    return _REPORTED.get(pillow_format, pillow_format)


#: The accepted formats for messages and documentation: "JPEG, PNG, ..., HEIC/HEIF, PDF".
ACCEPTED_FORMATS_TEXT = ", ".join([*(_LISTED.get(name, name) for name in ACCEPTED_FORMATS), PDF])
