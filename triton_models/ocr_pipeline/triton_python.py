"""Shared pieces of the Python-backend models in ``repository/``.

Only imported inside Triton's Python-backend stub: ``triton_python_backend_utils`` exists
there and nowhere else. The numeric work lives in :mod:`ocr_pipeline.imaging`,
:mod:`ocr_pipeline.boxes` and :mod:`ocr_pipeline.engines`, which need no Triton.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import triton_python_backend_utils as pb_utils
from ocr_contract.errors import encode_model_error
from ocr_contract.tensors import DEADLINE_PARAMETER

from .engines import EngineOptions, run_grouped, share_cpus
from .precision import load_engine
from .validation import validator_for


def model_parameters(args: dict) -> dict[str, str]:
    """The ``parameters`` of a model's config.pbtxt as a flat ``{key: string_value}`` dict."""
    config = json.loads(args["model_config"])
    return {key: value["string_value"] for key, value in config.get("parameters", {}).items()}


def optional_input(request, name: str) -> np.ndarray | None:
    """The named input of ``request`` as numpy, or None when the client left it out."""
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    return None if tensor is None else tensor.as_numpy()


def refusal(code: str, message: str, field: str | None = None) -> "pb_utils.InferenceResponse":
    """A response failing one request with INVALID_ARG (gRPC INVALID_ARGUMENT, HTTP 400).

    The message carries ``code`` (one of :data:`ocr_contract.errors.MODEL_ERROR_CODES`), the
    message and the parameter at fault, encoded by :func:`ocr_contract.errors.encode_model_error`,
    so the gateway answers with that code and field.
    """
    return pb_utils.InferenceResponse(error=pb_utils.TritonError(
        encode_model_error(code, message, field), pb_utils.TritonError.INVALID_ARG))


class RequestCancelled(Exception):
    """Raised inside a model's work when the client gave up on the request
    (:func:`stop_if_cancelled`); the model answers it with :func:`cancelled`."""


def is_cancelled(request) -> bool:
    """Whether the client gave up on ``request`` (the model should stop working on it).

    Triton (>= 23.10) cancels a request when its gRPC call is cancelled or its deadline
    (tritonclient's ``client_timeout``) passes (docs/user_guide/request_cancellation.md), but
    a Python model has to ask and stop by itself (python_backend README, "Request
    Cancellation Handling"). Measured with Triton 2.51 (tests/inference/test_cancellation.py):
    the ensemble scheduler still schedules each later step, marking its request cancelled, and
    our steps (default scheduler, rate limiter) hand it to the model: unchecked, a request
    abandoned during detection was read to the end. The mark is set only when a step is
    scheduled, never on a step already running or waiting behind the rate limiter
    (triton-inference-server/server#6739), and never on BLS requests; a request sent to a
    model directly is marked at once. So the gateway's deadline also comes as the request
    parameter ``DEADLINE_PARAMETER`` (epoch milliseconds), which the ensemble passes to every
    step: past it, the request is as good as cancelled, whatever Triton marked.
    """
    if request.is_cancelled():
        return True
    deadline_ms = json.loads(request.parameters() or "{}").get(DEADLINE_PARAMETER)
    return deadline_ms is not None and time.time() * 1000.0 > deadline_ms


def computed_for(request) -> int:
    """The request's ``DEADLINE_PARAMETER`` (0 without one): the ensemble's ``COMPUTED_FOR``
    (:data:`ocr_contract.tensors.COMPUTED_FOR`), which tells the gateway whether an answer was
    computed for its request or came from Triton's response cache."""
    return int(json.loads(request.parameters() or "{}").get(DEADLINE_PARAMETER, 0))


def stop_if_cancelled(request) -> None:
    """Raise :class:`RequestCancelled` when :func:`is_cancelled` (between pieces of work)."""
    if is_cancelled(request):
        raise RequestCancelled()


