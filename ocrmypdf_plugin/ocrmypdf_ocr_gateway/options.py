"""The plugin's options: where the service is, the key, and how long to wait for it.

Registered with OCRmyPDF under the ``gateway`` namespace (``options.gateway.url``...), given on
the command line as ``--gateway-url`` and so on, or through the environment, which keeps the key
out of the process list: a value given neither way is the variable's, then the default.
"""

from __future__ import annotations

import os
from argparse import ArgumentParser
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

NAMESPACE = "gateway"
#: Environment variables of the values not given on the command line.
URL_VARIABLE = "OCR_GATEWAY_URL"
KEY_VARIABLE = "OCR_GATEWAY_KEY"
#: Where `make serve` listens.
DEFAULT_URL = "http://localhost:8000"


class GatewayOptions(BaseModel):
    """Options of the ``gateway`` namespace.

    Attributes:
        url: the service's base URL (``/api/ocr`` and ``/api/models`` are under it).
        key: an API key of the service (``Authorization: Api-Key <key>``).
        timeout: seconds to wait for one page's answer once sent (the service answers a page in
            its own deadline, 30 s by default, or refuses it at once).
        max_wait: seconds one page may spend waiting out the service's refusals that say when
            to come back (429, 502 and 503 with ``Retry-After``), all its waits together; past it,
            the page fails with the service's message.
    """

    model_config = ConfigDict(frozen=True)      # hashable: one client per set of options

    url: Annotated[str, Field(description="the OCR gateway's base URL")] = Field(
        default_factory=lambda: os.environ.get(URL_VARIABLE, DEFAULT_URL))
    key: Annotated[str, Field(description="an API key of the OCR gateway")] = Field(
        default_factory=lambda: os.environ.get(KEY_VARIABLE, ""))
    timeout: Annotated[float, Field(gt=0, description="seconds to wait for a page's answer")] = \
        120.0
    max_wait: Annotated[float, Field(ge=0, description="seconds a page may wait out refusals")] = \
        600.0


def add_arguments(parser: ArgumentParser) -> None:
    """The namespace's command-line options, ``--gateway-<field>`` (stored as
    ``gateway_<field>``, where OCRmyPDF looks for a namespace's values)."""
    group = parser.add_argument_group(
        "OCR gateway",
        "Read pages with an OCR gateway's /api/ocr (the ocrmypdf_ocr_gateway plugin)")
    group.add_argument(f"--{NAMESPACE}-url", dest=f"{NAMESPACE}_url", metavar="URL",
                       help=f"the service's base URL (default: ${URL_VARIABLE}, else "
                            f"{DEFAULT_URL})")
    group.add_argument(f"--{NAMESPACE}-key", dest=f"{NAMESPACE}_key", metavar="KEY",
                       help=f"its API key (default: ${KEY_VARIABLE}; prefer the variable: a "
                            "command line is visible to every user of the machine)")
    group.add_argument(f"--{NAMESPACE}-timeout", dest=f"{NAMESPACE}_timeout", type=float,
                       metavar="SECONDS", help="seconds to wait for a page's answer (default 120)")
    group.add_argument(f"--{NAMESPACE}-max-wait", dest=f"{NAMESPACE}_max_wait", type=float,
                       metavar="SECONDS", help="seconds a page may spend waiting out the "
                                               "service's 429/502/503 Retry-After (default 600)")
