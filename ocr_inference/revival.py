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
#: names the group, which none of ours does: tested) and ``_<index>`` within the group:
#: ``recognizer_0_0``.
_INSTANCE_SUFFIX = re.compile(r"_\d+_\d+$")

#: Seconds after a model's load (done or failed) in which this process does not load it again:
#: the requests that failed while it ran found the old stub dead, not the new one. Also the
#: step of the load's stamp, so that the loads of several processes in one step are one config
#: and Triton reloads the model once.
COOLDOWN_S = 10.0


def dead_stub_model(message: str) -> str | None:
    """The model whose stub process died, from a Triton error message ("... recognizer: Stub
    process 'recognizer_0_0' is not healthy." -> ``"recognizer"``); None for any other
    failure."""
    found = _DEAD_STUB.search(message or "")
    return _INSTANCE_SUFFIX.sub("", found["instance"]) if found else None


def load_stamp(now: float) -> str:
    """The ``loaded_again_at`` value of a load at ``now`` (seconds since the epoch): the start
    of its :data:`COOLDOWN_S` step, UTC."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now // COOLDOWN_S * COOLDOWN_S))


class StubRevival:
    """Loads a model anew on each replica of ``url``: one such load of a model at a time in
    this process, and none within :data:`COOLDOWN_S` of the last, done or failed (each gunicorn
    worker has its own; the loads of workers in the same step carry the same stamp, which
    Triton takes as one config).

    Args:
        url: the gRPC target of :class:`~ocr_inference.client.TritonClient`
            (:func:`ocr_inference.targets.replicas` names each replica's).
    """

    def __init__(self, url: str):
        self.url = url
        self._locks: dict[str, threading.Lock] = {}
        self._last: dict[str, tuple[float, bool]] = {}     # model -> (when, loaded)
        self._guard = threading.Lock()

    def revive(self, model: str, timeout_s: float) -> bool:
        """Load ``model`` again, unless this process did (or failed to) within
        :data:`COOLDOWN_S`.

        Args:
            timeout_s: the most this may take, waiting for another thread's load included,
                seconds (the calling request's time left).

        Returns:
            True when the model was loaded again on at least one replica (by this call or
            within :data:`COOLDOWN_S`), so the request is worth sending again; False when no
            load succeeded in time (logged), or the last attempt failed within the cooldown.
        """
        deadline = time.monotonic() + timeout_s
        with self._guard:
            lock = self._locks.setdefault(model, threading.Lock())
        if not lock.acquire(timeout=max(deadline - time.monotonic(), 0.0)):
            return False
        try:
            when, loaded = self._last.get(model, (float("-inf"), False))
            if time.monotonic() - when < COOLDOWN_S:
                return loaded
            loaded = self._load(model, deadline)
            self._last[model] = (time.monotonic(), loaded)
            return loaded
        finally:
            lock.release()

    def _load(self, model: str, deadline: float) -> bool:
        """:meth:`ModelControl.load_again` on every replica (one unreachable does not keep the
        others from theirs); True when any load succeeded."""
        started, loaded = time.monotonic(), False
        logger.warning("the Python stub of model %s died; loading it again", model)
        replicas = targets.replicas(self.url)
        if not replicas:
            logger.error("loading model %s again: %s names no replica now", model, self.url)
        for replica in replicas:
            left = deadline - time.monotonic()
            if left <= 0:
                logger.error("loading model %s again: out of time before %s", model, replica)
                break
            try:
                ModelControl(replica, timeout_s=left).load_again(model, load_stamp(time.time()))
            except ModelControlError as exc:
                logger.error("loading model %s again on %s failed: %s", model, replica, exc)
            else:
                loaded = True
        if loaded:
            logger.warning("model %s loaded again in %.1f s", model, time.monotonic() - started)
        return loaded
