"""A model whose Python-backend stub process died, loaded again: :class:`StubRevival`.

Triton's Python backend runs every model instance in a stub process of its own. When one dies
(the kernel's OOM killer, a crash in native code), Triton 2.51 keeps the model READY, never
starts the stub again by itself, and fails every request that reaches that model with "Stub
process '<instance>' is not healthy." for as long as the server runs. Measured here with the
recognizer's stub killed: every request with text failed (502) while ``/api/ready`` and
``/v2/models/recognizer/ready`` answered 200; loading the model anew (model control, explicit
mode, :meth:`~ocr_inference.model_control.ModelControl.load_again`) started a new stub and
served again in seconds.

The gateway cannot see stubs (Triton may run in another container), but it reads that message:
:meth:`ocr_inference.client.TritonClient.infer` asks this class to load the model again and
sends the request once more within its deadline, so the request that finds the stub dead is
answered, and so are the ones after it.
"""

from __future__ import annotations

import logging
import re
import threading
import time

from . import targets
from .model_control import ModelControl, ModelControlError

logger = logging.getLogger(__name__)

#: Triton's message for a request that reached a model instance whose stub is gone (python_be.cc).
_DEAD_STUB = re.compile(r"Stub process '(?P<instance>[^']+)' is not healthy")
#: An instance's name is its instance group's (``<model>_<group index>`` unless the config
#: names the group; ours do not) and ``_<index>`` within the group: ``recognizer_0_0``.
_INSTANCE_SUFFIX = re.compile(r"_\d+_\d+$")

#: A model loaded again less than this long ago is not loaded again, seconds: the requests that
#: failed while its load ran found the old stub dead, not the new one.
COOLDOWN_S = 10.0


def dead_stub_model(message: str) -> str | None:
    """The model whose stub process died, from a Triton error message ("... recognizer: Stub
    process 'recognizer_0_0' is not healthy." -> ``"recognizer"``); None for any other
    failure."""
    found = _DEAD_STUB.search(message or "")
    return _INSTANCE_SUFFIX.sub("", found["instance"]) if found else None


class StubRevival:
    """Loads a model anew on each replica of ``url``: one such load of a model at a time in
    this process, none within :data:`COOLDOWN_S` of the last (each gunicorn worker has its own,
    so each worker's first request that finds the stub dead loads it once).

    Args:
        url: the gRPC target of :class:`~ocr_inference.client.TritonClient`
            (:func:`ocr_inference.targets.replicas` names each replica's).
    """

    def __init__(self, url: str):
        self.url = url
        self._locks: dict[str, threading.Lock] = {}
        self._loaded_at: dict[str, float] = {}
        self._guard = threading.Lock()

    def revive(self, model: str, timeout_s: float) -> bool:
        """Load ``model`` again, unless another request of this process just did.

        Args:
            timeout_s: the most this may take, waiting for another thread's load included,
                seconds (the calling request's time left).

        Returns:
            True when the model was loaded again (by this call or within :data:`COOLDOWN_S`),
            so the request is worth sending again; False when a load failed or did not finish
            in time (logged).
        """
        with self._guard:
            lock = self._locks.setdefault(model, threading.Lock())
        if not lock.acquire(timeout=max(timeout_s, 0.0)):
            return False
        try:
            if time.monotonic() - self._loaded_at.get(model, float("-inf")) < COOLDOWN_S:
                return True
            started, replicas = time.monotonic(), targets.replicas(self.url)
            if not replicas:
                return False
            logger.warning("the Python stub of model %s died; loading it again", model)
            for replica in replicas:
                left = timeout_s - (time.monotonic() - started)
                if left <= 0:
                    return False
                try:
                    # Not unloaded first: that waits on the dead stub (still UNLOADING after
                    # 27 s), where a new load starts new instances at once.
                    ModelControl(replica, timeout_s=left).load_again(model)
                except ModelControlError as exc:
                    logger.error("loading model %s again on %s failed: %s", model, replica, exc)
                    return False
            self._loaded_at[model] = time.monotonic()
            logger.warning("model %s loaded again in %.1f s", model,
                           time.monotonic() - started)
            return True
        finally:
            lock.release()
