"""The audit store on SQLite and on a real PostgreSQL server: the same behaviour from both."""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from argo_doctor.errors import ArgoDoctorError, ConfigError
from argo_doctor.remediate.store import (
    LATEST_VERSION,
    AuditEntry,
    AuditStore,
    PostgresStore,
    SqliteStore,
    StoreError,
    display_url,
    open_store,
    parse_age,
)
from tests.remediate import pgserver

T0 = datetime(2026, 11, 23, 8, 0, 0, tzinfo=UTC)


def entry(rollout: str = "apps/web", action: str = "restarted", when: datetime = T0, **changes: Any) -> AuditEntry:
    values: dict[str, Any] = {
        "time": when, "source": "serve", "instance": "argo-doctor-5d9f-abc12", "rollout": rollout, "action": action,
        "reason": "Degraded (ProgressDeadlineExceeded) although all 3 pods are ready",
        "notification": {"app": "shop", "appNamespace": "argocd", "namespace": "apps", "health": "Degraded",
                         "extra": [1, 2.5, None, True, {"nested": "ü"}]},
        "state": {"state": "stuck", "desired": 3, "pods": [{"name": "web-6d4b9-x", "ready": True}]},
        "verdict": "stuck", "policy": "allowed",
        "patch": {"metadata": {"resourceVersion": "1234"}, "spec": {"restartAt": "2026-11-23T08:00:00Z"}},
        "api_answer": "200 OK resourceVersion 1240", "latency_ms": 12.5,
    }
    values.update(changes)
    return AuditEntry(**values)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite://{tmp_path}/state/audit.db"
    url: str = request.getfixturevalue("pg_store_url")
    return url


@pytest.fixture
def store(store_url: str) -> Iterator[AuditStore]:
    opened = open_store(store_url)
    yield opened
    opened.close()


def raw(store_url: str) -> SqliteStore | PostgresStore:
    """The store class itself, connected but not migrated."""
    if store_url.startswith("sqlite://"):
        return SqliteStore(store_url.removeprefix("sqlite://"))
    return PostgresStore(store_url)


def versions(store_url: str) -> list[int]:
    """The rows of schema_version, read without the store."""
    if store_url.startswith("sqlite://"):
        with sqlite3.connect(store_url.removeprefix("sqlite://")) as db:
            return [r[0] for r in db.execute("SELECT version FROM schema_version ORDER BY version")]
    with psycopg.connect(store_url) as conn:
        return [r[0] for r in conn.execute("SELECT version FROM schema_version ORDER BY version")]


# --- reading and writing ----------------------------------------------------------------------------------


def test_record_and_read_back(store: AuditStore) -> None:
    first = entry(when=T0)
    skipped = entry(action="skipped", when=T0 + timedelta(minutes=1), reason="cooldown", patch=None,
                    api_answer=None, notification=None, state=None, policy="cooldown until 08:15:00Z")
    other = entry(rollout="apps/api", when=T0 + timedelta(minutes=2), latency_ms=3.25)
    ids = [store.record(e) for e in (first, skipped, other)]
    assert len(set(ids)) == 3 and first.id == ids[0]

    got = store.entries()
    assert [e.id for e in got] == [ids[2], ids[1], ids[0]]  # newest first
    assert got[2] == first  # every field round-trips, JSON columns as dicts
    assert got[1] == skipped
    assert got[0].time == T0 + timedelta(minutes=2) and got[0].time.tzinfo is not None

    assert store.last_restart("apps/web") == T0  # the skipped entry is newer but no restart
    assert store.last_restart("apps/api") == T0 + timedelta(minutes=2)
    assert store.last_restart("apps/none") is None
    assert store.restarts_since(T0) == 2
    assert store.restarts_since(T0 + timedelta(seconds=1)) == 1
    assert store.restarts_since(T0 + timedelta(hours=1)) == 0


def test_entries_since_and_limit(store: AuditStore) -> None:
    for minute in range(10):
        store.record(entry(when=T0 + timedelta(minutes=minute), reason=f"r{minute}"))
    since = store.entries(since=T0 + timedelta(minutes=7))
    assert [e.reason for e in since] == ["r9", "r8", "r7"]
    assert [e.reason for e in store.entries(limit=2)] == ["r9", "r8"]
    assert [e.reason for e in store.entries(since=T0 + timedelta(minutes=5), limit=1)] == ["r9"]
    assert store.entries(since=T0 + timedelta(days=1)) == []


