#!/usr/bin/env python3
"""Writes tests/golden/expected/ again from tests/golden/inputs/ with the mcuprof under test.

Only for a difference that is a fix, named in the commit that carries the new expected files
(README.md, "When to regenerate"). It replaces expected/ whole: outputs of cases that are gone
are removed, and the shared HTML scripts are stored once under expected/_assets.

    python3 tests/golden/regenerate.py              # build/mcuprof, or $MCUPROF_CLI
    git diff --stat tests/golden/expected           # what changed, to name in the commit
"""
from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import golden


def main() -> int:
    if not golden.CLI.is_file():
        sys.exit(f"{golden.CLI} is missing: make build (or set MCUPROF_CLI)")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mcuprof-golden-") as scratch:
        results = golden.run_all(Path(scratch))
    if golden.EXPECTED.exists():
        shutil.rmtree(golden.EXPECTED)
    assets: dict[str, bytes] = {}
    files = 0
    for case in golden.cases():
        result = results[case.path]
        out_path, err_path = golden.expected_files(case)
        out_path.parent.mkdir(parents=True, exist_ok=True)
        if result.output is not None:
            out_path.write_bytes(golden.stored_form(case.path, result.output, assets))
            files += 1
        err = result.err_file()
        if err is not None:
            err_path.write_bytes(err)
            files += 1
    golden.ASSETS.mkdir(parents=True, exist_ok=True)
    for sha, body in assets.items():
        (golden.ASSETS / f"{sha}.js").write_bytes(body)
    failed = sum(1 for r in results.values() if r.status != 0)
    print(f"{len(results)} cases ({failed} ending with a status other than 0, as expected of the refusals): "
          f"{files} files and {len(assets)} shared scripts in {golden.EXPECTED} "
          f"in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
