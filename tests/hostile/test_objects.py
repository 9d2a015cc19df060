"""Hostile object files: absurd nesting (read in this process, and on the process pool), an alias bomb
measured in bytes, a huge sparse file, a huge scalar.

Each sits in `objects/` of a bundle given beside examples/argocd-basic, and is read by `scan`, `health`
and `deprecations`: the bad file is one input error and everything else is reported as without it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile.conftest import Argo, Baseline, assert_reader

HEAD = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\n"
READERS = ("scan", "health", "deprecations")


def deep(objects: Path) -> None:
    """60 KB of YAML nested 30,000 deep: libyaml's composer recurses once per level."""
    (objects / "deep.yaml").write_text(HEAD.format(name="deep") + "data: " + "[" * 30_000 + "]" * 30_000 + "\n")


def deep_in_workers(objects: Path) -> None:
    """The deep file beside 16 MiB of comments: enough object bytes to be parsed on the process pool."""
    deep(objects)
    (objects / "padding.yaml").write_bytes(b"# padding\n" * ((16 << 20) // 10 + 1))


def alias_bytes(objects: Path) -> None:
    """One 1 MiB scalar referenced 3,000 times: 3,001 nodes, 3 GiB once expanded."""
    aliases = ", ".join(["*big"] * 3_000)
    (objects / "alias.yaml").write_text(
        HEAD.format(name="alias") + f"data:\n  big: &big \"{'x' * (1 << 20)}\"\n  copies: [{aliases}]\n"
    )


def sparse(objects: Path) -> None:
    """A 2 GiB object file that is one hole (NUL bytes that take no disk)."""
    with (objects / "sparse.yaml").open("wb") as handle:
        handle.truncate(2 << 30)


def scalar(objects: Path) -> None:
    """A real 200 MB file: one ConfigMap whose value is one 200 MB scalar."""
    with (objects / "scalar.yaml").open("w", encoding="ascii") as handle:
        handle.write(HEAD.format(name="scalar") + 'data:\n  value: "')
        chunk = "y" * (1 << 20)
        for _ in range(200):
            handle.write(chunk)
        handle.write('"\n')


HOSTILE: dict[str, tuple[Callable[[Path], None], str, str, tuple[str, ...]]] = {
    "deep": (deep, "objects/deep.yaml", "nest|deep", READERS),
    "deep-in-workers": (deep_in_workers, "objects/deep.yaml", "nest|deep", ("scan", "health")),
    "alias-bytes": (alias_bytes, "objects/alias.yaml", "alias", READERS),
    "sparse-2g": (sparse, "objects/sparse.yaml", "too large|too big|limit|binary|NUL", READERS),
    "scalar-200m": (scalar, "objects/scalar.yaml", "too large|too big|limit", READERS),
}
CASES = [(case, command) for case, (*_, commands) in sorted(HOSTILE.items()) for command in commands]


@pytest.mark.parametrize(("case", "command"), CASES)
def test_hostile_object_file(argo: Argo, good: Baseline, tmp_path: Path, case: str, command: str) -> None:
    """The hostile file is named in `errors` with what is wrong with it; exit 0/1, no crash, no hang,
    bounded memory, nothing of the good input lost. (`deprecations` reads files in this process only.)"""
    make, named, phrase, _ = HOSTILE[case]
    hostile = tmp_path / "hostile"
    (hostile / "objects").mkdir(parents=True)
    make(hostile / "objects")
    try:
        assert_reader(argo, command, hostile, named, phrase, good)
    finally:
        for path in (hostile / "objects").iterdir():
            os.unlink(path)  # a 200 MB file is not worth keeping among pytest's last three temp dirs
