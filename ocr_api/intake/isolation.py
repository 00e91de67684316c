"""Native parsers run in child processes, so a crash or a hang of their C/C++ code costs one
request, not a gateway worker process and every request it serves.

Why: opening an upload (:mod:`ocr_api.intake.documents`) runs PDFium (pypdfium2), qpdf
(pikepdf) and Pillow's decoders on bytes a client chose. Seeded fuzzing of our own documents
found no crash and no hang, but the libraries' trackers show that crafted files have done both:
qpdf's infinite loop on a circular xref (qpdf #149, CVE-2017-18186) and its stack overflows on
deep nesting (#99, #101, #117-#120), a segfault in pikepdf (#10), PDFium crashes found by
OSS-Fuzz. In a gunicorn worker such a file would kill the process (every request it holds gets
a bare 502) or stop a thread for good. Here it kills one parser process, and the request is
refused with a code.

How: each process that opens documents (a gunicorn worker, a jobs worker) has its own
:class:`ParserPool`, made on first use (:func:`shared_pool`, keyed by the process id, so a pool
made before a fork is never used by the child). The pool keeps up to ``processes`` parser
processes, each serving one call at a time over its own pipe; a call checks one out, so one
process's crash or kill fails that call alone and the others carry on (a
``concurrent.futures.ProcessPoolExecutor`` cannot do this: one dead worker breaks the whole
executor and every call in flight on it, and a running task cannot be stopped without killing
the executor's processes). Parser processes are started by the ``forkserver`` context, never
by a plain fork of the calling process: a gthread worker has threads (gunicorn's, gRPC's), and
forking a threaded process can leave a lock held forever in the child. The fork server is a
fresh single-threaded interpreter that imports the parsers once (:data:`PRELOAD`), so a new
parser process starts in milliseconds. (As with any multiprocessing child, a parser process
first imports the caller's ``__main__`` module when it is a file: gunicorn's script,
``manage.py`` and pytest are harmless; a script that opens documents must keep its work under
``if __name__ == "__main__"``. Only the process that started the fork server may use it: the
gunicorn master never opens a document, so its workers each start their own.)

What it costs (``make bench-documents``; AMD EPYC, 2 cores, warm pool, median of 50): +0.3 ms
to open a 1-page scanned PDF, +1.2 ms for a 10-page one (its pages come back through the
pipe), +0.2 ms for a JPEG's header, +5.6 ms for an upload at the 20 MiB limit: arguments of
:data:`SHARE_MIN_BYTES` or more are copied into a shared-memory buffer of the process's own
rather than written through its pipe. A new parser process takes ~15 ms (started in the
background after a crash or kill); the fork server ~1 s, with the pool's first call
(:meth:`ParserPool.warm_up` ahead of it). Memory: ~60 MiB PSS per pool with 2 processes (the
fork server, multiprocessing's resource tracker, the processes, sharing the parsers' pages),
plus each process's buffer (up to :data:`SHARE_KEEP_BYTES` once a large upload came).

In a parser process: ``RLIMIT_AS`` (``memory_bytes``) caps its address space (an allocation
past it raises ``MemoryError`` in Python code, or kills the process in native code); SIGINT is
ignored (a terminal's Ctrl-C is for the gateway), and it ends when its caller's end of the pipe
closes or, on Linux, when the fork server does (which ends with its owner). What comes back is
unpickled without globals (:class:`_PlainUnpickler`: tuples, strings, numbers, bytes only), so
even a parser process taken over by a malicious file cannot make its caller build objects.

Errors a call raises (:meth:`ParserPool.call`): :class:`ParserCrashed`,
:class:`ParserTimedOut`, :class:`ParserOutOfMemory` (each logged at warning, with counts and
codes only, never content), and :class:`ParserFailed` for any other exception in the function
run (a bug: its traceback goes to the log, as it would in process).
"""

from __future__ import annotations