def test_times_are_utc(store: AuditStore) -> None:
    paris = timezone(timedelta(hours=1))
    store.record(entry(when=datetime(2026, 11, 23, 9, 30, 0, 123456, tzinfo=paris), reason="aware"))
    store.record(entry(when=datetime(2026, 11, 23, 8, 0, 0), reason="naive"))  # naive: taken as UTC
    got = {e.reason: e.time for e in store.entries()}
    assert got["aware"] == datetime(2026, 11, 23, 8, 30, 0, 123456, tzinfo=UTC)
    assert got["aware"].utcoffset() == timedelta(0)
    assert got["naive"] == T0
    assert store.last_restart("apps/web") == got["aware"]
    assert store.restarts_since(datetime(2026, 11, 23, 9, 15, tzinfo=paris)) == 1  # 08:15Z


def test_hostile_strings_are_stored(store: AuditStore) -> None:
    """A notification body is the sender's: NUL (PostgreSQL refuses it) and lone surrogates must not lose
    the decision's record."""
    bad = "a\x00b\ud800c"
    store.record(entry(reason=bad, notification={bad: bad, "n": float("nan"), "t": T0, "tuple": (1, 2)}))
    (got,) = store.entries()
    assert got.reason == "a\ufffdb?c"
    assert got.notification == {"a\ufffdb?c": "a\ufffdb?c", "n": "nan", "t": "2026-11-23T08:00:00Z", "tuple": [1, 2]}


def test_concurrent_records_from_threads(store: AuditStore) -> None:
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(25):
                store.record(entry(rollout=f"apps/r{worker}", reason=f"{worker}-{i}"))
                store.last_restart(f"apps/r{worker}")
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    got = store.entries()
    assert len(got) == 200 and len({e.id for e in got}) == 200
    assert store.restarts_since(T0) == 200


# --- migrations -------------------------------------------------------------------------------------------


def test_migrations_are_versioned_and_idempotent(store_url: str) -> None:
    first = raw(store_url)
    assert first.schema_version() == 0
    assert first.migrate() == list(range(1, LATEST_VERSION + 1))
    assert first.migrate() == []
    first.close()
    again = open_store(store_url)  # opening again applies nothing
    again.close()
    assert versions(store_url) == list(range(1, LATEST_VERSION + 1))


def test_old_database_is_upgraded(store_url: str) -> None:
    old = raw(store_url)
    assert old.migrate(target=1) == [1]
    assert old.schema_version() == 1
    old.record(entry(reason="written by version 1"))
    with pytest.raises(StoreError):
        old.check_writable()  # the heartbeat table comes with version 2
    old.close()

    store = open_store(store_url)
    try:
        assert versions(store_url) == list(range(1, LATEST_VERSION + 1))
        assert [e.reason for e in store.entries()] == ["written by version 1"]
        store.check_writable()
    finally:
        store.close()


def test_newer_schema_is_refused(store_url: str) -> None:
    open_store(store_url).close()
    if store_url.startswith("sqlite://"):
        with sqlite3.connect(store_url.removeprefix("sqlite://")) as db:
            db.execute("INSERT INTO schema_version VALUES (99, 'future', '2030-01-01T00:00:00.000000Z')")
    else:
        with psycopg.connect(store_url) as conn:
            conn.execute("INSERT INTO schema_version VALUES (99, 'future', now())")
    with pytest.raises(StoreError, match="schema version 99 is newer"):
        open_store(store_url)


WORKER = textwrap.dedent("""
    import json, sys, time
    from argo_doctor.remediate.store import open_store
    url, mode, start_at = sys.argv[1], sys.argv[2], float(sys.argv[3])
    time.sleep(max(0.0, start_at - time.time()))
    store = open_store(url)
    if mode == "exclusive":
        for _ in range(5):
            with store.exclusive():
                began = time.time()
                time.sleep(0.03)
                print(json.dumps([began, time.time()]), flush=True)
    store.close()
""")


def run_workers(store_url: str, mode: str, count: int) -> list[str]:
    """`count` processes started together (they wait for the same instant), their outputs."""
    start_at = time.time() + 1.5  # after every interpreter has imported the store
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, store_url, mode, str(start_at)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(count)]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outputs.append(out)
    return outputs


def test_processes_migrating_at_once(store_url: str) -> None:
    run_workers(store_url, "open", 4)
    assert versions(store_url) == list(range(1, LATEST_VERSION + 1))


def overlaps(intervals: list[tuple[float, float]]) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    ordered = sorted(intervals)
    return [(a, b) for a, b in itertools.pairwise(ordered) if b[0] < a[1]]


def test_exclusive_serialises_processes(store_url: str) -> None:
    open_store(store_url).close()
    outputs = run_workers(store_url, "exclusive", 3)
    intervals = [tuple(json.loads(line)) for out in outputs for line in out.splitlines()]
    assert len(intervals) == 15
    assert overlaps(intervals) == []


