"""The four ways of serving the detector that the benchmark compares, as client callers.

* ``ensemble`` - the product: ``POST /api/ocr`` to the gateway (gunicorn + Django), which
  sends the file to ``ensemble_ocr`` on Triton and answers the boxes.
* ``direct`` - tritonclient gRPC straight to ``ensemble_ocr`` (no gateway).
* ``split`` - the API process decodes, resizes and pads the image itself
  (``ocr_pipeline.imaging``), sends the uint8 tensor to ``craft``, sends the returned
  ``y`` and ``feature`` on to ``refinenet``, and extracts the boxes itself: the chain of
  ``ocr_pipeline.detection`` with its networks on Triton, so every tensor crosses the API <->
  Triton boundary.
* ``inprocess`` - ``POST /ocr`` to the in-process baseline (``bench.inprocess``): the model
  inside each gunicorn worker, no Triton.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse

import numpy as np
import tritonclient.grpc as grpcclient
from ocr_contract.parameters import LINK_THRESHOLD, LOW_TEXT, TEXT_THRESHOLD
from ocr_contract.tensors import ENSEMBLE
from ocr_inference.requests import build_inputs, requested_outputs
from ocr_pipeline import detection, imaging
from tritonclient.utils import np_to_triton_dtype

from .load import BenchImage, Sample
from .traffic import CountingStub

MODES = ("ensemble", "direct", "split", "inprocess")

#: What each mode sends over the network between its API process and Triton.
MODE_DESCRIPTIONS = {
    "ensemble": "HTTP POST /api/ocr -> gunicorn + Django gateway -> gRPC ensemble_ocr",
    "direct": "gRPC ensemble_ocr from the client, no gateway",
    "split": "client preprocesses, gRPC craft, gRPC refinenet, client extracts boxes",
    "inprocess": "HTTP POST -> gunicorn + Django view running the model in the worker",
}

class HttpCaller:
    """POSTs the image as multipart to ``path``.

    By default every request opens its own connection (``Connection: close``), like many
    independent clients: gunicorn then hands each request to whichever worker accepts it.
    With ``keep_alive`` one connection is reused; a gthread worker keeps serving the
    connections it accepted, so the spread over workers is fixed when the clients connect.

    Args:
        host, port: the gunicorn server.
        path: ``/api/ocr`` (gateway) or ``/ocr`` (in-process baseline).
        long_side: sent as the ``long_side`` query parameter, pixels.
        headers: extra headers (the gateway's ``Authorization: Api-Key ...``).
        keep_alive: reuse one connection for all requests.
        timeout_s: socket timeout, seconds.
        extra: more query parameters (``{"recognize": "false"}``).
    """

    def __init__(self, host: str, port: int, path: str, long_side: int,
                 headers: dict | None = None, keep_alive: bool = False,
                 timeout_s: float = 600.0, extra: dict | None = None):
        self.host, self.port, self.timeout_s = host, port, timeout_s
        self.url = f"{path}?{urllib.parse.urlencode({'long_side': long_side, **(extra or {})})}"
        self.headers = dict(headers or {})
        self.keep_alive = keep_alive
        if not keep_alive:
            self.headers["Connection"] = "close"
        self.conn = self._connect() if keep_alive else None

    def _connect(self) -> http.client.HTTPConnection:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        conn.connect()
        return conn

    def __call__(self, image: BenchImage) -> Sample:
        headers = {**self.headers,
                   "Content-Type": f"multipart/form-data; boundary={image.boundary}"}
        if not self.keep_alive:
            self.conn = self._connect()
            try:
                self.conn.request("POST", self.url, body=image.multipart, headers=headers)
                response = self.conn.getresponse()
                body = response.read()
            finally:
                self.conn.close()
            return self._sample(image, response.status, body)
        for attempt in (1, 2):
            try:
                self.conn.request("POST", self.url, body=image.multipart, headers=headers)
                response = self.conn.getresponse()
                body = response.read()
                break
            except (ConnectionError, http.client.HTTPException):
                # gunicorn closes idle keep-alive connections; reconnect once.
                self.conn.close()
                self.conn = self._connect()
                if attempt == 2:
                    raise
        return self._sample(image, response.status, body)

    @staticmethod
    def _sample(image: BenchImage, status: int, body: bytes) -> Sample:
        if status != 200:
            return Sample(image=image.name, ok=False, error=f"HTTP {status}: {body[:200]!r}")
        answer = json.loads(body)
        return Sample(image=image.name, boxes=len(answer["boxes"]),
                      server_timing_ms=answer.get("timing_ms"), body=answer)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


class _GrpcCaller:
    """A tritonclient gRPC client of its own, with serialized-message byte counting."""

    def __init__(self, url: str, long_side: int):
        self.long_side = long_side
        self.client = grpcclient.InferenceServerClient(url)
        self.counter = CountingStub.install(self.client)
        self.client.is_server_live()  # connect now, outside the timed run

    def close(self) -> None:
        self.client.close()


class DirectCaller(_GrpcCaller):
    """gRPC ``ensemble_ocr``: the encoded file and ``LONG_SIDE`` in, boxes out.

    The request is the one the gateway sends (``IMAGE_BYTES`` as a BYTES tensor built with
    ``dtype=object``, the same three outputs requested).
    """

    def __call__(self, image: BenchImage) -> Sample:
        inputs = build_inputs(image.data, {"long_side": self.long_side})
        self.counter.take()
        result = self.client.infer(ENSEMBLE, inputs, outputs=requested_outputs())
        sent, received = self.counter.take()
        return Sample(image=image.name, boxes=int(result.as_numpy("BOXES").shape[0]),
                      sent_bytes=sent, received_bytes=received)


class SplitCaller(_GrpcCaller):
    """Preprocessing and box extraction in the client; ``craft`` and ``refinenet`` on Triton
    (:func:`ocr_pipeline.detection.score_maps` over gRPC)."""

    def _run(self, model: str, inputs: dict[str, np.ndarray], outputs: tuple[str, ...]
             ) -> dict[str, np.ndarray]:
        """:data:`ocr_pipeline.detection.RunModel` over this caller's gRPC client."""
        tensors = []
        for name, array in inputs.items():
            tensor = grpcclient.InferInput(name, list(array.shape),
                                           np_to_triton_dtype(array.dtype))
            tensor.set_data_from_numpy(array)
            tensors.append(tensor)
        result = self.client.infer(model, tensors, outputs=[
            grpcclient.InferRequestedOutput(name) for name in outputs])
        return {name: result.as_numpy(name) for name in outputs}

    def __call__(self, image: BenchImage) -> Sample:
        self.counter.take()
        t0 = time.perf_counter()
        prepared = imaging.prepare_image(image.data, self.long_side, keep_original=False)
        t1 = time.perf_counter()

        maps, link = detection.score_maps(self._run, prepared.tensor)

        t2 = time.perf_counter()
        found, _ = detection.postprocess(maps, link, prepared.ratio, prepared.width,
                                         prepared.height, TEXT_THRESHOLD.default,
                                         LINK_THRESHOLD.default, LOW_TEXT.default)
        t3 = time.perf_counter()
        sent, received = self.counter.take()
        return Sample(image=image.name, boxes=int(found.shape[0]), sent_bytes=sent,
                      received_bytes=received,
                      client_compute_ms=((t1 - t0) + (t3 - t2)) * 1e3,
                      server_timing_ms={"preprocess": (t1 - t0) * 1e3,
                                        "postprocess": (t3 - t2) * 1e3})
