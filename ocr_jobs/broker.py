"""The Dramatiq broker of the jobs, made from the settings, with the settings
docs/jobs-broker.md measured: a 15-s heartbeat and maintenance on every command, so a SIGKILLed
worker's pages are redelivered after the heartbeat; Django's connections closed around each
message. ``OCR_BROKER_URL`` ``redis://…`` (``amqp://…`` works the same, with immediate
redelivery)."""

from __future__ import annotations

import threading

import dramatiq
from django.conf import settings
from django.db import close_old_connections
from dramatiq.middleware import Middleware

_lock = threading.Lock()
_broker = None

#: The queues and actors of :mod:`ocr_jobs.tasks`, named here so that what sends their
#: messages (:mod:`ocr_jobs.queueing`, :mod:`ocr_jobs.lifecycle`, the gateway) does not import
#: the actors (which import those modules back).
PAGES_QUEUE, READ_PAGE = "ocr_pages", "read_page"
WEBHOOKS_QUEUE, DELIVER_WEBHOOK = "ocr_webhooks", "deliver_webhook"


class DjangoConnections(Middleware):
    """Django's database connections closed before and after each message (a worker thread
    otherwise keeps a connection the database may have closed)."""

    def before_process_message(self, broker, message):
        close_old_connections()

    def after_process_message(self, broker, message, *, result=None, exception=None):
        close_old_connections()

    after_skip_message = after_process_message


def make_broker(url: str):
    """The broker for ``url``, with :class:`DjangoConnections`."""
    if url.startswith(("amqp://", "amqps://")):
        from dramatiq.brokers.rabbitmq import RabbitmqBroker

        broker = RabbitmqBroker(url=url)
    else:
        from dramatiq.brokers.redis import RedisBroker

        broker = RedisBroker(url=url, heartbeat_timeout=settings.OCR_JOB_HEARTBEAT_S * 1000,
                             maintenance_chance=1_000_000)
    broker.add_middleware(DjangoConnections())
    return broker


def send(queue_name: str, actor_name: str, *args, delay_ms: int | None = None):
    """Enqueue a message for the actor ``actor_name`` (one of the names above) on this
    process's broker, after ``delay_ms`` milliseconds if given; the worker that takes it applies
    the actor's own options (retries, time limit).

    Raises:
        redis.exceptions.ConnectionError: (or the broker's own error) the broker is down.
    """
    message = dramatiq.Message(queue_name=queue_name, actor_name=actor_name, args=args,
                               kwargs={}, options={})
    return get_broker().enqueue(message, delay=delay_ms)


def get_broker():
    """This process's broker (made once, and set as Dramatiq's global broker before any actor
    is declared)."""
    global _broker
    with _lock:
        if _broker is None:
            _broker = make_broker(settings.OCR_BROKER_URL)
            dramatiq.set_broker(_broker)
        return _broker
