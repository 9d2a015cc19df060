"""PostgreSQL for the remediation tests: one real server per session, a fresh database per test.

Never skipped: without the server binaries the `postgres_url` fixture fails, telling to run the setup.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

from tests.live.fakeapi import FakeApiServer, write_kubeconfig
from tests.remediate import pgserver
from tests.remediate.cluster import installation


@pytest.fixture
def api() -> Iterator[FakeApiServer]:
    """A writable fake API serving `cluster.installation()`."""
    with FakeApiServer(installation(), writable=True) as server:
        yield server


@pytest.fixture
def kubeconfig(api: FakeApiServer, tmp_path: Path) -> Path:
    """A kubeconfig for `api`."""
    return write_kubeconfig(tmp_path / "kubeconfig", {"fake": api}, "fake")


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The URL of the session's PostgreSQL server (superuser `postgres`, trust auth, database `postgres`)."""
    try:
        server = pgserver.start_server()
    except RuntimeError as err:
        pytest.fail(str(err), pytrace=False)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def pg_store_url(postgres_url: str) -> Iterator[str]:
    """The URL of a database created for this test alone, dropped after it."""
    name = f"test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    parts = urlsplit(postgres_url)
    yield urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
