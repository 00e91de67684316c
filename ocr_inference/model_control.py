"""Triton model control (explicit mode): the repository index, load, unload, reload.

Used by ``manage.py triton_models``, the admin's model page and ``GET /api/models``. Loading a
model that is already loaded reloads it: Triton reads the config and version folders again,
brings up new versions, and retires old ones once their in-flight requests finish, so a new
weights version rolls out without failing requests. Loading an ensemble loads its composing
models too.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

#: Triton's model states, as the repository index reports them.
READY = "READY"
#: A config parameter no model reads: :meth:`ModelControl.load_again` sets it.
LOADED_AGAIN_PARAMETER = "loaded_again_at"


class ModelControlError(RuntimeError):
    """Triton refused or failed a load/unload, or cannot be reached; the message says why."""


@dataclass(frozen=True)
class ModelState:
    """One row of Triton's repository index.

    Attributes:
        name: model directory name.
        version: version folder ("" for a model that was never loaded).
        state: READY, UNAVAILABLE, LOADING, UNLOADING, or "" when never loaded.
        reason: Triton's explanation when not ready (e.g. a load error).
    """

    name: str
    version: str
    state: str
    reason: str

    @property
    def ready(self) -> bool:
        return self.state == READY


class ModelControl:
    """Model control of one Triton over gRPC (``host:port``).

    Args:
        url: Triton's gRPC address.
        timeout_s: deadline of each call; loads of big models can take minutes.
    """

    def __init__(self, url: str, timeout_s: float = 600.0):
        self.url = url
        self.timeout_s = timeout_s

    def _call(self, method: str, *args, **kwargs):
        """One RPC on a short-lived connection (model control is rare; this keeps it apart
        from the inference channel)."""
        client = grpcclient.InferenceServerClient(self.url)
        try:
            return getattr(client, method)(*args, **kwargs)
        except InferenceServerException as exc:
            raise ModelControlError(exc.message() or str(exc)) from exc
        finally:
            client.close()

    def index(self) -> list[ModelState]:
        """Every model in the repository with each loaded version's state, sorted by name.

        Raises:
            ModelControlError: Triton cannot be reached.
        """
        index = self._call("get_model_repository_index", as_json=True,
                           client_timeout=self.timeout_s)
        return sorted((ModelState(m["name"], m.get("version", ""), m.get("state", ""),
                                  m.get("reason", "")) for m in index.get("models", [])),
                      key=lambda m: (m.name, m.version))

    def ensemble_steps(self) -> dict[str, tuple[str, ...]]:
        """The step models of every loaded ensemble, from Triton's own configs.

        Returns:
            ``{ensemble name: (step model names, in order)}``.

        Raises:
            ModelControlError: Triton cannot be reached.
        """
        steps = {}
        for model in self.index():
            if not model.ready or model.name in steps:
                continue
            config = self._call("get_model_config", model.name, as_json=True,
                                client_timeout=self.timeout_s)["config"]
            if config.get("platform") == "ensemble":
                steps[model.name] = tuple(
                    step["model_name"] for step in config["ensemble_scheduling"]["step"])
        return steps

    def load(self, name: str) -> None:
        """Load ``name`` (and, for an ensemble, its composing models), or reload it.

        Raises:
            ModelControlError: the load failed (Triton's reason in the message).
        """
        self._call("load_model", name, client_timeout=self.timeout_s)

    def unload(self, name: str, unload_dependents: bool = False) -> None:
        """Unload ``name``; with ``unload_dependents`` an ensemble's composing models too.

        Triton answers as soon as unloading starts; this waits (up to ``timeout_s``) until
        in-flight requests are done and no version is UNLOADING any more.

        Raises:
            ModelControlError: Triton refused, or the model was still unloading at the timeout.
        """
        self._call("unload_model", name, unload_dependents=unload_dependents,
                   client_timeout=self.timeout_s)
        deadline = time.monotonic() + self.timeout_s
        while any(m.name == name and m.state == "UNLOADING" for m in self.index()):
            if time.monotonic() > deadline:
                raise ModelControlError(f"{name} still unloading after {self.timeout_s:.0f} s")
            time.sleep(0.2)

    reload = load

    def load_again(self, name: str, stamp: str) -> None:
        """Load ``name`` anew although its files are unchanged, within ``timeout_s`` for both
        calls: Triton starts new instances only when a model's config changed (apart from its
        instance groups and version policy), so its own config is passed back with
        :data:`LOADED_AGAIN_PARAMETER` set to ``stamp``. A stamp equal to the loaded one is an
        in-place update: nothing is started, as for a load of the unchanged model.

        Args:
            stamp: the parameter's value (:func:`ocr_inference.revival.load_stamp`).

        Raises:
            ModelControlError: Triton refused or the load failed or did not end in time.
        """
        ends = time.monotonic() + self.timeout_s
        config = self._call("get_model_config", name, as_json=True,
                            client_timeout=self.timeout_s)["config"]
        config.setdefault("parameters", {})[LOADED_AGAIN_PARAMETER] = {"string_value": stamp}
        self._call("load_model", name, config=json.dumps(config),
                   client_timeout=max(ends - time.monotonic(), 0.001))


#: A model's state once another it depends on is unloaded.
UNAVAILABLE = "UNAVAILABLE"
#: Still READY, but its requests fail when they need the unloaded model.
FAILING = "READY, failing"


@dataclass(frozen=True)
class Consequence:
    """What unloading a model does to another one.

    Attributes:
        name: the other model.
        state: :data:`UNAVAILABLE` (Triton takes it down: an ensemble whose step is gone) or
            :data:`FAILING` (it stays READY but fails: it, or one of its steps, calls the model
            through BLS).
        reason: why, in words, e.g. "runs craft as a step".
    """

    name: str
    state: str
    reason: str


def unload_consequences(name: str, ensemble_steps: dict[str, tuple[str, ...]],
                        bls_calls: dict[str, tuple[str, ...]]) -> list[Consequence]:
    """Every model that stops working when ``name`` is unloaded, transitively.

    An ensemble one of whose steps is unavailable becomes unavailable itself; a model that
    calls an unavailable or failing model through BLS, and an ensemble with a failing step,
    stay READY but fail (Triton does not know about BLS calls).

    Args:
        name: the model to unload.
        ensemble_steps: ``{ensemble: step models}`` (:meth:`ModelControl.ensemble_steps`).
        bls_calls: ``{model: models it calls through BLS}``
            (:data:`ocr_contract.tensors.BLS_CALLS`).

    Returns:
        the consequences, nearest first (each model once).
    """
    found: dict[str, Consequence] = {}
    queue = [(name, UNAVAILABLE)]
    while queue:
        current, state = queue.pop(0)
        for ensemble, steps in sorted(ensemble_steps.items()):
            if current in steps and ensemble != name and ensemble not in found:
                found[ensemble] = Consequence(ensemble, state, f"runs {current} as a step")
                queue.append((ensemble, state))
        for caller, called in sorted(bls_calls.items()):
            if current in called and caller != name and caller not in found:
                found[caller] = Consequence(caller, FAILING, f"calls {current} through BLS")
                queue.append((caller, FAILING))
    return list(found.values())
