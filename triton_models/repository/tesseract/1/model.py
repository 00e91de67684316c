"""tesseract: text lines -> text, read by Tesseract (ocr_pipeline.tesseract)."""

import numpy as np
import triton_python_backend_utils as pb_utils
from ocr_contract.languages import TESSERACT_TRAINEDDATA, debian_package, tessdata_dir

from ocr_pipeline.tesseract import TesseractReader
from ocr_pipeline.triton_python import optional_input


class TritonPythonModel:
    """``LINES [N,64,W]``, ``WIDTHS [N]``, ``LANGUAGES [1]`` -> ``TEXTS [N]``,
    ``TEXT_SCORES [N]``."""

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
                                                        dtype=np.float32))]))
        return responses

    def finalize(self):
        self.reader.close()
