"""The gateway's Triton client, made from the settings; OCR of images and of opened documents'
pages through it; its failures as API errors.

One :class:`~ocr_inference.client.TritonClient` per process, created lazily (after gunicorn
forks) and shared by the worker's threads; it is made again when the settings it was made
from change (tests point it at their own Triton).
"""

from __future__ import annotations

import atexit
import threading

from django.conf import settings
from ocr_contract import limits
from ocr_contract.parameters import DETECTOR, LONG_SIDE
from ocr_contract.tensors import CRAFT_DETECTOR
from ocr_inference.client import OcrResult, TritonClient
from ocr_inference.errors import InferenceError

from . import admission, detectors, errors, metrics
from .intake.documents import Document, page_input

_lock = threading.Lock()
_client: TritonClient | None = None
_made_from: tuple | None = None


def get_client() -> TritonClient:
    """This process's client for ``TRITON_GRPC_URL`` / ``TRITON_MODEL``."""
    global _client, _made_from
    wanted = (settings.TRITON_GRPC_URL, settings.TRITON_MODEL, settings.TRITON_TIMEOUT_S,
              settings.TRITON_SHARED_MEMORY_BYTES if settings.TRITON_SHARED_MEMORY else 0)
    with _lock:
        if _client is None or _made_from != wanted:
            if _client is not None:
                _client.close()
            _client, _made_from = TritonClient(*wanted), wanted
        return _client


def api_error(error: InferenceError) -> errors.ApiError:
    """The API error a client sees for ``error``, counted in ``ocr_triton_errors_total``."""
    metrics.TRITON_ERRORS.labels(error.code).inc()
    return errors.from_inference(error, retry_after=settings.TRITON_RETRY_AFTER_S)


def page_kind(document: Document) -> str:
    """How admission costs the pages of ``document``: a document's pages (a PDF, a
    multi-page TIFF) apart from images (:data:`ocr_api.admission.policy.DEFAULT_PAGE_S`)."""
    return admission.DOCUMENT if document.paged else admission.IMAGE


def cost_kind(kind: str, parameters: dict) -> str:
    """How admission costs a page of ``kind`` read with ``parameters`` (their detector
    concrete, :func:`ocr_api.detectors.resolved`): apart for each detector, whose pages cost
    about ten times each other's (:func:`ocr_api.admission.policy.page_cost_s`)."""
    detector = parameters.get(DETECTOR.name)
    return kind if detector in (None, CRAFT_DETECTOR) else f"{kind}/{detector}"


def working_scale(parameters: dict) -> float:
    """A page's working size read with ``parameters``, in default working sizes' pixels
    (:func:`ocr_api.admission.policy.working_scale` of an explicit ``long_side``)."""
    return admission.policy.working_scale(parameters.get(LONG_SIDE.name))


def default_cost_kinds() -> dict[str, str]:
    """``{page kind: cost kind}`` of a request that names no detector (:func:`cost_kind` with
    the deployment's detector): what /api/ready and the sync page limit report."""
    default = {DETECTOR.name: detectors.choose().detector}
    return {kind: cost_kind(kind, default) for kind in (admission.IMAGE, admission.DOCUMENT)}


def infer(image: bytes, parameters: dict, kind: str = admission.IMAGE) -> OcrResult:
    """OCR of one image (or page of ``kind``) by the ensemble of its detector
    (:mod:`ocr_api.detectors`), admitted first (:mod:`ocr_api.admission`) as the current
    request's caller.

    Raises:
        errors.Overloaded, errors.KeyBusy, errors.PageTooSlow: see
            :meth:`ocr_api.admission.Admission.admit`.
        errors.ApiError: see :func:`ocr_api.errors.from_inference`.
    """
    parameters = detectors.resolved(parameters)
    admitted = admission.get().admit(admission.current_caller.get(),
                                     [cost_kind(kind, parameters)], [working_scale(parameters)])
    try:
        with admitted.page(0) as call:
            result = get_client().infer(image, parameters, timeout_s=call.timeout_s)
            call.cached = result.cached
            return result
    except InferenceError as error:
        raise api_error(error) from error


def infer_job_page(document: Document, index: int, parameters: dict,
                   give_up_s: float) -> OcrResult:
    """OCR of page ``index`` (0-based) of a job's document with the job's ``parameters``:
    never refused, it waits until synchronous requests would still find room
    (:meth:`ocr_api.admission.Admission.job_page`, at most ``give_up_s`` seconds), then for
    its turn; its deadline is a job page's (``OCR_JOB_PAGE_TIMEOUT_S`` from admission).

    Raises:
        errors.ApiError: see :func:`ocr_api.errors.from_inference`.
    """
    data, extra = page_input(document, index)
    parameters = detectors.resolved(parameters)
    try:
        with admission.get().job_page(cost_kind(page_kind(document), parameters), give_up_s,
                                      scale=working_scale(parameters)) as call:
            result = get_client().infer(data, {**parameters, **extra},
                                        timeout_s=call.timeout_s)
            call.cached = result.cached
            return result
    except InferenceError as error:
        raise api_error(error) from error


