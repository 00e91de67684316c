"""The detection chains, written once: ``craft`` -> ``refinenet`` -> ``postprocess`` (CRAFT),
``db`` -> ``db_postprocess`` (PP-OCR's DB), and the names of the tensors between them.

Every caller runs the chain through :func:`detect` (or its two halves, :func:`score_maps` and
:func:`postprocess`) and brings its own way of running one model (:data:`RunModel`):

- ``recognize`` (a turned page detected again on its upright pixels): Triton's models
  through BLS;
- the benchmark's ``split`` mode: Triton's models over gRPC, boxes in the client;
- the benchmark's in-process baseline and the precision validation: engines in the process.

``ensemble_ocr`` and ``ensemble_ocr_db`` run the same steps from their config.pbtxt (a
config cannot call Python); ``tests/repository`` checks that their steps feed each other as
:func:`detect` does, with the names here. Both box steps answer which detector found the
boxes (:data:`DETECTOR`), so that ``recognize`` detects again with the same chain.

The step tensor names are the repository's own (the ONNX graphs' names for the networks, so
the gpu flavour's onnxruntime backend serves the same configs); the gateway never sees them,
so they live here and not in ``ocr_contract``. The model names are in
:mod:`ocr_contract.tensors`: the admin's unload warnings need them
(:data:`ocr_contract.tensors.BLS_CALLS`).
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np
from ocr_contract.tensors import (CRAFT_DETECTOR, CRAFT_MODEL, DB_DETECTOR, DB_MODEL,
                                  DB_POSTPROCESS_MODEL, POSTPROCESS_MODEL, REFINENET_MODEL)

from . import boxes, db
from .imaging import PreparedImage

# craft (craft/config.pbtxt), batched: dimension 0 is the batch (1 from every caller here).
#: Input: uint8 ``[B, H, W, 3]`` RGB, zero-padded, H and W multiples of 32
#: (:attr:`ocr_pipeline.imaging.PreparedImage.tensor`).
IMAGE = "image"
#: Output, and refinenet's input of the same name: float32 ``[B, 2, H/2, W/2]``, channel 0 the
#: region score, channel 1 the affinity score.
MAPS = "y"
#: Output, and refinenet's input of the same name: float32 ``[B, 32, H/2, W/2]`` U-Net features.
FEATURES = "feature"

# refinenet (refinenet/config.pbtxt): MAPS and FEATURES in.
#: Output: float32 ``[B, 1, H/2, W/2]``, the refined link score.
LINK = "y_refined"

# postprocess (postprocess/config.pbtxt), not batched; besides these, the optional parameter
# inputs TEXT_THRESHOLD, LINK_THRESHOLD, LOW_TEXT and REFINE (ocr_contract.parameters).
#: Input: craft's MAPS, float32 ``[1, 2, h, w]``.
POST_MAPS = "SCORE_MAPS"
#: Input: refinenet's LINK, float32 ``[1, 1, h, w]`` (read only when REFINE is true).
POST_LINK = "REFINED_LINK"
#: Input: float32 ``[1]``, the resize factor (resized = original * ratio).
POST_RATIO = "RESIZE_RATIO"
#: Input: int32 ``[2]``, the upright original's (width, height).
POST_SIZE = "IMAGE_SIZE"
#: Output: float32 ``[N, 4, 2]`` boxes, original-image pixels, corners clockwise from the
#: top-left-most.
POST_BOXES = "BOXES"
#: Output: float32 ``[N]``, each box's peak region score.
POST_SCORES = "SCORES"
#: Output of both box steps (postprocess and db_postprocess), recognize's input: BYTES ``[1]``,
#: the detector that found the boxes (:data:`ocr_contract.tensors.DETECTOR_ENSEMBLES`' names).
DETECTOR = "DETECTOR"

# db_postprocess (db_postprocess/config.pbtxt), not batched: DB_PROBABILITY as db's, POST_RATIO
# and POST_SIZE in; POST_BOXES, POST_SCORES (each box's mean probability) and DETECTOR out.

# db (db/config.pbtxt), batched: IMAGE in, as craft's.
#: Output: float32 ``[B, 1, H, W]``, each pixel's probability of being text (DB's shrunk text
#: regions, at the input's resolution).
DB_PROBABILITY = "probability"

#: Runs one model: ``(model name, {input name: array}, output names) -> {output name: array}``
#: (BLS inside Triton, gRPC from a client, an engine in the process).
RunModel = Callable[[str, dict[str, np.ndarray], tuple[str, ...]], Mapping[str, np.ndarray]]


def score_maps(run: RunModel, image: np.ndarray, refine: bool = True
               ) -> tuple[np.ndarray, np.ndarray]:
    """The networks of the chain: ``craft`` on ``image``, then ``refinenet`` on its maps when
    ``refine`` (without it, nothing is asked of refinenet: postprocess links with the affinity
    score then).

    Args:
        run: how to run one model (:data:`RunModel`).
        image: uint8 ``[1, H, W, 3]``, H and W multiples of 32.
        refine: run the link refiner.

    Returns:
        float32 ``[1, 2, H/2, W/2]`` region and affinity scores; float32 ``[1, 1, H/2, W/2]``
        refined link score (zeros when not ``refine``).
    """
    craft = run(CRAFT_MODEL, {IMAGE: image}, (MAPS, FEATURES))
    maps = craft[MAPS]
    if not refine:
        return maps, np.zeros((1, 1) + maps.shape[2:], np.float32)
    link = run(REFINENET_MODEL, {MAPS: maps, FEATURES: craft[FEATURES]}, (LINK,))[LINK]
    return maps, link


def postprocess(maps: np.ndarray, link: np.ndarray, ratio: float, width: int, height: int,
                text_threshold: float, link_threshold: float, low_text: float,
                refine: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The ``postprocess`` step's work (its model runs this): boxes from one image's maps, in
    the original's pixels.

    Args:
        maps: float32 ``[1, 2, h, w]`` region and affinity scores (craft's MAPS).
        link: float32 ``[1, 1, h, w]`` refined link score (refinenet's LINK); not read unless
            ``refine``.
        ratio: the resize factor (resized = original * ratio).
        width, height: the upright original's size, pixels; points are clipped to it.
        text_threshold, link_threshold, low_text: :func:`ocr_pipeline.boxes.detect_boxes`'.
        refine: link with ``link``; otherwise with the affinity score (``maps`` channel 1).

    Returns:
        float32 ``[N, 4, 2]`` corners clockwise from the top-left-most, original-image pixels;
        float32 ``[N]`` peak region scores.
    """
    found, scores = boxes.detect_boxes(maps[0, 0], link[0, 0] if refine else maps[0, 1],
                                       text_threshold, link_threshold, low_text)
    return boxes.to_image_coordinates(found, ratio, width, height), scores


