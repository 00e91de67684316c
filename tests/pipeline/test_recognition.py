"""Unit tests of the recognition pre- and post-processing (ocr_pipeline.recognition): crops,
batches and greedy CTC decoding, on hand-made arrays."""

import numpy as np
import pytest

from ocr_pipeline import recognition
from tests.image_factory import text_page


def test_a_slanted_box_is_warped_to_its_rectangle():
    image = np.zeros((100, 200, 3), np.uint8)
    image[40:60, 50:150] = 255                              # a white bar 100 x 20
    crop = recognition.crop_box(image, np.array([[50, 40], [150, 40], [150, 60], [50, 60]]))
    assert crop.shape == (20, 100, 3)
    assert crop.mean() > 250


def test_a_tall_box_is_turned_to_read_left_to_right():
    page = np.asarray(text_page([["BOOK", "SPINE"]]))
    spine = np.ascontiguousarray(np.rot90(page, k=-1))      # reads top to bottom
    height, width = spine.shape[:2]
    crop = recognition.crop_box(spine, np.array([[0, 0], [width, 0], [width, height],
                                                 [0, height]], np.float32))
    np.testing.assert_array_equal(crop, page)


def test_expand_box_grows_by_a_share_of_the_height_and_stays_inside():
    box = np.array([[10, 10], [110, 10], [110, 30], [10, 30]], np.float32)
    grown = recognition.expand_box(box, 200, 100, margin=0.1)
    np.testing.assert_allclose(grown, [[8, 8], [112, 8], [112, 32], [8, 32]])
    clipped = recognition.expand_box(box, 111, 31, margin=0.5)
    assert clipped[:, 0].max() == 111 and clipped[:, 1].max() == 31 and clipped.min() == 0


def test_batches_group_similar_widths_and_respect_the_batch_size():
    widths = [500, 40, 320, 41, 1200, 42, 470]
    # 40..320 all pad to 320 and 470 is within 1.5x of it; 500 > 480 starts a batch; 1200 too.
    assert recognition.plan_batches(widths, 32) == [[1, 3, 5, 2, 6], [0], [4]]
    assert recognition.plan_batches(widths, 2) == [[1, 3], [5, 2], [6, 0], [4]]
    assert recognition.plan_batches([], 32) == []


def test_batch_tensor_is_bgr_normalised_and_right_padded():
    red = np.zeros((24, 12, 3), np.uint8)
    red[..., 0] = 255                                       # RGB red
    tensor = recognition.batch_tensor([red, np.zeros((48, 400, 3), np.uint8)])
    assert tensor.shape == (2, 3, 48, 400) and tensor.dtype == np.float32
    # red resized to 48 x 24: channel 2 (R of BGR) is +1, channels 0, 1 are -1; padding 0
    np.testing.assert_allclose(tensor[0, 2, :, :24], 1.0)
    np.testing.assert_allclose(tensor[0, 0, :, :24], -1.0)
    assert not tensor[0, :, :, 24:].any()
    np.testing.assert_allclose(tensor[1], -1.0)
    assert recognition.batch_tensor([red]).shape == (1, 3, 48, 320)   # at least 320 wide


def test_dictionary_keeps_space_like_characters(tmp_path):
    path = tmp_path / "dict.txt"
    path.write_bytes("a\r\n\u3000\r\nb\r\n".encode())
    assert recognition.load_dictionary(path) == ["", "a", "\u3000", "b", " "]


def best_path(steps: list[int], confidence: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """The recognizer's outputs for one crop: each step's class and its probability."""
    return (np.array([steps], np.int64),
            np.full((1, len(steps)), confidence, np.float32))


def test_greedy_ctc_merges_repeats_and_drops_blanks():
    classes = ["", "a", "b", "l", " "]
    reading, = recognition.ctc_greedy(*best_path([1, 1, 0, 1, 2, 2, 0, 0, 3, 4]), classes)
    assert reading.text == "aabl"                           # trailing space stripped
    assert reading.score == pytest.approx(0.9)
    empty, = recognition.ctc_greedy(*best_path([0, 0, 0]), classes)
    assert (empty.text, empty.score) == ("", 0.0)


def test_a_class_beyond_the_dictionary_is_refused():
    with pytest.raises(ValueError, match="class 4, the dictionary has 3"):
        recognition.ctc_greedy(*best_path([1, 4]), ["", "a", " "])


def test_the_recognizer_graph_answers_its_best_path():
    """ocr_pipeline.onnx_edits.ctc_best_path on a softmax graph: each step's ArgMax (the first
    of equal classes, as numpy's) and its probability, run by onnxruntime."""
    import onnxruntime
    from onnx import TensorProto, helper

    from ocr_contract.tensors import RECOGNIZER_OUTPUTS
    from ocr_pipeline import onnx_edits

    graph = helper.make_graph(
        [helper.make_node("Softmax", ["logits"], ["probabilities"], axis=2)], "softmax",
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "steps", 4])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT,
                                       ["batch", "steps", 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 7
    onnx_edits.ctc_best_path(model)
    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    logits = np.array([[[0, 2, 0, 0], [1, 1, 0, 0], [0, 0, 0, 3]]], np.float32)
    best, scores = session.run(list(RECOGNIZER_OUTPUTS), {"logits": logits})
    assert [o.name for o in session.get_outputs()] == list(RECOGNIZER_OUTPUTS)
    assert best.tolist() == [[1, 0, 3]] and best.dtype == np.int64
    softmax = np.exp(logits) / np.exp(logits).sum(axis=2, keepdims=True)
    np.testing.assert_allclose(scores, softmax.max(axis=2), rtol=1e-6)
    with pytest.raises(ValueError, match="single output"):
        onnx_edits.ctc_best_path(model)
