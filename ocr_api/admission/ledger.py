"""Where the pages in flight to Triton are written down: one ledger for every gateway worker,
job worker and replica that sends to the same Triton.

:class:`RedisLedger` keeps it in the jobs' broker (``OCR_BROKER_URL``, when it is
``redis://``): the processes of ``make serve``, the compose stack and the Kubernetes
manifests all reach it. :class:`LocalLedger` keeps it in this process (tests, a broker that is
not Redis, and while Redis does not answer). An entry expires at its page's deadline, so a
process that died with pages in flight does not hold their place for longer than that.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Entry:
    """One page in flight.

    Attributes:
        caller: who sent it (:func:`ocr_api.admission.caller_of`), for the per-caller share.
        cost_s: what the page was expected to take alone when it was sent, seconds.
        sent_at: when it was sent, seconds since the epoch.
        expires_at: its deadline, seconds since the epoch (then the entry is dropped).
    """

    caller: str
    cost_s: float
    sent_at: float
    expires_at: float


@dataclass(frozen=True)
class Snapshot:
    """The ledger at one moment.

    Attributes:
        entries: the pages in flight, unexpired.
        waiting: callers refused recently, each until when it holds its share (epoch s).
        page_s: the measured cost of a page alone per kind (``image``, ``document``: see
            :data:`ocr_api.admission.policy.DEFAULT_PAGE_S`), seconds; a kind not measured
            yet is absent.
    """

    entries: list[Entry]
    waiting: dict[str, float]
    page_s: dict[str, float]


#: Weight of a new measurement in a page cost's moving average: about the last ten pages.
EWMA_WEIGHT = 0.2


def updated_average(previous: float | None, sample: float) -> float:
    """The page cost's exponentially weighted moving average after ``sample`` (seconds)."""
    return sample if previous is None else previous + EWMA_WEIGHT * (sample - previous)


class LocalLedger:
    """The ledger in this process's memory, shared by its threads."""

    def __init__(self):
        self._lock = threading.RLock()
        self._entries: dict[str, Entry] = {}
        self._waiting: dict[str, float] = {}
        self._page_s: dict[str, float] = {}

    def locked(self):
        """Held around a check and the entry after it (re-entrant: the calls inside take it
        too)."""
        return self._lock

    def snapshot(self, now: float) -> Snapshot:
        with self._lock:
            self._entries = {token: entry for token, entry in self._entries.items()
                             if entry.expires_at > now}
            self._waiting = {caller: until for caller, until in self._waiting.items()
                             if until > now}
            return Snapshot(list(self._entries.values()), dict(self._waiting),
                            dict(self._page_s))

    def add(self, token: str, entry: Entry) -> None:
        with self._lock:
            self._entries[token] = entry

    def remove(self, token: str) -> None:
        with self._lock:
            self._entries.pop(token, None)

    def hold_share(self, caller: str, until: float) -> None:
        with self._lock:
            self._waiting[caller] = max(until, self._waiting.get(caller, 0.0))

    def observe(self, kind: str, sample_s: float) -> None:
        with self._lock:
            self._page_s[kind] = updated_average(self._page_s.get(kind), sample_s)


class RedisLedger:
    """The ledger in Redis: a hash of entries (token -> JSON), a hash of waiting callers and
    one of the page costs by kind, under ``prefix``; a check and the entry after it are made
    under a Redis lock (redis-py's :class:`~redis.lock.Lock`, expiring after 2 s should its
    holder die)."""

    def __init__(self, url: str, prefix: str = "ocr:admission:", timeout_s: float = 0.5):
        import redis

        self.client = redis.Redis.from_url(url, socket_timeout=timeout_s,
                                           socket_connect_timeout=timeout_s)
        self.entries_key, self.waiting_key, self.page_key = (
            prefix + "pages", prefix + "waiting", prefix + "page_s")
        self.lock_key = prefix + "lock"

    def locked(self):
        """The lock held around a check and the entry after it; raises
        :class:`redis.exceptions.LockError` (a RedisError) when not had within 2 s."""
        return self.client.lock(self.lock_key, timeout=2.0, blocking_timeout=2.0)

    def snapshot(self, now: float) -> Snapshot:
        raw_entries, raw_waiting, raw_page = (
            self.client.pipeline(transaction=False).hgetall(self.entries_key)
            .hgetall(self.waiting_key).hgetall(self.page_key).execute())
        entries, expired = [], []
        for token, value in raw_entries.items():
            entry = Entry(**json.loads(value))
            (entries if entry.expires_at > now else expired).append((token, entry))
        waiting = {caller.decode(): float(until) for caller, until in raw_waiting.items()}
        gone = [caller for caller, until in waiting.items() if until <= now]
        if expired or gone:
            pipe = self.client.pipeline(transaction=False)
            if expired:
                pipe.hdel(self.entries_key, *[token for token, _ in expired])
            if gone:
                pipe.hdel(self.waiting_key, *gone)
            pipe.execute()
        return Snapshot([entry for _, entry in entries],
                        {caller: until for caller, until in waiting.items() if until > now},
                        {kind.decode(): float(value) for kind, value in raw_page.items()})

    def add(self, token: str, entry: Entry) -> None:
        self.client.hset(self.entries_key, token, json.dumps(asdict(entry)))

    def remove(self, token: str) -> None:
        self.client.hdel(self.entries_key, token)

    def hold_share(self, caller: str, until: float) -> None:
        """Keep the later of ``until`` and the caller's hold (as :class:`LocalLedger` does);
        called under :meth:`locked`, so the read and the write are one step."""
        held = self.client.hget(self.waiting_key, caller)
        if held is None or float(held) < until:
            self.client.hset(self.waiting_key, caller, until)

    def observe(self, kind: str, sample_s: float) -> None:
        raw = self.client.hget(self.page_key, kind)
        self.client.hset(self.page_key, kind,
                         updated_average(float(raw) if raw is not None else None, sample_s))


def now() -> float:
    """Seconds since the epoch (the ledger's clock: shared by processes and hosts)."""
    return time.time()