def test_exclusive_serialises_threads_and_store_objects(store_url: str) -> None:
    """Two stores on one database in one process (two service instances in a test) and several threads each."""
    stores = [open_store(store_url), open_store(store_url)]
    intervals: list[tuple[float, float]] = []

    def work(store: AuditStore) -> None:
        for _ in range(3):
            with store.exclusive():
                began = time.monotonic()
                time.sleep(0.01)
                intervals.append((began, time.monotonic()))

    threads = [threading.Thread(target=work, args=(stores[n % 2],)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in stores:
        s.close()
    assert len(intervals) == 18
    assert overlaps(intervals) == []


def test_exclusive_times_out(store_url: str) -> None:
    holder, waiter = open_store(store_url), open_store(store_url)
    try:
        with holder.exclusive():
            began = time.monotonic()
            with pytest.raises(StoreError, match="timed out"), waiter.exclusive(timeout=0.3):
                pass
            assert 0.25 < time.monotonic() - began < 5
        with waiter.exclusive():  # released: free again, and the waiter's lock connection still works
            pass
    finally:
        holder.close()
        waiter.close()


# --- errors -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("url, needle", [
    ("mysql://root:pw@db/audit", "unknown scheme 'mysql'"),
    ("http://example.com/audit", "unknown scheme 'http'"),
    ("sqlite://relative.db", "absolute path"),
    ("", "empty URL"),
])
def test_bad_urls(url: str, needle: str) -> None:
    with pytest.raises(StoreError, match=needle) as caught:
        open_store(url)
    assert isinstance(caught.value, ArgoDoctorError)
    assert "pw" not in str(caught.value)


def test_unreachable_postgres_names_the_store_not_the_password() -> None:
    port = pgserver.free_port()  # nothing listens there
    with pytest.raises(StoreError) as caught:
        open_store(f"postgresql://audit:s3cr%40tPassw0rd@127.0.0.1:{port}/audit?password=other-s3cret")
    message = str(caught.value)
    assert message.startswith(f"audit store postgresql://audit@127.0.0.1:{port}/audit: cannot connect: ")
    assert "\n" not in message
    assert "s3cr" not in message and "other-s3cret" not in message


def test_unknown_postgres_database(postgres_url: str) -> None:
    url = postgres_url.rsplit("/", 1)[0] + "/no_such_database"
    with pytest.raises(StoreError, match='database "no_such_database" does not exist'):
        open_store(url)


def test_url_shown_without_password(pg_store_url: str) -> None:
    with_password = pg_store_url.replace("postgres@", "postgres:Hunter2Pass@")  # trust auth ignores it
    store = open_store(with_password)
    try:
        assert store.url == pg_store_url
        assert "Hunter2" not in repr(store.url)
    finally:
        store.close()
    assert display_url("postgres://u:p@h1:5432,h2:5433/db?sslmode=require&password=x") == \
        "postgres://u@h1:5432,h2:5433/db?sslmode=require"
    assert display_url("postgresql://:p@h/db") == "postgresql://h/db"
    assert display_url("postgresql://h/db?passwrod=Hunter2Pass&application_name=x") == \
        "postgresql://h/db?passwrod=<redacted>&application_name=x"  # a misspelt key hides its value


@pytest.mark.parametrize("url", [
    "postgresql://127.0.0.1:{port}/audit?pass%20word=Hunter2Pass",
    "postgresql://127.0.0.1:{port}/audit?passwrod=Hunter2Pass",
    "postgresql://audit:Hunter2%ZZPass@127.0.0.1:{port}/audit",
    "postgresql://audit:Hunter2 Pass@127.0.0.1:{port}/audit",
])
def test_no_part_of_a_password_in_what_psycopg_says_about_a_url(url: str) -> None:
    """psycopg quotes the piece of the connection string it cannot parse, which may be a password or part of it."""
    with pytest.raises(StoreError) as caught:
        open_store(url.format(port=pgserver.free_port()))
    assert "Hunter2" not in str(caught.value) and "Pass" not in str(caught.value), str(caught.value)


def test_read_only_postgres_database(pg_store_url: str) -> None:
    open_store(pg_store_url).close()
    name = pg_store_url.rsplit("/", 1)[1]
    with psycopg.connect(pg_store_url, autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER DATABASE {} SET default_transaction_read_only = on").format(sql.Identifier(name)))
    with pytest.raises(StoreError, match=r"not writable: .*read-only transaction"):
        open_store(pg_store_url)
    reader = open_store(pg_store_url, writable=False)  # `audit` reads it
    try:
        assert reader.entries() == []
        with pytest.raises(StoreError, match="read-only"):
            reader.check_writable()
        with pytest.raises(StoreError, match="cannot record"):
            reader.record(entry())
    finally:
        reader.close()


def test_postgres_reconnects_after_losing_its_connection(pg_store_url: str, postgres_url: str) -> None:
    """A server restart or fail-over cuts the connections: reads and the lock reconnect at once; an INSERT
    that finds its connection dead fails (it may not be repeated blindly), the next one reconnects."""
    name = pg_store_url.rsplit("/", 1)[1]

    def cut() -> None:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))

    store = open_store(pg_store_url)
    try:
        store.record(entry())
        with store.exclusive():
            pass
        cut()
        with store.exclusive():
            assert store.last_restart("apps/web") == T0
        store.check_writable()
        cut()
        with pytest.raises(StoreError, match=r"cannot record: .*terminating connection"):
            store.record(entry())
        store.record(entry())
        assert len(store.entries()) == 2
    finally:
        store.close()


