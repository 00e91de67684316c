"""Reading settings from the environment, and the settings more than one side reads.

The typed readers (:func:`read_int`, :func:`read_float`, :func:`read_str`) are the one way this
project turns an environment variable into a value: unset or empty (blanks only) means the
default, and a value of the wrong type is a :class:`ValueError` that names the variable. A
:class:`Setting` is one variable with its default and description, defined once here when
several places read it: the gateway's Django settings, gunicorn's config
(``deploy/gunicorn.conf.py``), the proxy's configuration (:mod:`ocr_proxy`), Triton's start
command and models (:mod:`ocr_pipeline.tritonserver`, :mod:`ocr_pipeline.engines`) and the
embedded stack (:mod:`ocr_embedded.stack`). The limits (:mod:`ocr_contract.limits`) read
theirs with :func:`read_int` too. ``deploy/.env.example`` lists every variable (tested).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping


def _raw(name: str, environ: Mapping[str, str]) -> str:
    return (environ.get(name) or "").strip()


def _converted(name: str, default, environ: Mapping[str, str], convert, kind: str):
    value = _raw(name, environ)
    if not value:
        return default
    try:
        return convert(value)
    except ValueError:
        raise ValueError(f"{name} must be {kind}, not {value!r}") from None


def read_int(name: str, default: int, environ: Mapping[str, str] = os.environ) -> int:
    """``environ[name]`` as an int, or ``default`` when it is unset or empty.

    Raises:
        ValueError: the variable is set to something that is not an integer.
    """
    return _converted(name, default, environ, int, "an integer")


def read_float(name: str, default: float, environ: Mapping[str, str] = os.environ) -> float:
    """``environ[name]`` as a float, or ``default`` when it is unset or empty.

    Raises:
        ValueError: the variable is set to something that is not a number.
    """
    return _converted(name, default, environ, float, "a number")


def read_str(name: str, default: str, environ: Mapping[str, str] = os.environ) -> str:
    """``environ[name]`` without surrounding blanks, or ``default`` when it is unset or
    empty."""
    return _raw(name, environ) or default


_READERS = {int: read_int, float: read_float, str: read_str}


@dataclass(frozen=True)
class Setting:
    """One setting: an environment variable, its default (whose type is the setting's type:
    int, float or str) and what it means.

    Attributes:
        name: the environment variable (and, where the gateway has it, the Django setting).
        default: the value when the variable is unset or empty.
        unit: what the number counts, or what the text is ("seconds", "bytes", "path").
        description: one line for documentation.
    """

    name: str
    default: int | float | str
    unit: str
    description: str

    def read(self, environ: Mapping[str, str] = os.environ) -> int | float | str:
        """The configured value (:func:`read_int`, :func:`read_float` or :func:`read_str`).

        Raises:
            ValueError: the variable is set to a value of the wrong type.
        """
        return _READERS[type(self.default)](self.name, self.default, environ)


#: Read by the gateway (its deadline), gunicorn's config (a worker outlives it) and the proxy
#: (it waits for the gateway's answer longer than that).
TRITON_TIMEOUT_S = Setting("TRITON_TIMEOUT_S", 30.0, "seconds",
                           "deadline of one inference; past it the request answers 504")
#: Read by Triton's start command (the container) and the embedded stack (make serve).
TRITON_CACHE_BYTES = Setting("TRITON_CACHE_BYTES", 256 * 1024 * 1024, "bytes",
                             "size of Triton's local response cache (0: off)")
#: Read by the cpu flavour's engines inside Triton (:mod:`ocr_pipeline.engines`); the embedded
#: stack puts it under its var folder when unset (:func:`ocr_embedded.stack.engine_cache_dir`).
ENGINE_CACHE_DIR = Setting("OCR_ENGINE_CACHE_DIR", "", "path",
                           "OpenVINO's compiled models and precision decisions, kept between "
                           "starts (empty: not kept)")
#: Where gunicorn serves the gateway (``deploy/gunicorn.conf.py``); ``make serve`` listens
#: there with its proxy and puts gunicorn on a loopback port behind it.
HTTP_HOST = Setting("HTTP_HOST", "0.0.0.0", "address", "interface the gateway listens on")
HTTP_PORT = Setting("HTTP_PORT", 8000, "port", "port the gateway listens on")

#: The settings defined here, in documentation order.
SETTINGS = (TRITON_TIMEOUT_S, TRITON_CACHE_BYTES, ENGINE_CACHE_DIR, HTTP_HOST, HTTP_PORT)