import io
import logging
import mmap
import multiprocessing
import os
import pickle
import signal
import threading
import traceback
from typing import Any, Callable

logger = logging.getLogger(__name__)

#: Imported once by the fork server, so parser processes start with them loaded.
PRELOAD = ("ocr_api.intake.documents", "pikepdf", "pypdfium2", "PIL.TiffImagePlugin")
#: Seconds a new parser process may take to say it is ready (the first one of a process also
#: starts the fork server, which imports :data:`PRELOAD`: about a second).
START_TIMEOUT_S = 60.0

_READY = b"ready"
#: Arguments of this many bytes or more go to the parser process through a shared-memory
#: buffer of its own (a memfd, Linux), not through its pipe: 20 MiB cost ~40-70 ms through
#: the pipe, ~5 ms copied into a buffer whose pages stay mapped.
SHARE_MIN_BYTES = 64 * 1024
#: The part of each process's buffer kept in memory between calls (the default upload
#: limit, OCR_MAX_UPLOAD_BYTES: so at most that per parser process, once such an upload came);
#: pages past it are given back after each call (``MADV_REMOVE``), so a job's larger upload
#: does not hold memory afterwards. Pages given back cost their faults again on the next
#: call: a 20 MiB upload takes ~7 ms into a kept buffer, ~28 ms when only 4 MiB are kept.
SHARE_KEEP_BYTES = 20 * 1024 * 1024
_SHARING = hasattr(os, "memfd_create") and hasattr(mmap, "MADV_REMOVE")


class ParserError(Exception):
    """A call to a parser process did not return a value."""


class ParserCrashed(ParserError):
    """The parser process died during the call (a signal such as SIGSEGV or SIGABRT, or an
    exit). Attributes: ``exitcode`` (negative: the signal's number)."""

    def __init__(self, message: str, exitcode: int | None):
        super().__init__(message)
        self.exitcode = exitcode


class ParserTimedOut(ParserError):
    """The call took longer than its timeout; its process was killed."""


class ParserOutOfMemory(ParserError):
    """The function run ran out of the process's address space (``MemoryError``); the process
    was ended."""


class ParserFailed(ParserError):
    """The function run raised an exception (the message holds its traceback)."""


class _PlainUnpickler(pickle.Unpickler):
    """Unpickles plain data only: anything that needs a class or function is refused."""

    def find_class(self, module: str, name: str):
        raise pickle.UnpicklingError(f"a parser process may not send {module}.{name}")


def _plain_loads(payload: bytes) -> Any:
    return _PlainUnpickler(io.BytesIO(payload)).load()


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when its parent (the fork server) ends."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class _Shared:
    """An argument left in the shared buffer: ``length`` bytes at ``offset``."""

    def __init__(self, offset: int, length: int):
        self.offset, self.length = offset, length


def _serve(conn, memory_bytes: int) -> None:
    """A parser process's loop: for each ``("call", function, args)`` received, run it and
    send back ``("value", result)``, ``("memory",)`` or ``("raised", traceback_text)``; a
    ``("buffer", size)`` message comes with the file descriptor of a new shared buffer. Ends
    on EOF."""
    import resource
    from multiprocessing import reduction

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    if memory_bytes > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    conn.send_bytes(_READY)
    buffer = None
    while True:
        try:
            message = pickle.loads(conn.recv_bytes())
            if message[0] == "buffer":
                descriptor = reduction.recv_handle(conn)
                if buffer is not None:
                    buffer.close()
                buffer = mmap.mmap(descriptor, message[1], prot=mmap.PROT_READ)
                os.close(descriptor)
                continue
        except EOFError:
            return
        _, function, args = message
        try:
            args = tuple(buffer[arg.offset:arg.offset + arg.length]
                         if isinstance(arg, _Shared) else arg for arg in args)
            reply = ("value", function(*args))
        except MemoryError:
            reply = ("memory",)
        except Exception:  # noqa: BLE001 - sent back whole, raised there as ParserFailed
            reply = ("raised", traceback.format_exc())
        try:
            payload = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except MemoryError:
            reply, payload = ("memory",), pickle.dumps(("memory",))
        except Exception:  # noqa: BLE001 - a value that cannot be sent is the function's bug
            reply = ("raised", traceback.format_exc())
            payload = pickle.dumps(reply)
        del function, args
        conn.send_bytes(payload)
        if reply[0] == "memory":        # its heap may be in any state: start afresh
            return


