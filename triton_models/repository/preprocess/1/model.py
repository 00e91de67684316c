"""preprocess: encoded image bytes -> the normalised CRAFT input (ocr_pipeline.imaging), a
turned page turned upright first (ocr_pipeline.page_turn)."""

import numpy as np
import triton_python_backend_utils as pb_utils
from ocr_contract.errors import (DOCUMENT_TOO_COMPLEX, DOCUMENT_UNDECODABLE, IMAGE_TOO_LARGE,
                                 IMAGE_UNDECODABLE, INVALID_PARAMETER)
from ocr_contract.languages import OSD_TRAINEDDATA, debian_package, tessdata_dir
from ocr_contract.limits import MAX_PIXELS
from ocr_contract.parameters import (LONG_SIDE, ORIENTATION, ORIENTATION_AUTO, RECOGNIZE,
                                     ParameterError)
from ocr_contract.tensors import COMPUTED_FOR, PAGE

from ocr_pipeline import imaging, page_turn, params
from ocr_pipeline.triton_python import (cancelled, computed_for, is_cancelled, model_parameters,
                                        optional_input, refusal)


class TritonPythonModel:
    """``IMAGE_BYTES [1]`` (+ optional ``LONG_SIDE``, ``RECOGNIZE``, ``PAGE``,
    ``ORIENTATION``) -> ``image [1,H,W,3]`` uint8, ``RESIZE_RATIO [1]``, ``IMAGE_SIZE [2]``,
    ``DETECTION_SIZE [2]``, ``PAGE_TURN [1]``, ``ORIGINAL_IMAGE [H,W,3]`` (empty when not
    recognizing), ``CANVAS [1]`` (the canvas used, for recognize's second detection of a
    turned page), ``COMPUTED_FOR [1]`` int64 (the request's deadline parameter). Bad bytes
    fail only their request (INVALID_ARG)."""

    def initialize(self, args):
        # Limits are the gateway's settings of the same names (ocr_contract.limits).
        self.max_pixels = MAX_PIXELS.read()
        canvas = imaging.read_canvas(model_parameters(args))
        self.square_canvas = canvas == imaging.SQUARE_CANVAS
        self.canvas = np.array([canvas.encode()], dtype=object)
        pb_utils.Logger.log_info(f"preprocess: canvas {canvas}, max_pixels {self.max_pixels}, "
                                 f"long_side in {LONG_SIDE.bounds()}")
        self.page_turn = _page_turn()

    def finalize(self):
        if self.page_turn is not None:
            self.page_turn.close()

    def execute(self, requests):
        return [cancelled() if is_cancelled(request) else self._one(request)
                for request in requests]

    def _one(self, request):
        data = optional_input(request, "IMAGE_BYTES").reshape(-1)[0]
        page = optional_input(request, PAGE.name)
        try:
            # No LONG_SIDE: the default working size (imaging.resized_size), not just 1280.
            sent_side = optional_input(request, LONG_SIDE.tensor)
            side = None if sent_side is None else params.read(LONG_SIDE, sent_side)
            recognize = params.read(RECOGNIZE, optional_input(request, RECOGNIZE.tensor))
            auto = params.read(ORIENTATION, optional_input(request, ORIENTATION.tensor)) \
                == ORIENTATION_AUTO
            number = 0 if page is None else int(page.reshape(-1)[0])
            if recognize:
                # Decoded in full (recognize crops the lines from it), resized below, once
                # turned upright where it lies sideways.
                pixels = np.asarray(imaging.decode_page(bytes(data), number, self.max_pixels))
            else:
                prepared = imaging.prepare_image(bytes(data), side, max_pixels=self.max_pixels,
                                                 square_canvas=self.square_canvas,
                                                 keep_original=False, page=number)
        except ParameterError as exc:
            return refusal(INVALID_PARAMETER, str(exc), exc.field)
        except imaging.ImageTooLargeError as exc:
            return refusal(IMAGE_TOO_LARGE, str(exc))
        except imaging.ImageDecodeError as exc:
            return refusal(IMAGE_UNDECODABLE, str(exc))
        except imaging.DocumentTooComplexError as exc:
            return refusal(DOCUMENT_TOO_COMPLEX, str(exc))
        except imaging.DocumentDecodeError as exc:
            return refusal(DOCUMENT_UNDECODABLE, str(exc))
        turn = 0
        if recognize:
            size = np.array([pixels.shape[1], pixels.shape[0]], np.int32)
            # Only when text is read: the orientation vote that checks the turn needs the text.
            if auto and self.page_turn is not None:
                turn = self._turn(pixels)
            if turn:
                pixels = np.ascontiguousarray(np.rot90(pixels, k=turn // 90))
            prepared = imaging.prepare_pixels(pixels, side, self.square_canvas)
        else:
            size = np.array([prepared.width, prepared.height], np.int32)
        return pb_utils.InferenceResponse(output_tensors=[
            pb_utils.Tensor("image", prepared.tensor),
            pb_utils.Tensor("RESIZE_RATIO", np.array([prepared.ratio], dtype=np.float32)),
            pb_utils.Tensor("IMAGE_SIZE", size),
            pb_utils.Tensor("DETECTION_SIZE", np.array([prepared.width, prepared.height],
                                                       np.int32)),
            pb_utils.Tensor("PAGE_TURN", np.array([turn], np.int32)),
            # Only the recognize step reads it: not made when nothing will be read.
            pb_utils.Tensor("ORIGINAL_IMAGE", prepared.original if recognize
                            else np.zeros((0, 0, 3), np.uint8)),
            pb_utils.Tensor("CANVAS", self.canvas),
            pb_utils.Tensor(COMPUTED_FOR.name, np.array([computed_for(request)], np.int64)),
        ])

    def _turn(self, pixels: np.ndarray) -> int:
        """:meth:`ocr_pipeline.page_turn.PageTurn.angle`, or 0 (logged) when it fails: the turn
        only saves recognize a detection, it must never cost a request."""
        try:
            return self.page_turn.angle(pixels)
        except Exception as exc:  # noqa: BLE001 - OpenCV's and Tesseract's errors alike
            pb_utils.Logger.log_warn(f"preprocess: page turn not found ({exc!r}); the page "
                                     "goes to detection as it lies")
            return 0


def _page_turn() -> page_turn.PageTurn | None:
    """Tesseract's OSD for turned pages, or None (logged) without its language data: turned
    pages are then found by recognize's vote alone, a detection later."""
    folder = tessdata_dir()
    data = None if folder is None else folder / f"{OSD_TRAINEDDATA}.traineddata"
    if data is None or not data.exists():
        pb_utils.Logger.log_warn(
            f"preprocess: no {OSD_TRAINEDDATA}.traineddata in {folder}: turned pages are "
            f"detected twice (install {debian_package(OSD_TRAINEDDATA)})")
        return None
    try:
        return page_turn.PageTurn(folder)
    except RuntimeError as exc:  # a damaged osd.traineddata: serve without the turn
        pb_utils.Logger.log_warn(f"preprocess: Tesseract cannot load {data} ({exc}): turned "
                                 "pages are detected twice")
        return None
