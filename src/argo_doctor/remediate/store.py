"""The audit store: every remediation decision with its inputs, in SQLite (the default) or PostgreSQL.

Both back ends hold the same schema, created and upgraded by the versioned `MIGRATIONS` (a
`schema_version` table records each one applied; each runs once, in its own transaction, under a lock that
makes two processes migrating at once take turns: `BEGIN IMMEDIATE` in SQLite, a transaction-level advisory
lock in PostgreSQL). JSON columns are text in SQLite and jsonb in PostgreSQL; times are UTC (fixed-width
RFC 3339 text in SQLite, so that text order is time order; timestamptz in PostgreSQL).

`exclusive()` serialises the decide-then-patch section across threads, processes and replicas: a
process-wide lock per database plus `flock` on a lock file beside the SQLite database; a lock per store plus
`pg_advisory_lock` held on a dedicated connection for PostgreSQL. Every failure becomes a `StoreError`
of one line that names the store by its URL without the password.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import math
import os
import re
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg.rows import TupleRow

from argo_doctor.errors import ConfigError, StoreError
from argo_doctor.sources.redact import scrub_dsn

__all__ = [
    "LATEST_VERSION",
    "MIGRATIONS",
    "AuditEntry",
    "AuditStore",
    "Migration",
    "PostgresStore",
    "SqliteStore",
    "StoreError",
    "display_url",
    "open_store",
    "parse_age",
]

T = TypeVar("T")

BUSY_TIMEOUT_MS = 10_000
CONNECT_TIMEOUT_S = 5
EXCLUSIVE_TIMEOUT_S = 30.0
# pg_advisory_lock keys, "argodoc1" and "argodoc2" as big-endian 64-bit integers.
MIGRATE_LOCK_KEY = int.from_bytes(b"argodoc1", "big")
EXCLUSIVE_LOCK_KEY = int.from_bytes(b"argodoc2", "big")


@dataclass
class AuditEntry:
    """One decision: what came in, what the Rollout looked like, what was decided and what the API said."""

    time: datetime  # UTC, when the decision was made
    source: str  # "serve" | "fix"
    instance: str  # hostname/pod of the deciding process
    rollout: str  # "ns/name"
    action: str  # "restarted" | "dry-run" | "skipped" | "failed"
    reason: str
    notification: dict[str, Any] | None  # the body received (serve) or the fix arguments
    state: dict[str, Any] | None  # RolloutVerdict.as_dict()
    verdict: str  # RolloutState value
    policy: str  # policy outcome, e.g. "allowed", "namespace not allowed", "cooldown until ..."
    patch: dict[str, Any] | None
    api_answer: str | None  # e.g. "200 OK resourceVersion 1234", "409 Conflict ..."
    latency_ms: float
    id: int | None = None


class AuditStore(Protocol):
    """What the service, `fix` and `audit` use; `open_store` returns one."""

    @property
    def url(self) -> str:
        """The store's URL without the password."""

    def record(self, entry: AuditEntry) -> int:
        """Append an entry; its id."""

    def last_restart(self, rollout: str) -> datetime | None:
        """When the newest entry with action "restarted" of this Rollout ("ns/name") was decided."""

    def restarts_since(self, since: datetime) -> int:
        """How many entries with action "restarted" (all Rollouts) were decided at or after `since`."""

    def entries(self, since: datetime | None = None, limit: int | None = None) -> list[AuditEntry]:
        """Entries decided at or after `since`, newest first, at most `limit`."""

    def exclusive(self) -> AbstractContextManager[None]:
        """A section that one thread of one process of one replica runs at a time (not reentrant)."""

    def check_writable(self) -> None:
        """Raise StoreError if a write would fail (a real, cheap write: the readiness probe)."""

    def close(self) -> None:
        """Release the connections; idempotent."""


# --- schema ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Migration:
    """Schema version `version`: the same tables in both dialects."""

    version: int
    description: str
    sqlite: tuple[str, ...]
    postgres: tuple[str, ...]


_COLUMNS = ("time", "source", "instance", "rollout", "action", "reason", "notification", "state", "verdict",
            "policy", "patch", "api_answer", "latency_ms")