def _describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "no exit status"
    if exitcode < 0:
        try:
            return f"signal {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"signal {-exitcode}"
    return f"exit status {exitcode}"


class _Worker:
    """One parser process and the parent's end of its pipe; used by one thread at a time."""

    def __init__(self, context, memory_bytes: int):
        self._buffer: mmap.mmap | None = None          # the shared buffer, made when needed
        parent_end, child_end = context.Pipe(duplex=True)
        self.process = context.Process(target=_serve, args=(child_end, memory_bytes),
                                       name="ocr-parser", daemon=True)
        self.process.start()
        child_end.close()
        self.conn = parent_end
        self.memory_bytes = memory_bytes
        try:
            ready = self.conn.poll(START_TIMEOUT_S) and self.conn.recv_bytes() == _READY
        except (EOFError, OSError):
            ready = False
        if not ready:
            self.stop()
            raise RuntimeError(
                f"A parser process did not start ({_describe_exit(self.process.exitcode)}); "
                f"is OCR_PARSER_MEMORY_BYTES ({memory_bytes}) too small?")

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.is_alive() and not self.conn.closed

    def send(self, function: Callable, args: tuple) -> int:
        """Send one call; the bytes sent. Raises ``BrokenPipeError`` (or another ``OSError``)
        when the process is already gone."""
        shared = 0
        if _SHARING:
            large = sum(len(arg) for arg in args
                        if isinstance(arg, bytes) and len(arg) >= SHARE_MIN_BYTES)
            if large:
                args, shared = self._share(args, large), large
        payload = pickle.dumps(("call", function, args), protocol=pickle.HIGHEST_PROTOCOL)
        self.conn.send_bytes(payload)
        return len(payload) + shared

    def _share(self, args: tuple, large: int) -> tuple:
        """``args`` with each large ``bytes`` copied into the shared buffer (grown, and sent
        to the process, when too small) and replaced by a :class:`_Shared`."""
        from multiprocessing import reduction

        if self._buffer is None or len(self._buffer) < large:
            size = -(-large // (1 << 20)) << 20                    # whole MiB
            descriptor = os.memfd_create("ocr-parser-upload", os.MFD_CLOEXEC)
            try:
                os.ftruncate(descriptor, size)
                buffer = mmap.mmap(descriptor, size)
                self.conn.send_bytes(pickle.dumps(("buffer", size)))
                reduction.send_handle(self.conn, descriptor, self.process.pid)
            finally:
                os.close(descriptor)
            if self._buffer is not None:
                self._buffer.close()
            self._buffer = buffer
        placed, offset = [], 0
        for arg in args:
            if isinstance(arg, bytes) and len(arg) >= SHARE_MIN_BYTES:
                self._buffer[offset:offset + len(arg)] = arg
                placed.append(_Shared(offset, len(arg)))
                offset += len(arg)
            else:
                placed.append(arg)
        return tuple(placed)

    def release(self) -> None:
        """Give back the buffer's pages past :data:`SHARE_KEEP_BYTES` (after a call)."""
        if self._buffer is not None and len(self._buffer) > SHARE_KEEP_BYTES:
            self._buffer.madvise(mmap.MADV_REMOVE, SHARE_KEEP_BYTES,
                                 len(self._buffer) - SHARE_KEEP_BYTES)

    def receive(self, timeout_s: float, sent: int) -> Any:
        """The call's value, within ``timeout_s`` seconds of now."""
        if not self.conn.poll(timeout_s):
            self.stop()
            logger.warning("Parser process %s killed: no answer within %d ms (%d bytes sent).",
                           self.pid, round(timeout_s * 1000), sent)
            raise ParserTimedOut(f"no answer within {timeout_s:.3f} s")
        try:
            # A reply cannot be larger than the process's whole address space.
            payload = self.conn.recv_bytes(self.memory_bytes or None)
        except (EOFError, OSError):
            self.stop(kill=False)
            how = _describe_exit(self.process.exitcode)
            logger.warning("Parser process %s died (%s) opening %d bytes.", self.pid, how, sent)
            raise ParserCrashed(f"the parser process died ({how})",
                                self.process.exitcode) from None
        try:
            reply = _plain_loads(payload)
        except Exception as exc:  # noqa: BLE001 - whatever the bytes were, they are refused
            self.stop()
            raise ParserFailed(f"the parser process's reply was refused: {exc}") from None
        if isinstance(reply, tuple) and len(reply) == 2 and reply[0] == "value":
            return reply[1]
        self.stop()
        if reply == ("memory",):
            logger.warning("Parser process %s ran out of its %d bytes opening %d bytes.",
                           self.pid, self.memory_bytes, sent)
            raise ParserOutOfMemory(f"more than {self.memory_bytes} bytes of address space")
        if isinstance(reply, tuple) and len(reply) == 2 and reply[0] == "raised":
            raise ParserFailed(f"the parser process raised:\n{reply[1]}")
        raise ParserFailed("the parser process sent something that is not a reply")

    def stop(self, kill: bool = True) -> None:
        """End the process (SIGKILL: it may be stuck in C code) and reap it; ``kill=False``
        for one that is exiting on its own (given a second, to read its exit status)."""
        if kill and self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5 if kill else 1)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)
        self.conn.close()
        if self._buffer is not None:
            self._buffer.close()
            self._buffer = None


