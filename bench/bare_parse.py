#!/usr/bin/env python3
"""Parse every object file under a directory with PyYAML's C loader and ``json``, and nothing else.

This is the floor for argo-doctor's object pass: ``bench/run.py`` times it in a child
process and compares the scan of ``<bundle>/objects`` against it. Prints one JSON line with
the number of files, documents and objects (items of ``kind: List`` counted one by one).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any

import yaml


def count_objects(doc: Any) -> int:
    """Number of Kubernetes objects in one parsed document."""
    if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
        return len(doc["items"])
    return 1


def main(argv: Sequence[str]) -> int:
    """Parse all ``*.yaml``, ``*.yml`` and ``*.json`` files under ``argv[0]``."""
    if len(argv) != 1:
        print("usage: bare_parse.py OBJECTS_DIR", file=sys.stderr)
        return 2
    loader = yaml.CSafeLoader  # AttributeError here means PyYAML was built without libyaml
    files = documents = objects = 0
    for dirpath, dirnames, filenames in os.walk(argv[0]):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            ext = os.path.splitext(name)[1].lower()
            with open(path, "rb") as f:
                if ext in (".yaml", ".yml"):
                    docs = [d for d in yaml.load_all(f, Loader=loader) if d is not None]
                elif ext == ".json":
                    docs = [json.load(f)]
                else:
                    continue
            files += 1
            documents += len(docs)
            objects += sum(count_objects(d) for d in docs)
    print(json.dumps({"files": files, "documents": documents, "objects": objects}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