def cancelled() -> "pb_utils.InferenceResponse":
    """The response to a request its client gave up on: CANCELLED (gRPC CANCELLED), what
    Triton core itself answers; nobody reads it, it only ends the request."""
    return pb_utils.InferenceResponse(error=pb_utils.TritonError(
        f"request cancelled by its client (call cancelled, or past its {DEADLINE_PARAMETER})",
        pb_utils.TritonError.CANCELLED))


def warmup_sample(config: dict) -> dict[str, np.ndarray] | None:
    """The first ``model_warmup`` input of a model config as zero arrays (batch dimension
    included), or None when the config has none."""
    warmups = config.get("model_warmup") or []
    if not warmups:
        return None
    batch = [int(warmups[0].get("batch_size", 1))] if config.get("max_batch_size") else []
    return {name: np.zeros(batch + [int(d) for d in tensor["dims"]],
                           dtype=pb_utils.triton_string_to_numpy(tensor["data_type"]))
            for name, tensor in warmups[0]["inputs"].items()}


class OnnxPythonModel:
    """A Python-backend model that runs ``<version>/<onnx_file>`` on a CPU engine.

    The ONNX tensor names are the Triton tensor names, so the same config works for the
    onnxruntime backend in the gpu flavour. Engine options come from the config parameters
    (see :class:`ocr_pipeline.engines.EngineOptions`); with precision ``auto`` the candidates
    are timed on the config's warm-up input. The engine in use, and why, is logged at start-up
    and exported as the ``ocr_engine_info`` gauge on Triton's metrics endpoint.
    """

    def initialize(self, args):
        parameters = model_parameters(args)
        config = json.loads(args["model_config"])
        instances = sum(int(group.get("count", 1)) for group in config.get("instance_group", []))
        options = share_cpus(EngineOptions.from_mapping(parameters), instances)
        model_dir = Path(args["model_repository"])
        version_dir = model_dir / args["model_version"]
        onnx_path = str(version_dir / parameters.get("onnx_file", "model.onnx"))
        fp32 = replace(options, engine="openvino", precision="fp32")
        validator = validator_for(parameters, model_dir, version_dir,
                                  lambda path: load_engine(str(path), fp32))
        self.engine = load_engine(onnx_path, options, warmup_sample(config), validator)
        self.inputs = [tensor["name"] for tensor in config["input"]]
        self.outputs = [tensor["name"] for tensor in config["output"]]
        model = args["model_name"]
        pb_utils.Logger.log_info(f"{model} v{args['model_version']}: {self.engine.description}"
                                 + (f" ({self.engine.choice})" if self.engine.choice else ""))
        # The family must outlive its metric (Python backend rule), so both are kept.
        self._info_family = pb_utils.MetricFamily(
            name="ocr_engine_info",
            description="Inference engine running a CPU-flavour ONNX model (value always 1)",
            kind=pb_utils.MetricFamily.GAUGE,
        )
        self._info = self._info_family.Metric(labels={
            "model": model, "version": args["model_version"], "engine": self.engine.description,
            "choice": self.engine.choice})
        self._info.set(1)

    def execute(self, requests):
        """Run the requests Triton hands over (several with dynamic batching).

        Requests whose inputs have the same shape run as one engine call
        (:func:`ocr_pipeline.engines.run_grouped`); each response gets back its own rows. A
        request its client gave up on (:func:`is_cancelled`) is answered :func:`cancelled`
        without running the network.
        """
        gone = [is_cancelled(request) for request in requests]
        feeds = [{name: optional_input(request, name) for name in self.inputs}
                 for request, skip in zip(requests, gone) if not skip]
        results = iter(run_grouped(self.engine, feeds) if feeds else [])
        responses = []
        for skip in gone:
            if skip:
                responses.append(cancelled())
                continue
            result = next(results)
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor(name, result[name]) for name in self.outputs]))
        return responses

    def finalize(self):
        del self._info  # metric before its family
        del self._info_family