def concurrent_pages() -> int:
    """Pages (or images) of one request sent to Triton at once: ``TRITON_CONCURRENT_PAGES``
    (:data:`ocr_contract.limits.CONCURRENT_PAGES`), the Django setting when there is one."""
    value = getattr(settings, limits.CONCURRENT_PAGES.setting, None)
    return max(1, limits.CONCURRENT_PAGES.read() if value is None else int(value))


def infer_many(items: list[tuple[bytes, dict]], groups: list | None = None,
               kinds: list[str] | None = None) -> list[OcrResult | errors.ApiError | None]:
    """OCR of several images, sent in order, :func:`concurrent_pages` at a time, each with its
    own deadline from when it is sent
    (:meth:`~ocr_inference.client.TritonClient.infer_many`); the request is admitted once,
    before the first (:mod:`ocr_api.admission`), and every image is in the ledger while in
    flight, with the next one (``kinds``: per item, how admission costs it; images by
    default).

    Returns:
        per item its result, the API error it failed with, or None when it was not sent
        because an earlier item of its group (``groups``: the pages of one document) failed.

    Raises:
        errors.Overloaded, errors.KeyBusy, errors.PageTooSlow: the request is refused;
            nothing was sent.
    """
    if not items:
        return []
    items = [(image, detectors.resolved(parameters)) for image, parameters in items]
    admitted = admission.get().admit(admission.current_caller.get(), [
        cost_kind(kind, parameters) for kind, (_, parameters)
        in zip(kinds or [admission.IMAGE] * len(items), items)],
        [working_scale(parameters) for _, parameters in items])
    return [api_error(outcome) if isinstance(outcome, InferenceError) else outcome
            for outcome in get_client().infer_many(items, concurrent_pages(), groups,
                                                   around=admitted.page)]


def page_inputs(document: Document, parameters: dict) -> list[tuple[bytes, dict]]:
    """What Triton gets for every page of ``document``, in order: the page's bytes and the
    request's ``parameters`` with the inputs that pick the page
    (:func:`ocr_api.intake.documents.page_input`)."""
    return [(data, {**parameters, **extra})
            for data, extra in (page_input(document, index)
                                for index in range(document.page_count))]


def document_results(outcomes: list[OcrResult | errors.ApiError | None]) -> list[OcrResult]:
    """A document's page results, all of them, from its pages' outcomes (in page order).

    Raises:
        errors.ApiError: the first page that failed, of the same class, field and
            ``Retry-After``; its message prefixed with the page when there are several. (Pages
            not sent, None, all come after it: pages are sent in order and none after one
            failed.)
    """
    for number, outcome in enumerate(outcomes, start=1):
        if isinstance(outcome, errors.ApiError):
            if len(outcomes) == 1:
                raise outcome
            raise type(outcome)(f"Page {number} of {len(outcomes)}: {outcome.detail}",
                                field=outcome.field, retry_after=outcome.retry_after)
        if outcome is None:     # not possible without an earlier failure: a bug
            raise RuntimeError(f"page {number} of {len(outcomes)} was never sent")
    return outcomes


def infer_pages(document: Document, parameters: dict) -> list[OcrResult]:
    """OCR of every page of an opened document: the pages sent to Triton in order, at most
    :func:`concurrent_pages` at a time, each page's ``TRITON_TIMEOUT_S`` deadline from when it
    is sent (never spent waiting behind the document's other pages), none sent after one
    failed.

    Returns:
        one result per page, in page order.

    Raises:
        errors.ApiError: see :func:`document_results`.
    """
    inputs = page_inputs(document, parameters)
    kind = page_kind(document)
    if len(inputs) == 1:
        return [infer(*inputs[0], kind)]
    return document_results(infer_many(inputs, groups=[0] * len(inputs),
                                       kinds=[kind] * len(inputs)))


def infer_documents(documents: list[Document],
                    parameters: dict) -> list[list[OcrResult] | errors.ApiError]:
    """OCR of every page of several opened documents, as :func:`infer_pages` reads one: all
    their pages in order, at most :func:`concurrent_pages` at a time, each with its deadline
    from when it is sent; after a page fails, its document's later pages are not sent.

    Returns:
        per document, in order: its page results (as :func:`infer_pages` returns them), or
        the API error it failed with (as :func:`infer_pages` raises it); one failed document
        does not fail the others.
    """
    inputs = [page_inputs(document, parameters) for document in documents]
    outcomes = iter(infer_many([item for pages in inputs for item in pages],
                               groups=[number for number, pages in enumerate(inputs)
                                       for _ in pages],
                               kinds=[page_kind(document) for document, pages
                                      in zip(documents, inputs) for _ in pages]))
    answers: list[list[OcrResult] | errors.ApiError] = []
    for pages in inputs:
        try:
            answers.append(document_results([next(outcomes) for _ in pages]))
        except errors.ApiError as error:
            answers.append(error)
    return answers


@atexit.register
def close_client() -> None:
    """Close this process's channel (at exit, before gRPC's module teardown)."""
    global _client, _made_from
    with _lock:
        if _client is not None:
            _client.close()
            _client, _made_from = None, None
