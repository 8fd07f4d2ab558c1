#!/usr/bin/env python3
"""A ctest fixture: the optional part a test needs was built. `make build` goes on without the
VS Code extension or the Rust images when their tools are missing or failing (it writes the
reason beside where the file would be: NAME.unbuilt, or FILE.unbuilt), so under `make test` a
left-out part is this failure, naming it with that reason, and never a skip or a silent pass
of the tests that need it.

    part_built.py PART FILE...
"""
from __future__ import annotations

import sys
from pathlib import Path


def marker(path: Path) -> Path | None:
    for m in (path.with_suffix(".unbuilt"), path.with_name(path.name + ".unbuilt")):
        if m.is_file():
            return m
    return None


def reason(path: Path) -> str:
    m = marker(path)
    return m.read_text().strip().splitlines()[0] if m else "no reason recorded (make build)"


def main(part: str, files: list[str]) -> int:
    # A file beside its marker is an earlier build's, not this one's.
    missing = [Path(f) for f in files if not Path(f).exists() or marker(Path(f))]
    for path in missing:
        print(f"{part} was not built: {path.name}: {reason(path)}")
    if not missing:
        print(f"{part}: {len(files)} file(s) built")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
