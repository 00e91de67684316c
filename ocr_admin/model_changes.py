"""Who loaded, unloaded or reloaded which Triton model, and what else it affected: recorded in
the admin's history (a :class:`~django.contrib.admin.models.LogEntry`, shown on the Triton
page and in the admin's "Recent actions") and in the log."""

from __future__ import annotations

import logging

from django.contrib.admin.models import CHANGE, LogEntry

from ocr_inference.model_control import Consequence

logger = logging.getLogger(__name__)

#: ``object_repr`` of the history entries of a Triton model. They have no content type: a
#: Triton model is not a database row.
REPR_PREFIX = "Triton model "
PAST_TENSE = {"load": "Loaded", "unload": "Unloaded", "reload": "Reloaded"}


def describe(action: str, name: str, consequences: list[Consequence]) -> str:
    """One sentence for the message, the history and the log, e.g. "Unloaded craft. Also
    affected: ensemble_ocr UNAVAILABLE (runs craft as a step)."."""
    text = f"{PAST_TENSE[action]} {name}."
    if consequences:
        text += " Also affected: " + "; ".join(
            f"{c.name} {c.state} ({c.reason})" for c in consequences) + "."
    return text


def record(user, action: str, name: str, consequences: list[Consequence]) -> str:
    """Record a done change in the admin history and the log (an unload as a warning).

    Returns:
        the sentence recorded (:func:`describe`).
    """
    message = describe(action, name, consequences)
    LogEntry.objects.create(user=user, content_type=None, object_id=name,
                            object_repr=REPR_PREFIX + name, action_flag=CHANGE,
                            change_message=message)
    level = logging.WARNING if action == "unload" else logging.INFO
    logger.log(level, "admin user %s: %s", user.get_username(), message)
    return message


def failed(user, action: str, name: str, error: Exception) -> None:
    """Log a change Triton refused or failed (nothing changed: no history entry)."""
    logger.error("admin user %s: %s %s failed: %s", user.get_username(), action, name, error)


def recent(limit: int = 10):
    """The latest changes of Triton models, newest first (LogEntry rows, user joined)."""
    return (LogEntry.objects.filter(content_type__isnull=True,
                                    object_repr__startswith=REPR_PREFIX)
            .select_related("user").order_by("-action_time")[:limit])