def test_read_only_sqlite_file() -> None:
    """Opened by a user who may not write the file (as root, a forked child drops to nobody)."""
    folder = Path(tempfile.mkdtemp(prefix="argo-doctor-ro-"))
    try:
        folder.chmod(0o755)
        path = folder / "audit.db"
        store = open_store(str(path))
        store.record(entry())
        store.close()
        path.chmod(0o444)
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 0
            try:
                os.close(read_fd)
                if os.geteuid() == 0:
                    os.chown(folder, 65534, 65534)  # nobody may create the -wal and -shm files, not write the db
                    os.setgid(65534)
                    os.setuid(65534)
                results = {}
                try:
                    open_store(str(path))
                    results["open"] = "opened"
                except StoreError as err:
                    results["open"] = str(err)
                reader = open_store(f"sqlite://{path}", writable=False)
                results["entries"] = str(len(reader.entries()))
                try:
                    reader.check_writable()
                    results["check"] = "writable"
                except StoreError as err:
                    results["check"] = str(err)
                os.write(write_fd, json.dumps(results).encode())
            except BaseException as err:
                os.write(write_fd, json.dumps({"error": repr(err)}).encode())
                code = 1
            finally:
                os._exit(code)
        os.close(write_fd)
        with os.fdopen(read_fd) as pipe:
            results = json.loads(pipe.read())
        os.waitpid(pid, 0)
        assert results["open"] == f"audit store sqlite://{path}: not writable: attempt to write a readonly database"
        assert results["entries"] == "1"
        assert "readonly" in results["check"]
    finally:
        if os.geteuid() == 0:
            os.chown(folder, 0, 0)
        for child in folder.iterdir():
            child.unlink()
        folder.rmdir()


def test_server_fixture_without_binaries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without PostgreSQL installed the session fixture fails (never skips), saying how to install it."""
    monkeypatch.setattr(pgserver, "find_bin_dir", lambda: None)
    with pytest.raises(RuntimeError, match=r"not found .* run the project's setup .*apt-get install -y postgresql"):
        pgserver.start_server()


def test_full_sqlite_disk(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "audit.db"))
    assert isinstance(store, SqliteStore)
    try:
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count = {pages}")  # what a full disk answers
        with pytest.raises(StoreError, match=r"^audit store sqlite://.*: cannot record: database or disk is full$"):
            for _ in range(200):
                store.record(entry(reason="x" * 5000))
    finally:
        store.close()


def test_sqlite_file_folder_and_modes(tmp_path: Path) -> None:
    path = tmp_path / "new" / "deeper" / "audit.db"
    store = open_store(f"sqlite://{path}")
    try:
        store.record(entry())
        assert store.url == f"sqlite://{path}"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        wal = path.with_name("audit.db-wal")
        assert wal.exists() and stat.S_IMODE(wal.stat().st_mode) == 0o600
        with store.exclusive():
            pass
        assert stat.S_IMODE(path.with_name("audit.db.lock").stat().st_mode) == 0o600
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        store.close()


def test_plain_relative_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = open_store("audit.db")
    try:
        assert store.url == f"sqlite://{tmp_path}/audit.db"
    finally:
        store.close()


def test_closed_store(store: AuditStore) -> None:
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.record(entry())


@pytest.mark.parametrize("text, seconds", [
    ("24h", 86400), ("90m", 5400), ("7d", 604800), ("1h30m", 5400), ("45s", 45), ("2w", 1209600), ("1.5h", 5400),
])
def test_parse_age(text: str, seconds: int) -> None:
    assert parse_age(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "24", "h", "24 h", "-1h", "1y", "1h-"])
def test_parse_age_rejects(text: str) -> None:
    with pytest.raises(ConfigError, match="invalid age"):
        parse_age(text)


def test_reading_a_missing_sqlite_file_does_not_create_it(tmp_path: Path) -> None:
    path = tmp_path / "typo" / "audit.db"
    with pytest.raises(StoreError, match="no such file"):
        open_store(f"sqlite://{path}", writable=False)
    assert not path.parent.exists()


def test_a_malformed_postgresql_url_is_a_store_error() -> None:
    with pytest.raises(StoreError) as caught:
        open_store("postgresql://u:pw-secret@[::1/x")
    assert "invalid URL" in str(caught.value) and "pw-secret" not in str(caught.value)
