"""How the program ends: after `scan`, `timeline` and `map`, at once when their output is flushed (`cli.run`);
after any other command, or with something still running, as the interpreter ends."""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from argo_doctor import cli
from argo_doctor.cli import scan as cli_scan
from tests.conftest import BUNDLES


class _Ended(BaseException):
    """Raised by the stand-in for `os._exit`, with the status and the output written by then."""

    def __init__(self, code: int, output: str) -> None:
        super().__init__(code)
        self.code, self.output = code, output


@pytest.fixture
def ending(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Iterator[None]:
    """`os._exit` replaced by a raise of _Ended, which takes what was written to standard output by then."""
    def fake_exit(code: int) -> None:
        raise _Ended(code, capsys.readouterr().out)

    monkeypatch.setattr(os, "_exit", fake_exit)
    yield


def _run(monkeypatch: pytest.MonkeyPatch, *args: str) -> None:
    monkeypatch.setattr("sys.argv", ["argo-doctor", *args])
    cli.run()


@pytest.mark.parametrize(("args", "code", "key"), [
    (["scan", str(BUNDLES / "engine-basic"), "-o", "json"], 1, "findings"),
    (["scan", str(BUNDLES / "engine-basic"), "-o", "json", "--fail-on", "never"], 0, "findings"),
    (["timeline", str(BUNDLES / "cluster-info-dump"), "-o", "json"], 0, "timeline"),
    (["map", str(BUNDLES / "engine-basic"), "-o", "json"], 0, "components"),
], ids=["scan", "scan-never", "timeline", "map"])
def test_a_reading_command_ends_at_once_after_its_whole_output(
    args: list[str], code: int, key: str, ending: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(_Ended) as ended:
        _run(monkeypatch, *args)
    assert ended.value.code == code
    assert key in json.loads(ended.value.output)


def test_a_reading_command_that_fails_ends_at_once_with_its_status(
    ending: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with pytest.raises(_Ended) as ended:
        _run(monkeypatch, "scan", str(tmp_path / "missing"))
    assert ended.value.code == 2


@pytest.mark.parametrize("args", [["rules"], ["--version"], ["signatures"]])
def test_other_commands_end_as_the_interpreter_ends(
    args: list[str], ending: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SystemExit) as ended:
        _run(monkeypatch, *args)
    assert ended.value.code in (0, None)


def test_a_command_after_a_reading_one_in_the_same_process_ends_as_usual(
    ending: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(_Ended):
        _run(monkeypatch, "map", str(BUNDLES / "engine-basic"), "-o", "json")
    with pytest.raises(SystemExit):
        _run(monkeypatch, "rules")


def test_another_thread_leaves_the_end_to_the_interpreter(ending: None, monkeypatch: pytest.MonkeyPatch) -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        with pytest.raises(SystemExit) as ended:
            _run(monkeypatch, "scan", str(BUNDLES / "engine-basic"), "-o", "json", "--fail-on", "never")
        assert ended.value.code == 0
    finally:
        stop.set()
        other.join()


def test_a_child_process_left_leaves_the_end_to_the_interpreter(ending: None, monkeypatch: pytest.MonkeyPatch) -> None:
    child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(60,))
    child.start()
    try:
        with pytest.raises(SystemExit) as ended:
            _run(monkeypatch, "map", str(BUNDLES / "engine-basic"), "-o", "json")
        assert ended.value.code == 0
    finally:
        child.kill()
        child.join()


class _BrokenFlush(io.StringIO):
    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


def test_an_output_that_cannot_be_flushed_leaves_the_end_to_the_interpreter(
    ending: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stderr", _BrokenFlush())
    with pytest.raises(SystemExit):
        _run(monkeypatch, "map", str(BUNDLES / "engine-basic"), "-o", "json")


def test_an_exit_with_a_message_leaves_it_to_the_interpreter(ending: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def stop(*args: object, **kwargs: object) -> None:
        raise SystemExit("stopped")

    monkeypatch.setattr(cli_scan, "run_scan", stop)
    with pytest.raises(SystemExit) as ended:
        _run(monkeypatch, "scan", str(BUNDLES / "engine-basic"))
    assert ended.value.code == "stopped"
