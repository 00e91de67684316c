"""The jobs' serving stack for tests: a real ``redis-server`` (:class:`RedisServer`), real job
worker processes (:class:`JobWorkers`) and a real gunicorn, all on one SQLite file of their own
and pointed at the session's embedded Triton. Tests talk HTTP to gunicorn and read the file
with ``sqlite3`` (as tests/embedded/stack.py does), so the worker processes and the gateway see
the same rows."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import urllib3

from ocr_embedded.broker import JobWorkers, RedisServer
from ocr_embedded.launcher import free_port
from ocr_embedded.processes import spawn

ROOT = Path(__file__).resolve().parents[2]
MANAGE = ROOT / "manage.py"

_MAKE_KEYS = """
import json
from ocr_api.models import ApiKey
keys = {name: ApiKey.objects.create_key(name=name, rate_per_minute=100000, **options)[1]
        for name, options in {"a": {}, "b": {}, "quota": {"daily_quota": 50}}.items()}
print("KEYS " + json.dumps(keys))
"""


def manage(args: list[str], env: dict) -> str:
    done = subprocess.run([sys.executable, str(MANAGE), *args], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@dataclass
class JobsStack:
    var: Path
    env: dict
    redis: RedisServer
    workers: JobWorkers
    keys: dict
    port: int = 0
    threads: int = 4
    gunicorn: subprocess.Popen | None = None
    http: urllib3.PoolManager = field(default_factory=lambda: urllib3.PoolManager(
        timeout=urllib3.Timeout(connect=5, read=300), retries=False))

    # --- the gateway -------------------------------------------------------------------
    def start_gateway(self) -> None:
        self.port = self.port or free_port()
        log = open(self.var / "gunicorn.log", "ab")
        self.gunicorn = spawn(
            [sys.executable, "-m", "gunicorn", "gateway.wsgi:application",
             "--bind", f"127.0.0.1:{self.port}", "--workers", "1",
             "--threads", str(self.threads),
             "--timeout", "300"], cwd=ROOT, env={**os.environ, **self.env},
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if self.http.request("GET", self.url("/api/health")).status == 200:
                    return
            except urllib3.exceptions.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("gunicorn did not start:\n"
                           + (self.var / "gunicorn.log").read_text()[-3000:])

    def stop_gateway(self) -> None:
        if self.gunicorn is not None and self.gunicorn.poll() is None:
            os.killpg(self.gunicorn.pid, signal.SIGTERM)
            self.gunicorn.wait(timeout=30)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def request(self, method: str, path: str, key: str = "a", body: bytes | None = None,
                headers: dict | None = None, fields: dict | None = None):
        headers = {"Authorization": f"Api-Key {self.keys[key]}", **(headers or {})}
        if fields is not None:
            return self.http.request(method, self.url(path), fields=fields, headers=headers)
        return self.http.request(method, self.url(path), body=body, headers=headers)

    def submit(self, data: bytes, query: str = "", key: str = "a", headers: dict | None = None,
               content_type: str = "application/pdf"):
        return self.request("POST", f"/api/jobs{query}", key, body=data,
                            headers={"Content-Type": content_type, **(headers or {})})

    def job(self, job_id: str, key: str = "a") -> dict:
        response = self.request("GET", f"/api/jobs/{job_id}", key)
        assert response.status == 200, response.data
        return response.json()

    def wait(self, job_id: str, key: str = "a", timeout_s: float = 240,
             statuses=("succeeded", "failed", "cancelled")) -> dict:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            job = self.job(job_id, key)
            if job["status"] in statuses:
                return job
            time.sleep(0.2)
        raise AssertionError(f"job {job_id} still {job['status']} after {timeout_s} s: "
                             f"{job}\n{self.workers_log()}")

    # --- the database and logs --------------------------------------------------------
    def query(self, sql: str, *args) -> list[tuple]:
        """Run ``sql`` (``?`` placeholders) on the stack's database, SQLite or PostgreSQL."""
        url = self.env["DATABASE_URL"]
        if url.startswith("sqlite"):
            with sqlite3.connect(self.var / "db.sqlite3", timeout=30) as db:
                return db.execute(sql, args).fetchall()
        import psycopg

        with psycopg.connect(url, autocommit=True) as db:
            cursor = db.execute(sql.replace("?", "%s"), args)
            return cursor.fetchall() if cursor.description else []

    def pages(self, job_id: str) -> list[tuple]:
        """(number, status, deliveries, worker_pid) of every page."""
        return self.query("SELECT number, status, deliveries, worker_pid FROM ocr_jobs_jobpage "
                          "WHERE job_id = ? ORDER BY number", job_id.replace("-", ""))

    def workers_log(self) -> str:
        try:
            return (self.var / "workers.log").read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self) -> None:
        self.stop_gateway()
        self.workers.stop()
        self.redis.stop()


