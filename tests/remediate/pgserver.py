"""A real PostgreSQL server for the test session, in a temporary folder.

The server binaries come from PATH or from Debian's `postgresql` package (/usr/lib/postgresql/*/bin), which
the project's setup installs when missing. The cluster trusts connections from 127.0.0.1 on a free port, keeps
its unix socket in the temporary folder, and runs without fsync (its data is thrown away). PostgreSQL refuses
to run as root: as root (CI), the folder is given to the `postgres` system user (or `nobody`) and the server
commands run as that user through `runuser`.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SETUP_HINT = (
    "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found on PATH or under /usr/lib/postgresql/*/bin: "
    "run the project's setup (`make test` installs Debian's postgresql package as root: "
    "apt-get install -y postgresql)"
)
SERVER_USERS = ("postgres", "nobody")
WATCHDOG = """
import os, shutil, subprocess, sys, time
parent, root, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
while True:
    try:
        os.kill(parent, 0)
    except ProcessLookupError:
        break
    if not os.path.isdir(root):
        sys.exit(0)
    time.sleep(0.5)
subprocess.run(stop, capture_output=True, timeout=60, check=False)
shutil.rmtree(root, ignore_errors=True)
"""
"""Stops the server and removes its folder once the test process is gone, however it ended (a run killed or
interrupted leaves no server behind); it ends by itself when `stop` removed the folder first."""


def find_bin_dir() -> Path | None:
    """The folder holding initdb, pg_ctl and postgres: PATH first (symlinks resolved), then the newest
    /usr/lib/postgresql/N/bin."""
    found = shutil.which("pg_ctl")
    candidates = [Path(os.path.realpath(found)).parent] if found else []

    def version(path: str) -> tuple[int, ...]:
        name = Path(path).parent.name
        return tuple(int(p) for p in name.split(".") if p.isdigit()) or (0,)

    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True)]
    for folder in candidates:
        if all(os.access(folder / name, os.X_OK) for name in ("initdb", "pg_ctl", "postgres")):
            return folder
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class PostgresServer:
    """One throw-away cluster; `start()` then `url`, `stop()` at the end."""

    bin_dir: Path
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="argo-doctor-pg-")))
    port: int = 0
    user: str | None = None  # the system user the server runs as (None: the current one)
    started_in: float = 0.0  # seconds initdb + start took

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _command(self, *args: str) -> list[str]:
        return ["runuser", "-u", self.user, "--", *args] if self.user else list(args)

    def _run(self, *args: str, timeout: float = 60) -> None:
        done = subprocess.run(self._command(*args), cwd=self.root, capture_output=True, text=True, timeout=timeout,
                              check=False)
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(args[:2])} failed ({done.returncode}): {done.stderr.strip()}\n{tail}")

    def start(self) -> PostgresServer:
        began = time.monotonic()
        if os.geteuid() == 0:
            self.user = next((u for u in SERVER_USERS if _user_exists(u)), None)
            if self.user is None or shutil.which("runuser") is None:
                raise RuntimeError("running as root, PostgreSQL needs a non-root user to run as: "
                                   f"none of {', '.join(SERVER_USERS)} exists, or runuser is missing")
        (self.root / "socket").mkdir(mode=0o700)
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            for path in (self.root, self.root / "socket"):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        self._run(str(self.bin_dir / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
                  "-E", "UTF8", "--locale=C", "--no-sync")
        options = (f"-c listen_addresses=127.0.0.1 -c unix_socket_directories={self.root / 'socket'} "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 "
                   "-c shared_buffers=32MB")
        for attempt in range(3):  # the free port may be taken between the probe and the start
            self.port = free_port()
            try:
                self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "server.log"),
                          "-w", "-t", "60", "-o", f"{options} -p {self.port}", "start", timeout=90)
                break
            except RuntimeError:
                if attempt == 2:
                    raise
        self.started_in = time.monotonic() - began
        stop = self._command(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        subprocess.Popen([sys.executable, "-c", WATCHDOG, str(os.getpid()), str(self.root), *stop],
                         start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        return self

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def start_server() -> PostgresServer:
    """A started server; RuntimeError with SETUP_HINT when no server binary can be found."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise RuntimeError(SETUP_HINT)
    server = PostgresServer(bin_dir)
    try:
        return server.start()
    except BaseException:
        server.stop()
        raise
