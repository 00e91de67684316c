"""The detection chain written once (ocr_pipeline.detection), run by a recording stand-in for
Triton: which models it calls, with which tensors, and the boxes its postprocess makes."""

import numpy as np
import pytest
from ocr_contract.parameters import LINK_THRESHOLD, LOW_TEXT, REFINE, TEXT_THRESHOLD
from ocr_contract.tensors import (BLS_CALLS, CRAFT_MODEL, POSTPROCESS_MODEL, RECOGNIZE_MODEL,
                                  REFINENET_MODEL)

from ocr_pipeline import boxes, detection, imaging

H, W = 64, 96   # the padded image; the maps are half of it


def score_maps() -> tuple[np.ndarray, np.ndarray]:
    """Region + affinity maps with two words of two letters: the affinity joins the first
    word's, the refined link (also returned) both words'."""
    maps = np.zeros((1, 2, H // 2, W // 2), np.float32)
    link = np.zeros((1, 1, H // 2, W // 2), np.float32)
    maps[0, 0, 4:10, 4:10] = maps[0, 0, 4:10, 14:20] = 0.9
    maps[0, 1, 4:10, 10:14] = link[0, 0, 4:10, 10:14] = 0.9
    maps[0, 0, 20:26, 4:10] = maps[0, 0, 20:26, 14:20] = 0.9
    link[0, 0, 20:26, 10:14] = 0.9
    return maps, link


class Recorder:
    """A :data:`ocr_pipeline.detection.RunModel` answering as the real models would (the
    networks with fixed maps, postprocess with :func:`ocr_pipeline.detection.postprocess`)."""

    def __init__(self):
        self.calls: list[tuple[str, dict, tuple]] = []
        self.maps, self.link = score_maps()

    def __call__(self, model, inputs, outputs):
        self.calls.append((model, dict(inputs), outputs))
        if model == CRAFT_MODEL:
            return {detection.MAPS: self.maps,
                    detection.FEATURES: np.ones((1, 32, H // 2, W // 2), np.float32)}
        if model == REFINENET_MODEL:
            return {detection.LINK: self.link}
        assert model == POSTPROCESS_MODEL
        value = {name: inputs[name] for name in (TEXT_THRESHOLD.tensor, LOW_TEXT.tensor,
                                                 LINK_THRESHOLD.tensor, REFINE.tensor)
                 if name in inputs}
        found, scores = detection.postprocess(
            inputs[detection.POST_MAPS], inputs[detection.POST_LINK],
            float(inputs[detection.POST_RATIO][0]), *map(int, inputs[detection.POST_SIZE]),
            float(value.get(TEXT_THRESHOLD.tensor, [TEXT_THRESHOLD.default])[0]),
            float(value.get(LINK_THRESHOLD.tensor, [LINK_THRESHOLD.default])[0]),
            float(value.get(LOW_TEXT.tensor, [LOW_TEXT.default])[0]),
            bool(value.get(REFINE.tensor, [REFINE.default])[0]))
        return {detection.POST_BOXES: found, detection.POST_SCORES: scores}


def prepared() -> imaging.PreparedImage:
    """A 192 x 128 original at ratio 0.5: the padded 96 x 64 input."""
    return imaging.PreparedImage(np.zeros((1, H, W, 3), np.uint8), 0.5, 192, 128, None)


def test_the_chain_runs_craft_refinenet_postprocess_with_the_repositorys_tensors():
    run = Recorder()
    found, scores = detection.detect(run, prepared())
    assert [model for model, _, _ in run.calls] == [CRAFT_MODEL, REFINENET_MODEL,
                                                    POSTPROCESS_MODEL]
    (_, craft_in, craft_out), (_, refine_in, refine_out), (_, post_in, post_out) = run.calls
    assert list(craft_in) == [detection.IMAGE] and craft_in[detection.IMAGE].dtype == np.uint8
    assert craft_out == (detection.MAPS, detection.FEATURES)
    assert list(refine_in) == [detection.MAPS, detection.FEATURES]
    assert refine_in[detection.MAPS] is run.maps and refine_out == (detection.LINK,)
    assert post_in[detection.POST_MAPS] is run.maps and post_in[detection.POST_LINK] is run.link
    assert post_in[detection.POST_RATIO].dtype == np.float32
    assert post_in[detection.POST_RATIO].tolist() == [0.5]
    assert post_in[detection.POST_SIZE].dtype == np.int32
    assert post_in[detection.POST_SIZE].tolist() == [192, 128]
    assert post_out == (detection.POST_BOXES, detection.POST_SCORES)
    # Refined: both words, in the original's pixels (score-map pixels x 2 / 0.5).
    assert found.shape == (2, 4, 2) and found.dtype == np.float32 and scores.shape == (2,)
    assert found[:, :, 0].max() <= 192 and found[:, :, 1].max() <= 128


def test_without_refine_refinenet_is_not_asked_and_the_affinity_links():
    run = Recorder()
    sent = {REFINE.tensor: np.array([False])}
    found, _ = detection.detect(run, prepared(), refine=False, parameters=sent)
    assert [model for model, _, _ in run.calls] == [CRAFT_MODEL, POSTPROCESS_MODEL]
    _, post_in, _ = run.calls[-1]
    assert post_in[REFINE.tensor] is sent[REFINE.tensor]
    assert post_in[detection.POST_LINK].shape == (1, 1, H // 2, W // 2)
    assert not post_in[detection.POST_LINK].any()
    assert len(found) == 3       # the affinity joins the first word only


def test_postprocess_is_the_box_extraction_in_original_pixels():
    maps, link = score_maps()
    for refine, linking in ((True, link[0, 0]), (False, maps[0, 1])):
        found, scores = detection.postprocess(maps, link, 0.5, 192, 128, 0.7, 0.4, 0.4, refine)
        expected, expected_scores = boxes.detect_boxes(maps[0, 0], linking, 0.7, 0.4, 0.4)
        np.testing.assert_array_equal(found, boxes.to_image_coordinates(expected, 0.5, 192, 128))
        np.testing.assert_array_equal(scores, expected_scores)


@pytest.mark.parametrize("refine", [True, False])
def test_every_model_the_chain_calls_is_a_bls_call_of_recognize(refine):
    """recognize detects a turned page again with this chain: the admin's unload warning and
    the models loaded at start must know (ocr_contract.tensors.BLS_CALLS)."""
    run = Recorder()
    detection.detect(run, prepared(), refine)
    assert {model for model, _, _ in run.calls} <= set(BLS_CALLS[RECOGNIZE_MODEL])