@contextmanager
def running_jobs_stack(triton, var: Path, threads: int = 4, **settings: str):
    """redis-server + 1 worker process (2 threads) + gunicorn (1 process, ``threads``) on
    their own SQLite file (or PostgreSQL database: :func:`fresh_database`) in ``var``, with
    keys ``a``, ``b`` and ``quota`` (a daily quota of 50 pages), pointed at ``triton``;
    ``settings`` override the environment. Webhooks may go to http://127.0.0.1."""
    database_url = fresh_database(var)
    redis = RedisServer(var / "redis").start()
    env = {"OCR_VAR_DIR": str(var), "DATABASE_URL": database_url,
           "DJANGO_SECRET_KEY": "jobs-tests", "OCR_BROKER_URL": redis.url,
           "TRITON_GRPC_URL": triton.grpc_url, "TRITON_METRICS_URL": triton.metrics_url,
           "TRITON_TIMEOUT_S": "180", "OCR_JOB_HEARTBEAT_S": "5", "OCR_JOB_WINDOW": "4",
           "OCR_WEBHOOK_ALLOW_PRIVATE": "true", "OCR_WEBHOOK_HTTP_HOSTS": "127.0.0.1",
           "OCR_JOB_WORKER_THREADS": "2", "PROMETHEUS_MULTIPROC_DIR": "", **settings}
    env.pop("PROMETHEUS_MULTIPROC_DIR")
    manage(["migrate", "--noinput"], env)
    manage(["collectstatic", "--noinput", "--verbosity", "0"], env)    # the demo page's
    keys = json.loads(manage(["shell", "-c", _MAKE_KEYS], env).split("KEYS ", 1)[1])
    workers = JobWorkers(MANAGE, env=env, processes=1, threads=2,
                         log_path=var / "workers.log").start()
    stack = JobsStack(var, env, redis, workers, keys, threads=threads)
    try:
        stack.start_gateway()
        yield stack
    finally:
        stack.stop()
        drop_database(database_url)


@pytest.fixture(scope="module")
def jobs_stack(triton, tmp_path_factory):
    """:func:`running_jobs_stack` with the deadline of the other tests (180 s)."""
    with running_jobs_stack(triton, tmp_path_factory.mktemp("jobs-stack")) as stack:
        yield stack


def fresh_database(var: Path) -> str:
    """The stack's own database: a SQLite file in ``var``, or, when the tests run on PostgreSQL
    (``DATABASE_URL`` is a ``postgres://`` URL, as in .ci/run's PostgreSQL pass), a new
    database on that server (its role may create databases), where ``select_for_update`` and
    concurrent workers behave as in production."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        return f"sqlite:///{var / 'db.sqlite3'}"
    import psycopg

    name = f"ocr_jobs_{var.name.replace('-', '_').lower()}_{os.getpid()}"
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + "/" + name


def drop_database(url: str) -> None:
    if url.startswith("sqlite"):
        return
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as db:
        for attempt in range(10):
            try:
                db.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                return
            except psycopg.errors.InsufficientPrivilege:
                # An autovacuum worker on it, which a non-superuser may not terminate.
                time.sleep(1)
        db.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
