"""The answer's output formats besides JSON, each made from an
:class:`~ocr_api.answer.Answer`: plain text (:mod:`.text`), hOCR (:mod:`.hocr`) and a
searchable PDF (:mod:`.searchable_pdf`, its invisible text layer :mod:`.text_layer` set in
:mod:`.glyphless_font`); DRF's renderers and the ``?format=`` negotiation that pick one
(:mod:`.renderers`)."""