_JSON_COLUMNS = frozenset({"notification", "state", "patch"})

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1, "audit table",
        sqlite=(
            """CREATE TABLE audit (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                time TEXT NOT NULL,
                source TEXT NOT NULL,
                instance TEXT NOT NULL,
                rollout TEXT NOT NULL,
                action TEXT NOT NULL,
                reason TEXT NOT NULL,
                notification TEXT,
                state TEXT,
                verdict TEXT NOT NULL,
                policy TEXT NOT NULL,
                patch TEXT,
                api_answer TEXT,
                latency_ms REAL NOT NULL
            )""",
            "CREATE INDEX audit_time ON audit (time)",
        ),
        postgres=(
            """CREATE TABLE audit (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                time TIMESTAMPTZ NOT NULL,
                source TEXT NOT NULL,
                instance TEXT NOT NULL,
                rollout TEXT NOT NULL,
                action TEXT NOT NULL,
                reason TEXT NOT NULL,
                notification JSONB,
                state JSONB,
                verdict TEXT NOT NULL,
                policy TEXT NOT NULL,
                patch JSONB,
                api_answer TEXT,
                latency_ms DOUBLE PRECISION NOT NULL
            )""",
            "CREATE INDEX audit_time ON audit (time)",
        ),
    ),
    Migration(
        2, "restart lookups by Rollout and action; heartbeat table for the readiness probe",
        sqlite=(
            "CREATE INDEX audit_action_rollout_time ON audit (action, rollout, time)",
            "CREATE TABLE heartbeat (instance TEXT PRIMARY KEY, time TEXT NOT NULL)",
        ),
        postgres=(
            "CREATE INDEX audit_action_rollout_time ON audit (action, rollout, time)",
            "CREATE TABLE heartbeat (instance TEXT PRIMARY KEY, time TIMESTAMPTZ NOT NULL)",
        ),
    ),
)
LATEST_VERSION = MIGRATIONS[-1].version


# --- helpers -----------------------------------------------------------------------------------------------

_AGE = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_AGE_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_age(text: str) -> timedelta:
    """`90m`, `24h`, `7d`, `1h30m`, `2w`, `45s` as a timedelta; ConfigError otherwise."""
    value = text.strip()
    parts = _AGE.findall(value)
    if not value or "".join(n + u for n, u in parts) != value:
        raise ConfigError(f"invalid age {text!r}: use a number and a unit (s, m, h, d, w), e.g. 90m, 24h or 7d")
    return timedelta(seconds=sum(float(n) * _AGE_SECONDS[u] for n, u in parts))


