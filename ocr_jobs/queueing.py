"""Fair order between keys: the broker holds at most ``OCR_JOB_WINDOW`` pages of one key; the
rest wait in the database (``pending``) and are sent as pages end (docs/jobs-broker.md: a
2-page job of a second key then finishes in a fraction of a second behind a 300-page one).

A page is marked ``queued`` in the transaction that decides to send it, and sent when that
transaction commits; a send that fails is tried again while the broker is down. A process killed
between the commit and the send leaves pages ``queued`` that the broker never got:
:func:`recover` (run once when the workers start) sends every ``queued`` page again — a page
sent twice is read once (:mod:`ocr_jobs.tasks`).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ocr_api.models import ApiKey

from .broker import PAGES_QUEUE, READ_PAGE, get_broker, send
from .models import Job, JobPage

logger = logging.getLogger(__name__)


#: Seconds between attempts to send pages while the broker is down, and how long to try.
RESEND_EVERY_S, RESEND_FOR_S = 1.0, 600.0


def _send(page_ids: list[int], tried_s: float = 0.0) -> None:
    """Send the pages; while the broker is down, try again every :data:`RESEND_EVERY_S` in
    a background thread (the pages stay ``queued``: they hold their key's window, and a
    process that dies meanwhile leaves them to :func:`recover`)."""
    for number, page_id in enumerate(page_ids):
        try:
            send(PAGES_QUEUE, READ_PAGE, page_id)
        except Exception as error:  # noqa: BLE001 - the broker is down, or restarting
            rest = page_ids[number:]
            if tried_s >= RESEND_FOR_S:
                logger.error("gave up sending %d pages: %s; they wait for the next start "
                             "of the workers", len(rest), error)
                return
            logger.warning("could not send %d pages (%s); trying again", len(rest), error)
            timer = threading.Timer(RESEND_EVERY_S, _send, (rest, tried_s + RESEND_EVERY_S))
            timer.daemon = True
            timer.start()
            return


def top_up(api_key_id: int | None) -> list[int]:
    """Mark the key's next pending pages ``queued`` until it has ``OCR_JOB_WINDOW`` in the
    broker, oldest job first, and send them when the transaction commits.

    Returns:
        the ids of the pages marked.
    """
    with transaction.atomic():
        if api_key_id is not None:
            # Serialises top-ups of one key (on SQLite the IMMEDIATE transaction already does).
            list(ApiKey.objects.select_for_update().filter(id=api_key_id).values_list("id"))
        pages = JobPage.objects.filter(api_key_id=api_key_id)
        free = settings.OCR_JOB_WINDOW - pages.filter(status=JobPage.QUEUED).count()
        if free <= 0:
            return []
        ids = list(pages.filter(status=JobPage.PENDING, job__status__in=Job.ACTIVE)
                   .order_by("job__created", "number").values_list("id", flat=True)[:free])
        if ids:
            JobPage.objects.filter(id__in=ids).update(status=JobPage.QUEUED,
                                                      updated=timezone.now())
            transaction.on_commit(lambda: _send(ids))
    return ids


#: A queued page younger than this is being sent right now; :func:`recover` leaves it.
RECOVER_AFTER_S = 30.0


def pages_in_broker() -> set[int] | None:
    """Ids of the pages the broker holds (waiting, delayed or in progress), read from Redis'
    message hashes; None for a broker that cannot be looked into (RabbitMQ)."""
    broker = get_broker()
    client = getattr(broker, "client", None)
    if client is None:
        return None
    ids: set[int] = set()
    for name in (PAGES_QUEUE, f"{PAGES_QUEUE}.DQ"):
        for raw in client.hvals(f"{broker.namespace}:{name}.msgs"):
            try:
                message = json.loads(raw)
                if message.get("actor_name") == READ_PAGE:
                    ids.add(int(message["args"][0]))
            except (ValueError, KeyError, IndexError, TypeError):
                continue
    return ids


def recover() -> None:
    """Send again every ``queued`` page of an active job that the broker does not hold (a
    gateway or worker killed between a commit and its send, a broker that lost messages), then
    top up every key with pending pages. Run once when the workers start."""
    cutoff = timezone.now() - dt.timedelta(seconds=RECOVER_AFTER_S)
    queued = list(JobPage.objects.filter(status=JobPage.QUEUED, job__status__in=Job.ACTIVE,
                                         updated__lt=cutoff).values_list("id", flat=True))
    held = pages_in_broker() if queued else set()
    missing = [page_id for page_id in queued if held is None or page_id not in held]
    if missing:
        logger.info("sending %d queued pages the broker lacks again", len(missing))
        _send(missing)
    for api_key_id in set(JobPage.objects.filter(status=JobPage.PENDING,
                                                 job__status__in=Job.ACTIVE)
                          .values_list("api_key_id", flat=True)):
        top_up(api_key_id)
