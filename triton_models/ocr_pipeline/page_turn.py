"""A page turned 90 or 270 degrees, found before detection: the preprocess step turns it
upright so that CRAFT runs once, on the upright page.

Without it, ``recognize`` finds a turned page only from CRAFT's boxes (the orientation vote,
:mod:`ocr_pipeline.orientation`) and must then detect again on the page turned upright: CRAFT is
not rotation-invariant (on linn.pdf's page turned 90 it finds fragments of lines: under 60 % of
its boxes are the upright page's). That first detection was a third of a turned dense page's
time.

Two cheap questions, the second asked only when the first says yes:

1. **Do the text lines run vertically?** (:func:`lines_run_vertically`) The nearest neighbours
   of a page's characters lie along its lines, since letters sit closer than lines: the
   document spectrum ("docstrum", L. O'Gorman, "The document spectrum for page layout
   analysis", IEEE PAMI 15(11), 1993). Connected components of the binarised page at a fixed
   working size, and the direction to each one's :data:`NEIGHBOURS` nearest: about 15 ms on a
   dense 200-dpi page.
2. **Which way?** (:func:`turn_from_osd`) Tesseract's orientation and script detection (OSD,
   ``osd.traineddata``) on the page: about 0.4 s on a dense page, so only for pages that
   answered yes.

Neither decides the reading alone: ``recognize`` still votes on the boxes found on the page
as turned here, and detects again when that vote says the page is not upright (a page taken
for 90 that was 270 reads upside down: voted 180, detected again as before). Where the vote
cannot vote (text the recognizer reads at about 0.5 either way, such as Hangul), a page turned
the wrong way would be read upside down: so OSD's angle is taken only at a confidence that
none of its wrong answers reached (:data:`MIN_OSD_CONFIDENCE`).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
from ocr_contract.languages import OSD_TRAINEDDATA
from scipy.spatial import cKDTree

#: The page's long side for the neighbour statistics, pixels (the default working size's
#: long side: characters of 10-point print at 200 dpi are then some 10-15 pixels).
STATISTICS_SIDE = 1280
#: Nearest neighbours taken per character (O'Gorman's docstrum takes 5; within a line 2 of
#: the 3 nearest are a character's own neighbours on either side).
NEIGHBOURS = 3
#: A component is a character candidate when its larger side is within these shares of the
#: median's (drops punctuation and noise below, rules and pictures above) ...
SIZE_SHARES = (0.5, 2.0)
#: ... and it covers at least this many pixels (at :data:`STATISTICS_SIDE`; a smaller image's
#: own pixels, it is not enlarged).
MIN_AREA = 8
#: Fewer candidates than this: too little print to say (photos of a sign); the page is left
#: as it is.
MIN_CHARACTERS = 50
#: The lines run vertically when at least this share of the neighbour directions within 30
#: degrees of an axis are within 30 degrees of the vertical. Chosen on tests/data/calibration
#: and tests/data/validation (23 images, each upright and turned 90 and 270; python -m
#: bench.page_turn prints the figures): upright they gave 0.00-0.58 (photos of scattered
#: signs near 0.5), turned 0.42-1.00. At 2/3 no upright image is asked about, and with
#: :data:`MIN_OSD_CONFIDENCE` 19 of the 46 turned ones are turned upright, none the wrong way,
#: and 27 left to the vote, as before. Held out (the tests' 15 images and 3 PDF pages): no
#: upright one turned; of the 36 turned, 10 upright, none the wrong way, 26 left.
VERTICAL_SHARE = 2 / 3
#: Tesseract's OSD confidence (``orient_conf``) below which its angle is not taken. Chosen on
#: the same images (bench.page_turn prints each): its wrong angles came at 0.21-0.28, its right
#: ones at 1.03-26.7 but one (0.47); a dense page's is some 25.
MIN_OSD_CONFIDENCE = 1.0
#: Tesseract's OSD reads at most this long a side, pixels: 200 dpi's US Letter page (OSD's
#: time grows with the page; it needs characters of some 20 pixels, not more).
OSD_SIDE = 2200


def vertical_share(pixels: np.ndarray) -> float | None:
    """The share of character-neighbour directions that run vertically (docstrum).

    Args:
        pixels: uint8 ``[H, W, 3]`` RGB (or ``[H, W]`` gray), the page as decoded.

    Returns:
        0..1: vertical pairs over the pairs within 30 degrees of either axis; None when the
        page has fewer than :data:`MIN_CHARACTERS` character candidates.
    """
    gray = cv2.cvtColor(pixels, cv2.COLOR_RGB2GRAY) if pixels.ndim == 3 else pixels
    scale = STATISTICS_SIDE / max(gray.shape)
    if scale < 1:
        gray = cv2.resize(gray, (max(1, round(gray.shape[1] * scale)),
                                 max(1, round(gray.shape[0] * scale))),
                          interpolation=cv2.INTER_AREA)
    _, ink = cv2.threshold(gray, 0, 255, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    if ink.mean() > 127:  # light print on a dark ground: the print is the minority
        ink = 255 - ink
    _, _, stats, centres = cv2.connectedComponentsWithStats(ink, connectivity=8)
    size = np.maximum(stats[1:, cv2.CC_STAT_WIDTH], stats[1:, cv2.CC_STAT_HEIGHT])
    candidates = stats[1:, cv2.CC_STAT_AREA] >= MIN_AREA
    if candidates.sum() < MIN_CHARACTERS:
        return None
    median = np.median(size[candidates])
    candidates &= (size >= SIZE_SHARES[0] * median) & (size <= SIZE_SHARES[1] * median)
    points = centres[1:][candidates]
    if len(points) < MIN_CHARACTERS:
        return None
    _, nearest = cKDTree(points).query(points, k=NEIGHBOURS + 1)
    steps = np.abs(points[nearest[:, 1:]] - points[:, None, :])
    degrees = np.degrees(np.arctan2(steps[..., 1], steps[..., 0]))
    across, along = int((degrees > 60).sum()), int((degrees < 30).sum())
    return across / max(across + along, 1)


def lines_run_vertically(pixels: np.ndarray) -> bool:
    """True when the page's text lines run top to bottom (:data:`VERTICAL_SHARE`): a page
    turned 90 or 270 degrees (or a page of vertical writing)."""
    share = vertical_share(pixels)
    return share is not None and share >= VERTICAL_SHARE


class PageTurn:
    """The turn of a page whose lines run vertically, by Tesseract's OSD.

    Args:
        tessdata: the folder with :data:`ocr_contract.languages.OSD_TRAINEDDATA`
            (:func:`ocr_contract.languages.tessdata_dir`).

    Raises:
        ImportError: tesserocr is not installed.
        RuntimeError: Tesseract cannot load the OSD data.
    """

    def __init__(self, tessdata: Path):
        import tesserocr

        self._engine = tesserocr.PyTessBaseAPI(path=str(tessdata) + "/", lang=OSD_TRAINEDDATA,
                                               psm=tesserocr.PSM.OSD_ONLY)

    def angle(self, pixels: np.ndarray) -> int:
        """The page's turn, clockwise degrees (:mod:`ocr_pipeline.orientation`'s sense: the
        upright page is ``np.rot90(pixels, k=angle // 90)``): 90 or 270 when the lines run
        vertically and Tesseract's OSD says which way with :data:`MIN_OSD_CONFIDENCE`, else 0.

        Args:
            pixels: uint8 ``[H, W, 3]`` RGB, the page as decoded.
        """
        if not lines_run_vertically(pixels):
            return 0
        turn, confidence = self.osd(pixels)
        return turn if turn in (90, 270) and confidence >= MIN_OSD_CONFIDENCE else 0

    def osd(self, pixels: np.ndarray) -> tuple[int, float]:
        """Tesseract OSD's angle for the page (0, 90, 180 or 270; OSD's ``orient_deg``, the
        clockwise turn of the page, as here) and its confidence (``orient_conf``, Tesseract's
        own units, 0 and up); ``(0, 0.0)`` when it finds too little print."""
        from PIL import Image

        scale = OSD_SIDE / max(pixels.shape[:2])
        if scale < 1:
            pixels = cv2.resize(pixels, (max(1, round(pixels.shape[1] * scale)),
                                         max(1, round(pixels.shape[0] * scale))),
                                interpolation=cv2.INTER_AREA)
        self._engine.SetImage(Image.fromarray(pixels))
        found = self._engine.DetectOrientationScript()
        return (int(found["orient_deg"]), float(found["orient_conf"])) if found else (0, 0.0)

    def close(self) -> None:
        """Frees Tesseract's engine."""
        self._engine.End()
