"""tesseract: text lines -> text, read by Tesseract (ocr_pipeline.tesseract)."""

import numpy as np
import triton_python_backend_utils as pb_utils
from ocr_contract.languages import TESSERACT_TRAINEDDATA, debian_package, tessdata_dir

from ocr_pipeline.tesseract import TesseractReader
from ocr_pipeline.triton_python import optional_input


class TritonPythonModel:
    """``LINES [N,64,W]``, ``WIDTHS [N]``, ``LANGUAGES [1]`` -> ``TEXTS [N]``,
    ``TEXT_SCORES [N]``, and Tesseract's word and symbol boxes (config.pbtxt)."""

    def initialize(self, args):
        folder = tessdata_dir()
        missing = [name for name in TESSERACT_TRAINEDDATA
                   if folder is None or not (folder / f"{name}.traineddata").exists()]
        if missing:  # fail the load, with the fix, rather than every Korean request
            raise RuntimeError(
                f"Tesseract language data missing in {folder}: {', '.join(missing)}; install "
                f"{' '.join(debian_package(name) for name in missing)} or set TESSDATA_PREFIX")
        self.reader = TesseractReader(folder)
        pb_utils.Logger.log_info(f"tesseract: language data in {folder}")

    def execute(self, requests):
        responses = []
        for request in requests:
            lines = optional_input(request, "LINES")
            widths = optional_input(request, "WIDTHS")
            languages = bytes(optional_input(request, "LANGUAGES").reshape(-1)[0]).decode()
            readings = self.reader.read(
                [line[:, :width] for line, width in zip(lines, widths)], languages)
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("TEXTS", np.array([r.text.encode() for r in readings],
                                                  dtype=object)),
                pb_utils.Tensor("TEXT_SCORES", np.array([r.score for r in readings],
                                                        dtype=np.float32)),
                *_spans("WORD", "LINE_OF_WORD",
                        [(line, word) for line, r in enumerate(readings) for word in r.words]),
                *_spans("SYMBOL", "WORD_OF_SYMBOL",
                        [(word, symbol) for word, symbols in enumerate(
                            s for r in readings for s in r.characters) for symbol in symbols])]))
        return responses

    def finalize(self):
        self.reader.close()


def _spans(prefix: str, owner_name: str, spans: list) -> list:
    """``<prefix>_BOXES FP32 [M,4]`` (left, top, right, bottom, line-image pixels),
    ``<prefix>_TEXTS BYTES [M]``, ``<prefix>_SCORES FP32 [M]`` and ``owner_name INT32 [M]``
    (the index of the line or word each belongs to) for ``(owner, Span)`` pairs."""
    return [
        pb_utils.Tensor(f"{prefix}_BOXES", np.array(
            [[s.left, s.top, s.right, s.bottom] for _, s in spans], np.float32).reshape(-1, 4)),
        pb_utils.Tensor(f"{prefix}_TEXTS", np.array([s.text.encode() for _, s in spans],
                                                    dtype=object).reshape(-1)),
        pb_utils.Tensor(f"{prefix}_SCORES", np.array([s.score for _, s in spans], np.float32)),
        pb_utils.Tensor(owner_name, np.array([owner for owner, _ in spans], np.int32))]
