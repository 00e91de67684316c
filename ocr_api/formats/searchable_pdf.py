"""The answer as a searchable PDF: each page as it was sent, with the words read on it as an
invisible text layer at their positions, so PDF viewers select and find them and ``pdftotext``
extracts them.

The text layer is :mod:`ocr_api.formats.text_layer`'s: one page of invisible words per page of
the answer. Each text page is laid over the page it belongs to with pikepdf
(``Page.add_overlay``): a PDF comes back with its own pages, content untouched (a page that
has text of its own, a born-digital one, gets no second copy of its words); an image becomes a
page holding the image unchanged (img2pdf embeds JPEG and PNG bytes as they
are), re-encoded only when it must be turned upright (EXIF orientation) or lose its alpha.
"""

from __future__ import annotations

import io

from ocr_contract.formats import PDF
from PIL import Image, ImageOps

from ..answer import Answer
from ..intake.documents import Document

#: Resolution an image page is laid out at when its file names none (its pixels are kept; only
#: the page's size in inches depends on it).
DEFAULT_IMAGE_DPI = 96.0


def render(answer: Answer) -> bytes:
    """The searchable PDF of what ``answer`` answers (its document), with the answer's pages
    as the text layer: a PDF's own pages at the size they have (each page's words placed at
    the resolution it was read at, :attr:`Answer.dpis <ocr_api.answer.Answer.dpis>`), or an
    image's frames as pages at the image's own dpi (:data:`DEFAULT_IMAGE_DPI` when it names
    none).

    Returns:
        the PDF's bytes.

    Raises:
        ValueError: the answer and the document do not have the same pages.
    """
    import pikepdf

    from . import text_layer

    document, pages = answer.document, answer.pages
    if len(pages) != document.page_count:
        raise ValueError(f"{len(pages)} pages answered for {document.page_count} sent")
    if document.format == PDF:
        base = pikepdf.open(io.BytesIO(document.data))
        dpis = answer.dpis
        searchable = _pages_with_text(document.data)
    else:
        dpi = answer.dpis[0] or DEFAULT_IMAGE_DPI
        base = pikepdf.open(io.BytesIO(_image_pdf(document, dpi)))
        dpis = [dpi] * len(pages)
        searchable = [False] * len(pages)
    with base, text_layer.text_pdf(list(pages), dpis) as text:
        for page, layer, has_text in zip(base.pages, text.pages, searchable):
            if not has_text:      # a page with text of its own is searchable already
                page.add_overlay(layer)
        out = io.BytesIO()
        base.save(out)
    return out.getvalue()


def _pages_with_text(data: bytes) -> list[bool]:
    """Per page of a PDF, whether it has text of its own (a born-digital page)."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(data)
    try:
        found = []
        for index in range(len(document)):
            page = document[index]
            textpage = page.get_textpage()
            found.append(textpage.count_chars() > 0)
            textpage.close()
            page.close()
        return found
    finally:
        document.close()


def _image_pdf(document: Document, dpi: float) -> bytes:
    """A PDF of the image's pages at ``dpi``, upright as the answer's coordinates are."""
    import img2pdf

    layout = img2pdf.get_fixed_dpi_layout_fun((dpi, dpi))
    with Image.open(io.BytesIO(document.data)) as image:
        plain = (image.format in ("JPEG", "PNG", "TIFF") and "A" not in image.getbands()
                 and image.mode != "P" and image.getexif().get(0x0112, 1) == 1)
    if plain:
        try:
            return img2pdf.convert(document.data, layout_fun=layout,
                                   rotation=img2pdf.Rotation.ifvalid)
        except (img2pdf.ImageOpenError, img2pdf.AlphaChannelError, ValueError):
            pass
    return img2pdf.convert([_upright_png(document.data, frame)
                            for frame in range(document.page_count)], layout_fun=layout)


def _upright_png(data: bytes, frame: int) -> bytes:
    """One frame as an upright RGB PNG (EXIF transposed, alpha over white)."""
    with Image.open(io.BytesIO(data)) as image:
        image.seek(frame)
        upright = ImageOps.exif_transpose(image)
        if "A" in upright.getbands() or upright.mode == "P":
            rgba = upright.convert("RGBA")
            upright = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
            upright.alpha_composite(rgba)
        out = io.BytesIO()
        upright.convert("RGB").save(out, "PNG")
        return out.getvalue()
