"""Where the pages in flight to Triton are written down: one ledger for every gateway worker,
job worker and replica that sends to the same Triton.

:class:`RedisLedger` keeps it in the jobs' broker (``OCR_BROKER_URL``, when it is
``redis://``): the processes of ``make serve``, the compose stack and the Kubernetes
manifests all reach it. :class:`LocalLedger` keeps it in this process (tests, a broker that is
not Redis, and while Redis does not answer).

A page is written in when it is admitted and taken out when its answer comes (or its call
fails); in between it waits for its turn (:func:`~ocr_api.admission.policy.has_turn`), then
runs (:meth:`start` marks when). Its owner renews its lease (:meth:`renew`) every
:data:`RENEW_S` while it holds it; a page whose lease lapsed for :data:`LEASE_S` (its process
died: a gateway worker or a job worker killed mid-page) is dropped, as is a page past its
deadline, so a dead process never holds a turn or a place in the backlog for long.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass, field, replace

#: How often a process renews the leases of the pages it holds, seconds.
RENEW_S = 1.0
#: A page whose lease was not renewed for this long is dropped: its owner is gone, seconds.
LEASE_S = 5.0


@dataclass(frozen=True)
class Entry:
    """One page in flight.

    Attributes:
        caller: who sent it (:func:`ocr_api.admission.caller_of`), for the per-caller share.
        cost_s: what the page is expected to take alone, seconds.
        admitted_at: when it was written in, seconds since the epoch: its place in the queue
            (first come, first served).
        expires_at: its deadline, seconds since the epoch (then the entry is dropped).
        started_at: when its turn came and it was sent to Triton; None while it waits.
        reserved: the place a document's next page holds while the page before it is in
            flight (written with it, never sent itself: the next page is written in anew).
    """

    caller: str
    cost_s: float
    admitted_at: float
    expires_at: float
    started_at: float | None = None
    reserved: bool = False


@dataclass(frozen=True)
class Snapshot:
    """The ledger at one moment.

    Attributes:
        pages: the pages in flight (waiting for their turn or running), unexpired and leased,
            by token.
        waiting: callers refused recently, each until when it holds its share (epoch s).
        page_s: the measured cost of a page alone per kind (``image``, ``document``: see
            :data:`ocr_api.admission.policy.DEFAULT_PAGE_S`), seconds; a kind not measured
            yet is absent.
    """

    pages: dict[str, Entry]
    waiting: dict[str, float] = field(default_factory=dict)
    page_s: dict[str, float] = field(default_factory=dict)

    @property
    def entries(self) -> list[Entry]:
        """The pages in flight, in the order they were admitted."""
        return sorted(self.pages.values(), key=lambda entry: entry.admitted_at)


#: Weight of a new measurement in a page cost's moving average: about the last ten pages.
EWMA_WEIGHT = 0.2


def updated_average(previous: float | None, sample: float) -> float:
    """The page cost's exponentially weighted moving average after ``sample`` (seconds)."""
    return sample if previous is None else previous + EWMA_WEIGHT * (sample - previous)


def _current(entry: Entry, leased_at: float | None, now: float) -> bool:
    """Whether a page still counts: before its deadline, its lease renewed lately."""
    return entry.expires_at > now and leased_at is not None and now - leased_at < LEASE_S


class LocalLedger:
    """The ledger in this process's memory, shared by its threads."""

    def __init__(self):
        self._lock = threading.RLock()
        self._entries: dict[str, Entry] = {}
        self._leases: dict[str, float] = {}
        self._waiting: dict[str, float] = {}
        self._page_s: dict[str, float] = {}

    def locked(self):
        """Held around a check and the entry after it (re-entrant: the calls inside take it
        too)."""
        return self._lock

    def snapshot(self, now: float) -> Snapshot:
        with self._lock:
            self._entries = {token: entry for token, entry in self._entries.items()
                             if _current(entry, self._leases.get(token), now)}
            self._leases = {token: self._leases[token] for token in self._entries}
            self._waiting = {caller: until for caller, until in self._waiting.items()
                             if until > now}
            return Snapshot(dict(self._entries), dict(self._waiting), dict(self._page_s))

    def add(self, token: str, entry: Entry) -> None:
        with self._lock:
            self._entries[token] = entry
            self._leases[token] = entry.admitted_at

    def start(self, token: str, at: float) -> None:
        """Mark the page sent to Triton at ``at`` (epoch s)."""
        with self._lock:
            if token in self._entries:
                self._entries[token] = replace(self._entries[token], started_at=at)

    def renew(self, tokens: list[str], at: float) -> None:
        """Renew the leases of ``tokens`` (pages this process holds) at ``at``."""
        with self._lock:
            for token in tokens:
                if token in self._entries:
                    self._leases[token] = at

    def remove(self, token: str) -> None:
        with self._lock:
            self._entries.pop(token, None)
            self._leases.pop(token, None)

    def hold_share(self, caller: str, until: float) -> None:
        with self._lock:
            self._waiting[caller] = max(until, self._waiting.get(caller, 0.0))

    def observe(self, kind: str, sample_s: float) -> None:
        with self._lock:
            self._page_s[kind] = updated_average(self._page_s.get(kind), sample_s)


