"""Image bytes to Triton through system shared memory instead of the gRPC message.

Only for a gateway on the same host as Triton (``TRITON_SHARED_MEMORY=true``). Each gateway
process keeps a small pool of POSIX shared-memory regions (``/dev/shm/ocr_<pid>_<random>_<n>``),
each registered with Triton once and reused for every request; a region is leased by one
request at a time. The pool only grows to the process's peak concurrency (at most ``max_regions``); a
request that finds no free region, or an image too big for one, simply goes in the gRPC
message. Regions are unregistered and unlinked when the process exits.

The BYTES tensor is written serialized, as Triton reads it: a 4-byte little-endian length,
then the bytes (``tritonclient.utils.serialize_byte_tensor``).
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from contextlib import contextmanager
from dataclasses import dataclass

import tritonclient.grpc as grpcclient
import tritonclient.utils.shared_memory as shm
from ocr_contract.tensors import IMAGE_BYTES
from tritonclient.utils import InferenceServerException, serialize_byte_tensor

from .requests import bytes_array

logger = logging.getLogger(__name__)


@dataclass
class Region:
    """One registered region: Triton's name for it, its handle and size in bytes."""

    name: str
    handle: object
    byte_size: int
    registered: bool = False


class SharedMemoryPool:
    """Per-process pool of system shared-memory regions for the ``IMAGE_BYTES`` input.

    Args:
        client: the process's gRPC client (used to register / unregister regions).
        region_bytes: size of each region; images up to ``region_bytes - 4`` fit.
        max_regions: most regions this process creates.
    """

    def __init__(self, client: grpcclient.InferenceServerClient, region_bytes: int,
                 max_regions: int = 16):
        self._client = client
        self.region_bytes = region_bytes
        self.max_regions = max_regions
        self._free: list[Region] = []
        self._all: list[Region] = []
        self._lock = threading.Lock()

    def _new_region(self) -> Region:
        # A random part: a reused PID must never meet a dead worker's leftover registration.
        name = f"ocr_{os.getpid()}_{uuid.uuid4().hex[:8]}_{len(self._all)}"
        region = Region(name, shm.create_shared_memory_region(name, f"/{name}",
                                                              self.region_bytes),
                        self.region_bytes)
        self._all.append(region)
        return region

    @contextmanager
    def image_input(self, image: bytes):
        """Yield an ``IMAGE_BYTES`` input that points into a leased region, or None when the
        image does not fit or every region is busy (then send it in the message)."""
        serialized = serialize_byte_tensor(bytes_array(image))
        byte_size = len(serialized.item())
        region = self._lease() if byte_size <= self.region_bytes else None
        if region is None:
            yield None
            return
        try:
            shm.set_shared_memory_region(region.handle, [serialized])
            if not region.registered:
                try:
                    self._client.register_system_shared_memory(region.name, f"/{region.name}",
                                                               region.byte_size)
                except InferenceServerException as exc:
                    # Triton unreachable or refusing: this request goes in the message.
                    logger.warning("cannot register %s: %s", region.name, exc.message())
                    yield None
                    return
                region.registered = True
            tensor = grpcclient.InferInput(IMAGE_BYTES.name, list(IMAGE_BYTES.dims),
                                           IMAGE_BYTES.dtype)
            tensor.set_shared_memory(region.name, byte_size)
            yield tensor
        finally:
            with self._lock:
                self._free.append(region)

    def _lease(self) -> Region | None:
        with self._lock:
            if self._free:
                return self._free.pop()
            if len(self._all) < self.max_regions:
                return self._new_region()
        return None

    @staticmethod
    def lost_registration(exc: InferenceServerException) -> bool:
        """Triton does not know one of our regions: it restarted and lost them."""
        return (str(exc.status()).endswith("NOT_FOUND")
                and "Unable to find shared memory region" in (exc.message() or ""))

    def forget_registrations(self) -> None:
        """Triton restarted and lost them: register each region again on its next use."""
        with self._lock:
            for region in self._all:
                region.registered = False

    def close(self) -> None:
        """Unregister every region from Triton and unlink it from /dev/shm."""
        with self._lock:
            for region in self._all:
                if region.registered:
                    try:
                        self._client.unregister_system_shared_memory(region.name)
                    except InferenceServerException as exc:  # Triton gone: nothing to undo
                        logger.debug("unregister %s: %s", region.name, exc)
                shm.destroy_shared_memory_region(region.handle)
            self._all, self._free = [], []