def _utc(value: datetime) -> datetime:
    """Aware UTC; a naive time is taken as UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _sqlite_time(value: datetime) -> str:
    """Fixed-width UTC text (`2026-05-20T10:00:00.000000Z`): text order is time order."""
    return _utc(value).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _text(value: str) -> str:
    """A string both databases accept: no NUL (PostgreSQL refuses it), no lone surrogate (not UTF-8)."""
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "replace").decode("utf-8")
    return value


def _jsonable(value: Any) -> Any:
    """A JSON-ready copy: strings through `_text`, times as RFC 3339, tuples as lists, non-finite numbers and
    unknown types as strings."""
    if isinstance(value, str):
        return _text(value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, datetime):
        return _utc(value).isoformat().replace("+00:00", "Z")
    if isinstance(value, Mapping):
        return {_text(str(k)): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    return _text(str(value))


def _json_text(value: dict[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(_jsonable(value), ensure_ascii=False, allow_nan=False)


def _row_values(entry: AuditEntry) -> list[Any]:
    """The column values of `_COLUMNS` but time (each back end converts it)."""
    return [
        _text(entry.source), _text(entry.instance), _text(entry.rollout), _text(entry.action), _text(entry.reason),
        _json_text(entry.notification), _json_text(entry.state), _text(entry.verdict), _text(entry.policy),
        _json_text(entry.patch), None if entry.api_answer is None else _text(entry.api_answer),
        float(entry.latency_ms),
    ]


def _json_value(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    loaded = json.loads(value) if isinstance(value, str | bytes) else value
    return loaded if isinstance(loaded, dict) else {"value": loaded}


def _entry(row: tuple[Any, ...], when: datetime) -> AuditEntry:
    """An entry from `id, *_COLUMNS` with the time already converted."""
    (ident, _time, source, instance, rollout, action, reason, notification, state, verdict, policy, patch,
     api_answer, latency_ms) = row
    return AuditEntry(
        time=when, source=source, instance=instance, rollout=rollout, action=action, reason=reason,
        notification=_json_value(notification), state=_json_value(state), verdict=verdict, policy=policy,
        patch=_json_value(patch), api_answer=api_answer, latency_ms=float(latency_ms), id=int(ident),
    )


def _one_line(text: str) -> str:
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip()) or "unknown error"


def _instance() -> str:
    return _text(socket.gethostname() or "unknown")


# --- SQLite ------------------------------------------------------------------------------------------------

_PROCESS_LOCKS: dict[str, threading.Lock] = {}
_PROCESS_LOCKS_GUARD = threading.Lock()


def _process_lock(key: str) -> threading.Lock:
    """The one lock of this process for a database, shared by every store object open on it."""
    with _PROCESS_LOCKS_GUARD:
        return _PROCESS_LOCKS.setdefault(key, threading.Lock())


def _too_new(url: str, version: int) -> StoreError:
    return StoreError(f"audit store {url}: schema version {version} is newer than this argo-doctor knows "
                      f"({LATEST_VERSION}): upgrade argo-doctor")


def _migrate(store: SqliteStore | PostgresStore, target: int, step: Callable[[Any, Migration], None]) -> None:
    """Run `step` for each migration up to `target`, unless the schema (read without a write, so that a read-only
    store at the current version opens) is already there; a schema newer than this code is refused."""
    current = store.schema_version()
    if current > LATEST_VERSION:
        raise _too_new(store.url, current)
    if current >= target:
        return
    for migration in MIGRATIONS:
        if migration.version <= target:
            store._run(f"cannot apply migration {migration.version}", functools.partial(_step, step, migration))


def _step(step: Callable[[Any, Migration], None], migration: Migration, db: Any) -> None:
    step(db, migration)


class _SqlStore:
    """The reads both stores share, written once; each store gives its placeholder and its time conversions."""

    url: str
    _mark: ClassVar[str]
    """The DB-API placeholder of the driver: `?` (sqlite3) or `%s` (psycopg)."""

    def _run(self, what: str, work: Callable[[Any], T]) -> T:
        raise NotImplementedError

    def _db_time(self, value: datetime) -> Any:
        """A time as the database stores it."""
        raise NotImplementedError

    def _time_of(self, value: Any) -> datetime:
        """A time as the database returns it, as aware UTC."""
        raise NotImplementedError

    def last_restart(self, rollout: str) -> datetime | None:
        row = self._run("cannot read", lambda db: db.execute(
            f"SELECT max(time) FROM audit WHERE action = 'restarted' AND rollout = {self._mark}",
            (_text(rollout),)).fetchone())
        return self._time_of(row[0]) if row and row[0] else None

    def restarts_since(self, since: datetime) -> int:
        row = self._run("cannot read", lambda db: db.execute(
            f"SELECT count(*) FROM audit WHERE action = 'restarted' AND time >= {self._mark}",
            (self._db_time(since),)).fetchone())
        return int(row[0]) if row else 0

    def entries(self, since: datetime | None = None, limit: int | None = None) -> list[AuditEntry]:
        query = f"SELECT id, {', '.join(_COLUMNS)} FROM audit"
        params: list[Any] = []
        if since is not None:
            query += f" WHERE time >= {self._mark}"
            params.append(self._db_time(since))
        query += " ORDER BY time DESC, id DESC"
        if limit is not None:
            query += f" LIMIT {self._mark}"
            params.append(max(0, int(limit)))
        rows = self._run("cannot read", lambda db: db.execute(query, params).fetchall())
        return [_entry(tuple(row), self._time_of(row[1])) for row in rows]


class SqliteStore(_SqlStore):
    """The audit store in one SQLite file (WAL mode). One connection, used under a lock by every thread;
    other processes wait for each other through SQLite's busy timeout."""

    _mark = "?"

    def _db_time(self, value: datetime) -> Any:
        return _sqlite_time(value)

    def _time_of(self, value: Any) -> datetime:
        return datetime.fromisoformat(value)

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(os.path.abspath(path))
        self.url = f"sqlite://{self.path}"
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self._lock = threading.Lock()
        self._closed = False
        try:
            self._create_file()
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                       check_same_thread=False)
        except (OSError, sqlite3.Error) as err:
            raise self._error(err, "cannot open") from None
        try:
            self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._wal()
            self._db.execute("PRAGMA synchronous = FULL")
        except sqlite3.Error as err:
            self._db.close()
            raise self._error(err, "cannot open") from None

    def _create_file(self) -> None:
        """The folder (0700) and the file (0600) when missing; SQLite gives its -wal and -shm files the mode of
        the database."""
        if self.path.exists():
            return
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))

    def _wal(self) -> None:
        """Switch to WAL; a process switching at the same moment may make the first tries fail."""
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                mode = self._db.execute("PRAGMA journal_mode = WAL").fetchone()
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
                continue
            if mode and str(mode[0]).lower() == "wal":
                return
            if time.monotonic() > deadline:
                raise sqlite3.OperationalError(f"cannot switch to WAL mode (journal mode {mode[0] if mode else None})")
            time.sleep(0.01)

    def _error(self, err: BaseException, what: str) -> StoreError:
        detail = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        if isinstance(err, OSError) and err.filename:
            detail = f"{detail}: {err.filename}"
        return StoreError(f"audit store {self.url}: {what}: {_one_line(detail)}")

    def _run(self, what: str, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            if self._closed:
                raise StoreError(f"audit store {self.url}: {what}: the store is closed")
            try:
                return work(self._db)
            except sqlite3.Error as err:
                if self._db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self._db.execute("ROLLBACK")
                raise self._error(err, what) from None

    def schema_version(self) -> int:
        """The newest migration applied (0 for an empty database)."""
        def work(db: sqlite3.Connection) -> int:
            exists = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
            if not db.execute(exists).fetchone():
                return 0
            row = db.execute("SELECT max(version) FROM schema_version").fetchone()
            return int(row[0] or 0)
        return self._run("cannot read the schema version", work)

    def migrate(self, target: int | None = None) -> list[int]:
        """Apply the migrations up to `target` (default: all) not applied yet; the versions applied."""
        target = LATEST_VERSION if target is None else target
        applied: list[int] = []

        def step(db: sqlite3.Connection, migration: Migration) -> None:
            db.execute("BEGIN IMMEDIATE")  # the write lock: a second process waits here, then sees the version
            db.execute("CREATE TABLE IF NOT EXISTS schema_version "
                       "(version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL)")
            current = int(db.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()[0])
            if current > LATEST_VERSION:
                db.execute("ROLLBACK")
                raise _too_new(self.url, current)
            if current >= migration.version:
                db.execute("ROLLBACK")
                return
            for statement in migration.sqlite:
                db.execute(statement)
            db.execute("INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)",
                       (migration.version, migration.description, _sqlite_time(datetime.now(UTC))))
            db.execute("COMMIT")
            applied.append(migration.version)

        _migrate(self, target, step)
        return applied

    def record(self, entry: AuditEntry) -> int:
        def work(db: sqlite3.Connection) -> int:
            cursor = db.execute(
                f"INSERT INTO audit ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                [_sqlite_time(entry.time), *_row_values(entry)],
            )
            return int(cursor.lastrowid or 0)
        entry.id = self._run("cannot record", work)
        return entry.id

    @contextlib.contextmanager
    def exclusive(self, timeout: float = EXCLUSIVE_TIMEOUT_S) -> Iterator[None]:
        """The process lock of this database, then `flock` on the lock file beside it."""
        deadline = time.monotonic() + timeout
        lock = _process_lock(str(self.lock_path))
        if not lock.acquire(timeout=timeout):
            raise StoreError(f"audit store {self.url}: timed out after {timeout:g} s waiting for the exclusive lock")
        try:
            try:
                fd = os.open(self.lock_path, os.O_CREAT | os.O_RDWR, 0o600)
            except OSError as err:
                raise self._error(err, "cannot open the lock file") from None
            try:
                pause = 0.001
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() > deadline:
                            raise StoreError(f"audit store {self.url}: timed out after {timeout:g} s waiting for "
                                             f"the exclusive lock held by another process") from None
                        time.sleep(pause)
                        pause = min(pause * 2, 0.02)
                try:
                    yield
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        finally:
            lock.release()

    def check_writable(self) -> None:
        self._run("not writable", lambda db: db.execute(
            "INSERT INTO heartbeat (instance, time) VALUES (?, ?) "
            "ON CONFLICT (instance) DO UPDATE SET time = excluded.time",
            (_instance(), _sqlite_time(datetime.now(UTC)))))

    def probe_write(self) -> None:
        """Raise StoreError unless a write would be accepted: one made in a transaction rolled back."""
        def work(db: sqlite3.Connection) -> None:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("INSERT INTO heartbeat (instance, time) VALUES (?, ?) "
                           "ON CONFLICT (instance) DO UPDATE SET time = excluded.time",
                           (_instance(), _sqlite_time(datetime.now(UTC))))
            finally:
                db.execute("ROLLBACK")
        self._run("not writable", work)

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                with contextlib.suppress(sqlite3.Error):
                    self._db.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- PostgreSQL --------------------------------------------------------------------------------------------

_SECRET_PARAMS = frozenset({"password", "sslpassword"})
_SHOWN_PARAMS = frozenset({
    "host", "hostaddr", "port", "dbname", "user", "connect_timeout", "application_name", "fallback_application_name",
    "client_encoding", "options", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count",
    "tcp_user_timeout", "replication", "gssencmode", "sslmode", "sslnegotiation", "sslcompression", "sslcert",
    "sslkey", "sslcertmode", "sslrootcert", "sslcrl", "sslcrldir", "sslsni", "requirepeer", "require_auth",
    "channel_binding", "ssl_min_protocol_version", "ssl_max_protocol_version", "krbsrvname", "gsslib",
    "gssdelegation", "service", "target_session_attrs", "load_balance_hosts"})
"""libpq's connection parameters that hold no secret: the value of any other (a misspelt `passwrod=`) is hidden."""


def display_url(url: str) -> str:
    """A database URL without its password (in the user info or as a query parameter)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unclosed IPv6 bracket: show only the scheme
        return url.split(":", 1)[0] + "://…"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, hosts = netloc.rsplit("@", 1)
        netloc = f"{userinfo.split(':', 1)[0]}@{hosts}" if userinfo.split(":", 1)[0] else hosts
    query = urlencode([(k, v if k.lower() in _SHOWN_PARAMS else "<redacted>")
                       for k, v in parse_qsl(parts.query, keep_blank_values=True) if k.lower() not in _SECRET_PARAMS],
                      safe="<>")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _url_secrets(url: str) -> list[str]:
    """The password values a URL holds, raw and decoded, longest first."""
    parts = urlsplit(url)
    found: set[str] = set()
    if "@" in parts.netloc:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        if ":" in userinfo:
            found.add(userinfo.split(":", 1)[1])
    found.update(v for k, v in parse_qsl(parts.query, keep_blank_values=True) if k.lower() in _SECRET_PARAMS)
    found |= {unquote(s) for s in found}
    return sorted((s for s in found if s), key=len, reverse=True)


Connection = psycopg.Connection[TupleRow]


class PostgresStore(_SqlStore):
    """The audit store in a PostgreSQL database. One autocommit connection shared under a lock (reopened
    when it breaks), and a second one that holds the advisory lock of `exclusive()`."""

    _mark = "%s"

    def _db_time(self, value: datetime) -> Any:
        return _utc(value)

    def _time_of(self, value: Any) -> datetime:
        return _utc(value)

    def __init__(self, url: str) -> None:
        self.url = display_url(url)
        self._conninfo = url
        self._secrets = _url_secrets(url)
        self._options: dict[str, Any] = {}
        query = {k.lower() for k, _ in parse_qsl(urlsplit(url).query)}
        if "connect_timeout" not in query:
            self._options["connect_timeout"] = CONNECT_TIMEOUT_S
        if "application_name" not in query:
            self._options["application_name"] = "argo-doctor"
        self._lock = threading.Lock()
        self._exclusive_lock = threading.Lock()
        self._closed = False
        self._lock_conn: Connection | None = None
        self._conn: Connection | None = self._connect("cannot connect")

    def _error(self, err: BaseException, what: str) -> StoreError:
        detail = _one_line(str(err))
        for secret in self._secrets:
            detail = detail.replace(secret, "<redacted>")
        return StoreError(f"audit store {self.url}: {what}: {scrub_dsn(detail)}")  # psycopg quotes bits of the DSN

    def _connect(self, what: str) -> Connection:
        try:
            return psycopg.connect(self._conninfo, autocommit=True, **self._options)
        except (psycopg.Error, ValueError) as err:  # ValueError: a malformed URL
            raise self._error(err, what) from None

    def _run(self, what: str, work: Callable[[Connection], T], *, idempotent: bool = True) -> T:
        """`work` on the shared connection, reopened when broken. Work that may safely run twice is tried again
        once on a new connection when the old one turns out to be dead (a server restart, a fail-over, an idle
        connection cut): a write that was lost in flight, an INSERT, is not (`idempotent=False`)."""
        with self._lock:
            if self._closed:
                raise StoreError(f"audit store {self.url}: {what}: the store is closed")
            for attempt in (1, 2):
                if self._conn is None or self._conn.closed or self._conn.broken:
                    if self._conn is not None:
                        with contextlib.suppress(psycopg.Error):
                            self._conn.close()
                    self._conn = None
                    self._conn = self._connect(what)
                try:
                    return work(self._conn)
                except psycopg.OperationalError as err:
                    if attempt == 2 or not idempotent or not self._conn.broken:
                        raise self._error(err, what) from None
                except psycopg.Error as err:
                    raise self._error(err, what) from None
            raise AssertionError("unreachable")

    def schema_version(self) -> int:
        """The newest migration applied (0 for an empty database)."""
        def work(conn: Connection) -> int:
            row = conn.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
            if not row or not row[0]:
                return 0
            row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
            return int(row[0] or 0) if row else 0
        return self._run("cannot read the schema version", work)

    def migrate(self, target: int | None = None) -> list[int]:
        """Apply the migrations up to `target` (default: all) not applied yet; the versions applied."""
        target = LATEST_VERSION if target is None else target
        applied: list[int] = []

        def step(conn: Connection, migration: Migration) -> None:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK_KEY,))
                conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, "
                             "description TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)")
                row = conn.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
                current = int(row[0]) if row else 0
                if current > LATEST_VERSION:
                    raise _too_new(self.url, current)
                if current >= migration.version:
                    return
                for statement in migration.postgres:
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_version (version, description, applied_at) VALUES (%s, %s, now())",
                             (migration.version, migration.description))
            applied.append(migration.version)

        _migrate(self, target, step)
        return applied

    def record(self, entry: AuditEntry) -> int:
        values = _row_values(entry)
        placeholders = ", ".join("%s::jsonb" if c in _JSON_COLUMNS else "%s" for c in _COLUMNS)

        def work(conn: Connection) -> int:
            row = conn.execute(f"INSERT INTO audit ({', '.join(_COLUMNS)}) VALUES ({placeholders}) RETURNING id",
                               [_utc(entry.time), *values]).fetchone()
            assert row is not None
            return int(row[0])
        entry.id = self._run("cannot record", work, idempotent=False)
        return entry.id

    @contextlib.contextmanager
    def exclusive(self, timeout: float = EXCLUSIVE_TIMEOUT_S) -> Iterator[None]:
        """The store's thread lock, then `pg_advisory_lock` on the dedicated lock connection (a session lock is
        reentrant within its session, so the threads of this process take turns first). If that connection
        dies inside the section, the server drops the lock with it."""
        if not self._exclusive_lock.acquire(timeout=timeout):
            raise StoreError(f"audit store {self.url}: timed out after {timeout:g} s waiting for the exclusive lock")
        try:
            conn = self._lock_connection()
            try:
                try:
                    conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{max(1, int(timeout * 1000))}ms",))
                except psycopg.OperationalError:
                    if not conn.broken:
                        raise
                    self._drop_lock_connection()  # cut while idle: no lock was held, a new connection is safe
                    conn = self._lock_connection()
                    conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{max(1, int(timeout * 1000))}ms",))
                conn.execute("SELECT pg_advisory_lock(%s)", (EXCLUSIVE_LOCK_KEY,))
            except psycopg.Error as err:
                self._drop_lock_connection()
                if isinstance(err, psycopg.errors.LockNotAvailable):
                    raise StoreError(f"audit store {self.url}: timed out after {timeout:g} s waiting for the "
                                     f"exclusive lock held by another process") from None
                raise self._error(err, "cannot take the exclusive lock") from None
            try:
                yield
            finally:
                try:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (EXCLUSIVE_LOCK_KEY,))
                except psycopg.Error:
                    self._drop_lock_connection()  # closing the session releases its locks
        finally:
            self._exclusive_lock.release()

    def _lock_connection(self) -> Connection:
        if self._closed:
            raise StoreError(f"audit store {self.url}: cannot take the exclusive lock: the store is closed")
        if self._lock_conn is None or self._lock_conn.closed or self._lock_conn.broken:
            self._drop_lock_connection()
            self._lock_conn = self._connect("cannot connect for the exclusive lock")
        return self._lock_conn

    def _drop_lock_connection(self) -> None:
        if self._lock_conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._lock_conn.close()
        self._lock_conn = None

    def check_writable(self) -> None:
        self._run("not writable", lambda conn: conn.execute(
            "INSERT INTO heartbeat (instance, time) VALUES (%s, now()) "
            "ON CONFLICT (instance) DO UPDATE SET time = excluded.time", (_instance(),)))

    def probe_write(self) -> None:
        """Raise StoreError unless a write would be accepted: one made in a transaction rolled back."""
        def work(conn: Connection) -> None:
            with conn.transaction(force_rollback=True):
                conn.execute("INSERT INTO heartbeat (instance, time) VALUES (%s, now()) "
                             "ON CONFLICT (instance) DO UPDATE SET time = excluded.time", (_instance(),))
        self._run("not writable", work)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._conn is not None:
                with contextlib.suppress(psycopg.Error):
                    self._conn.close()
                self._conn = None
        with self._exclusive_lock:
            self._drop_lock_connection()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- opening -----------------------------------------------------------------------------------------------

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def open_store(url: str, *, writable: bool = True) -> AuditStore:
    """Open and migrate the store at `sqlite:///ABS/PATH`, a plain path, or `postgresql://…` (`postgres://…`).
    With `writable` (the service, `fix`), a store that would refuse writes (a read-only file or database) is an
    error now rather than at the first decision; `audit` passes False to read a read-only copy."""
    url = url.strip()
    if not url:
        raise StoreError("audit store: empty URL: use sqlite:///ABS/PATH, a path or postgresql://…")
    scheme = _SCHEME.match(url)
    store: SqliteStore | PostgresStore
    if scheme is None or scheme.group(1).lower() == "sqlite":
        path = url[len(scheme.group(0)):] if scheme else url
        if scheme and not path.startswith("/"):
            raise StoreError(f"audit store {display_url(url)}: a SQLite URL takes an absolute path: sqlite:///ABS/PATH")
        if not writable and not os.path.exists(path):  # reading: a typo must not create an empty store
            raise StoreError(f"audit store {path}: no such file")
        store = SqliteStore(path)
    elif scheme.group(1).lower() in ("postgresql", "postgres"):
        try:
            urlsplit(url)
        except ValueError as exc:
            raise StoreError(f"audit store {display_url(url)}: invalid URL: {exc}") from None
        store = PostgresStore(url)
    else:
        raise StoreError(f"audit store {display_url(url)}: unknown scheme {scheme.group(1)!r}: "
                         f"use sqlite:///ABS/PATH, a path or postgresql://…")
    try:
        store.migrate()
        if writable:
            store.probe_write()
    except BaseException:
        store.close()
        raise
    return store