def detect(run: RunModel, prepared: PreparedImage, refine: bool = True,
           parameters: Mapping[str, np.ndarray] | None = None,
           detector: str = CRAFT_DETECTOR) -> tuple[np.ndarray, np.ndarray]:
    """The whole chain of ``detector`` through models: CRAFT's :func:`score_maps` then the
    ``postprocess`` model, or DB's ``db`` then ``db_postprocess``.

    Args:
        run: how to run one model (:data:`RunModel`).
        prepared: the image (:func:`ocr_pipeline.imaging.prepare_pixels` or ``prepare_image``).
        refine: run the link refiner (REFINE's value; postprocess reads REFINE itself).
        parameters: postprocess's optional inputs as sent, ``{tensor name: [1] array}``
            (TEXT_THRESHOLD, LINK_THRESHOLD, LOW_TEXT, REFINE; absent ones take the
            contract's defaults there). CRAFT's: DB has fixed thresholds of its own
            (:mod:`ocr_pipeline.db`).
        detector: ``"craft"`` or ``"db"``.

    Returns:
        float32 ``[N, 4, 2]`` boxes in ``prepared``'s original pixels; float32 ``[N]`` scores.

    Raises:
        ValueError: an unknown detector.
    """
    where = {POST_RATIO: np.array([prepared.ratio], np.float32),
             POST_SIZE: np.array([prepared.width, prepared.height], np.int32)}
    if detector == DB_DETECTOR:
        probability = run(DB_MODEL, {IMAGE: prepared.tensor}, (DB_PROBABILITY,))[DB_PROBABILITY]
        found = run(DB_POSTPROCESS_MODEL, {DB_PROBABILITY: probability, **where},
                    (POST_BOXES, POST_SCORES))
    elif detector == CRAFT_DETECTOR:
        maps, link = score_maps(run, prepared.tensor, refine)
        found = run(POSTPROCESS_MODEL, {POST_MAPS: maps, POST_LINK: link, **where,
                                        **(parameters or {})}, (POST_BOXES, POST_SCORES))
    else:
        raise ValueError(f"unknown detector {detector!r}")
    return found[POST_BOXES].reshape(-1, 4, 2), found[POST_SCORES].reshape(-1)


def db_postprocess(probability: np.ndarray, ratio: float, width: int, height: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The ``db_postprocess`` step's work (its model runs this): boxes from one image's DB
    probability map (float32 ``[1, 1, h, w]``), in the original's pixels (``ratio``: resized
    = original x ratio; ``width``, ``height``: the upright original's size, points clipped to
    it). Returns float32 ``[N, 4, 2]`` corners and ``[N]`` scores (:mod:`ocr_pipeline.db`)."""
    found, scores = db.detect_boxes(probability[0, 0])
    return boxes.to_image_coordinates(found, ratio, width, height, stride=1), scores
