"""The run header's schema, docs/schema/run-header.schema.json, against what is written:
the schema closes every object (additionalProperties false, so it is the whole header); the
headers of the committed recordings and those the unit tests write follow it; docs/formats.md's
run header table has every key of the schema and no other.

Usage: test_run_header_schema.py --unit-tests PATH_TO_mcuprof_tests"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "pylib"))
import run_header  # noqa: E402

UNIT_TESTS: Path | None = None
# The unit tests that write recordings or make headers; each leaves every header it writes
# in MCUPROF_RUN_HEADERS (tests/inputs/kept_headers.h).
HEADER_WRITING_TESTS = "recording*,run header*,sampling loop over OpenOCD*"


def schema() -> dict:
    return json.loads(run_header.SCHEMA_PATH.read_text())


def resolved(node: dict, root: dict) -> dict:
    while "$ref" in node:
        assert node["$ref"].startswith("#/$defs/"), node["$ref"]
        node = root["$defs"][node["$ref"][len("#/$defs/"):]]
    return node


def keys(node: dict, root: dict, prefix: str = "") -> set[str]:
    """Every property of an object schema, dotted below objects and with [] below lists."""
    out = set()
    for name, sub in node.get("properties", {}).items():
        key = prefix + name
        out.add(key)
        sub = resolved(sub, root)
        if sub.get("type") == "array":
            item = resolved(sub["items"], root)
            if "properties" in item:
                out |= keys(item, root, key + "[].")
        elif "properties" in sub:
            out |= keys(sub, root, key + ".")
    return out


def objects(node, path="schema"):
    """Every object schema in the schema, with where it is."""
    if isinstance(node, dict):
        if node.get("type") == "object":
            yield path, node
        for name, sub in node.items():
            yield from objects(sub, f"{path}/{name}")
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            yield from objects(sub, f"{path}/{i}")


def committed_recordings() -> list[Path]:
    """Every file of the source tree (build trees and dot folders left out) whose bytes start
    with a recording's magic. Walked, not asked of git: a fresh Debian root (scripts/setup.sh)
    has no git, and a source tarball no .git."""
    found = []
    for folder, folders, files in os.walk(REPO):
        folders[:] = sorted(d for d in folders if not d.startswith((".", "build")) and d != "node_modules")
        for name in sorted(files):
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                with open(path, "rb") as f:
                    if f.read(8) == run_header.MAGIC:
                        found.append(path)
    return found


class RunHeaderSchema(unittest.TestCase):
    def test_every_object_is_closed(self):
        s = schema()
        found = list(objects(s))
        self.assertGreater(len(found), 8)
        for where, node in found:
            self.assertIs(node.get("additionalProperties"), False, where)

    def test_what_it_refuses(self):
        good = {"source": "gdb", "method": "halt", "pacing": {"clock": "wall", "shape": "exponential"}}
        self.assertEqual(run_header.schema_errors(good), [])
        for bad in ({**good, "sorce": "gdb"}, {**good, "source": "jtag"},
                    {**good, "pacing": {"clock": "wall", "shape": "exponential", "mean": 1}},
                    {**good, "cores": [{"core": 0}]}, {"method": "halt"}):
            self.assertNotEqual(run_header.schema_errors(bad), [], bad)

    def test_committed_headers_follow_it(self):
        # Headers as mcuprof wrote them for real runs (tests/data/run_headers: one per link and
        # mode), and every committed recording (the fuzz corpus, the golden test's inputs).
        headers = sorted((REPO / "tests" / "data" / "run_headers").glob("*.json"))
        self.assertGreaterEqual(len(headers), 10)
        for path in headers:
            run_header.checked(json.loads(path.read_bytes()), str(path))
        recordings = committed_recordings()
        self.assertTrue(recordings)
        for path in recordings:
            run_header.read_header(path)

    def test_headers_the_unit_tests_write_follow_it(self):
        if UNIT_TESTS is None or not UNIT_TESTS.is_file():
            self.fail(f"the unit tests are not built: {UNIT_TESTS}")
        with tempfile.TemporaryDirectory(prefix="mcuprof-headers-") as folder:
            run = subprocess.run([str(UNIT_TESTS), f"--test-case={HEADER_WRITING_TESTS}"],
                                 env={**os.environ, "MCUPROF_RUN_HEADERS": folder},
                                 capture_output=True, text=True, timeout=600)
            self.assertEqual(run.returncode, 0, run.stdout[-3000:])
            written = sorted(Path(folder).glob("*.json"))
            # Each of those tests keeps its headers: far more than the kinds of header there are.
            self.assertGreaterEqual(len(written), 20)
            sources = set()
            for path in written:
                header = run_header.checked(json.loads(path.read_bytes()), path.name)
                sources.add(header["source"])
            self.assertEqual(sources, {"gdb", "openocd", "qemu"})

    def test_formats_table_has_every_key_and_no_other(self):
        text = (REPO / "docs" / "formats.md").read_text()
        section = text[text.index("### Run header"):]
        section = section[:section.index("\n## ")]
        table = set(re.findall(r"^\| `([a-z_\[\].]+)` \|", section, re.M))
        s = schema()
        in_schema = keys(s, s)
        self.assertEqual(sorted(in_schema - table), [], "in the schema, not in docs/formats.md's table")
        self.assertEqual(sorted(table - in_schema), [], "in docs/formats.md's table, not in the schema")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--unit-tests", type=Path)
    args, rest = parser.parse_known_args()
    UNIT_TESTS = args.unit_tests
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)
