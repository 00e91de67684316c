"""Triton model control (explicit mode): the repository index, load, unload, reload.

Used by ``manage.py triton_models``, the admin's model page and ``GET /api/models``. Loading a
model that is already loaded reloads it: Triton reads the config and version folders again,
brings up new versions, and retires old ones once their in-flight requests finish, so a new
weights version rolls out without failing requests. Loading an ensemble loads its composing
models too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

#: Triton's model states, as the repository index reports them.
READY = "READY"


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