class ParserPool:
    """Up to ``processes`` parser processes, started as calls need them.

    A process that crashed, was killed at its timeout or ran out of memory is replaced in the
    background at once, so the next call does not wait for it (a new process takes ~15 ms
    from a running fork server; the fork server itself, started with the first process of
    the pool's process, ~1 s: :meth:`warm_up` does that ahead of the first request).

    Args:
        processes: most parser processes, hence most calls running at once; a call beyond
            waits for a free process (each call ends within its timeout, so the wait is
            bounded too).
        memory_bytes: each process's ``RLIMIT_AS`` in bytes (0: no limit).
        context: the multiprocessing start method, ``forkserver`` (or ``spawn``; never
            ``fork``, see the module's docstring).
    """

    def __init__(self, processes: int, memory_bytes: int, context: str = "forkserver"):
        if processes < 1:
            raise ValueError(f"a parser pool needs at least one process, not {processes}")
        if context == "fork":
            raise ValueError("parser processes are never forked from a threaded process")
        self.processes = processes
        self.memory_bytes = memory_bytes
        self.pid = os.getpid()
        self._context = multiprocessing.get_context(context)
        if context == "forkserver":
            # Global to the process's one fork server; only read when it starts.
            self._context.set_forkserver_preload(list(PRELOAD))
        self._slots = threading.BoundedSemaphore(processes)
        self._changed = threading.Condition()
        # Guarded by _changed: the idle processes, and how many exist or are being started.
        self._idle: list[_Worker] = []
        self._count = 0
        self._closed = False

    def call(self, function: Callable, args: tuple, timeout_s: float) -> Any:
        """``function(*args)`` in a parser process, and its value.

        Args:
            function: a module-level function the parser process can import (it is sent by
                reference), taking every setting it needs as an argument: none of the
                caller's state (Django settings, test overrides, monkeypatches) reaches it.
            args: picklable arguments.
            timeout_s: most seconds the call may run, from when it was sent (waiting for a
                free process and starting one do not count).

        Returns:
            The value, which must be plain data (tuples, lists, dicts, strings, numbers,
            bytes, None): nothing else is accepted back.

        Raises:
            ParserTimedOut: no answer in time; the process was killed.
            ParserCrashed: the process died during the call.
            ParserOutOfMemory: the function raised ``MemoryError``; the process was ended.
            ParserFailed: the function raised another exception, or sent back something
                other than plain data.
        """
        with self._slots:
            for attempt in (1, 2):
                worker = self._checkout()
                try:
                    sent = worker.send(function, args)
                except OSError:
                    # Died while idle (killed from outside): not this call's doing.
                    self._discard(worker)
                    if attempt == 2:
                        raise
                    continue
                try:
                    value = worker.receive(timeout_s, sent)
                    worker.release()
                except BaseException:
                    self._discard(worker)
                    raise
                self._checkin(worker)
                return value
        raise AssertionError("unreachable")

    def pids(self) -> list[int]:
        """The process ids of the idle parser processes (for tests and diagnostics)."""
        with self._changed:
            return [worker.pid for worker in self._idle]

    def warm_up(self) -> None:
        """Start every parser process (and the fork server) now, rather than in the first
        calls; returns when they are ready."""
        held = []
        try:
            for _ in range(self.processes):
                self._slots.acquire()
                held.append(self._checkout())
        finally:
            for worker in held:
                self._checkin(worker)
                self._slots.release()

    def close(self) -> None:
        """End the idle processes now, and each busy one when its call returns."""
        with self._changed:
            self._closed, idle, self._idle = True, self._idle, []
            self._count -= len(idle)
        for worker in idle:
            worker.stop()

    def _checkout(self) -> _Worker:
        """An idle process, or a new one; the caller holds a slot, so one is coming."""
        while True:
            with self._changed:
                while not self._idle and self._count >= self.processes:
                    self._changed.wait()        # a replacement is being started
                if not self._idle:
                    self._count += 1
                    worker = None
                else:
                    worker = self._idle.pop()
            if worker is None:
                return self._start()
            if worker.alive():
                return worker
            self._discard(worker, replace=False)

    def _start(self) -> _Worker:
        """A new process, counted in ``_count`` by the caller."""
        try:
            return _Worker(self._context, self.memory_bytes)
        except BaseException:
            with self._changed:
                self._count -= 1
                self._changed.notify()
            raise

    def _checkin(self, worker: _Worker) -> None:
        with self._changed:
            if not self._closed:
                self._idle.append(worker)
                self._changed.notify()
                return
            self._count -= 1
        worker.stop()

    def _discard(self, worker: _Worker, replace: bool = True) -> None:
        """End a process whose call failed, and start its replacement in the background."""
        worker.stop()
        with self._changed:
            self._count -= 1
            replace = replace and not self._closed
            if replace:
                self._count += 1
            self._changed.notify()
        if replace:
            threading.Thread(target=self._replace, name="ocr-parser-start", daemon=True).start()

    def _replace(self) -> None:
        try:
            worker = self._start()
        except Exception:  # noqa: BLE001 - the next call starts one itself (and says why)
            logger.exception("A parser process could not be started.")
            return
        self._checkin(worker)


_shared: ParserPool | None = None
_shared_lock = threading.Lock()


def shared_pool(processes: int, memory_bytes: int) -> ParserPool:
    """This process's parser pool, made on first use after any fork (a pool inherited from a
    parent process belongs to that parent and is left alone). Asked with other settings (a
    test's override), the pool is replaced."""
    global _shared
    with _shared_lock:
        pool = _shared
        if pool is not None and pool.pid == os.getpid() and \
                (pool.processes, pool.memory_bytes) == (processes, memory_bytes):
            return pool
        if pool is not None and pool.pid == os.getpid():
            pool.close()
        _shared = ParserPool(processes, memory_bytes)
        return _shared