class RedisLedger:
    """The ledger in Redis: hashes of entries (token -> JSON), of their leases (token ->
    epoch s), of waiting callers and of the page costs by kind, under ``prefix``; a check and
    the entry after it are made under a Redis lock (redis-py's :class:`~redis.lock.Lock`,
    expiring after 2 s should its holder die)."""

    def __init__(self, url: str, prefix: str = "ocr:admission:", timeout_s: float = 0.5):
        import redis

        self.client = redis.Redis.from_url(url, socket_timeout=timeout_s,
                                           socket_connect_timeout=timeout_s)
        self.entries_key, self.leases_key, self.waiting_key, self.page_key = (
            prefix + "pages", prefix + "leases", prefix + "waiting", prefix + "page_s")
        self.lock_key = prefix + "lock"

    def locked(self):
        """The lock held around a check and the entry after it; raises
        :class:`redis.exceptions.LockError` (a RedisError) when not had within 2 s."""
        return self.client.lock(self.lock_key, timeout=2.0, blocking_timeout=2.0)

    def snapshot(self, now: float) -> Snapshot:
        raw_entries, raw_leases, raw_waiting, raw_page = (
            self.client.pipeline(transaction=False).hgetall(self.entries_key)
            .hgetall(self.leases_key).hgetall(self.waiting_key).hgetall(self.page_key)
            .execute())
        pages, gone_pages = {}, []
        for token, value in raw_entries.items():
            entry = Entry(**json.loads(value))
            leased_at = raw_leases.get(token)
            if _current(entry, float(leased_at) if leased_at is not None else None, now):
                pages[token.decode()] = entry
            else:
                gone_pages.append(token)
        waiting = {caller.decode(): float(until) for caller, until in raw_waiting.items()}
        gone = [caller for caller, until in waiting.items() if until <= now]
        if gone_pages or gone:
            pipe = self.client.pipeline(transaction=False)
            if gone_pages:
                pipe.hdel(self.entries_key, *gone_pages).hdel(self.leases_key, *gone_pages)
            if gone:
                pipe.hdel(self.waiting_key, *gone)
            pipe.execute()
        return Snapshot(pages,
                        {caller: until for caller, until in waiting.items() if until > now},
                        {kind.decode(): float(value) for kind, value in raw_page.items()})

    def add(self, token: str, entry: Entry) -> None:
        (self.client.pipeline(transaction=False)
         .hset(self.entries_key, token, json.dumps(asdict(entry)))
         .hset(self.leases_key, token, entry.admitted_at).execute())

    def start(self, token: str, at: float) -> None:
        """Mark the page sent to Triton at ``at`` (epoch s); only its owner writes it."""
        raw = self.client.hget(self.entries_key, token)
        if raw is not None:
            entry = replace(Entry(**json.loads(raw)), started_at=at)
            self.client.hset(self.entries_key, token, json.dumps(asdict(entry)))

    def renew(self, tokens: list[str], at: float) -> None:
        """Renew the leases of ``tokens`` (pages this process holds) at ``at``: one call."""
        if tokens:
            self.client.hset(self.leases_key, mapping={token: at for token in tokens})

    def remove(self, token: str) -> None:
        (self.client.pipeline(transaction=False).hdel(self.entries_key, token)
         .hdel(self.leases_key, token).execute())

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
