#!/usr/bin/env python3
"""The closing lines of `make test`, read from ctest's JUnit report (ctest --output-junit).

Prints one line per test that did not pass (failed, or skipped with the reason the test gave
for it), then one summary line, last:

    tests: 231 passed, 0 failed, 1 skipped

Exit status 0 when no test failed and at least one ran, else 1.

Several reports may be given, each as PATH or NAME=PATH: the tests of a named one are listed
as "NAME: test" (make test names the QEMU 10 run of the QEMU-driven labels "qemu10"), and the
summary line counts them all. A report that is missing or unreadable counts as one failure.

A skipped test is one that exited with its SKIP_RETURN_CODE; its reason is the first line of
its output that starts with "skipped" (the convention of our test scripts). A test ctest did
not run because a fixture it requires failed counts as failed: the suite did not pass.
"""
from __future__ import annotations

import sys
import xml.etree.ElementTree as ET


def skip_reason(output: str) -> str:
    for line in output.splitlines():
        line = line.strip()
        if line.lower().startswith("skipped"):
            return line[len("skipped"):].lstrip(" :") or line
    return "no reason given in its output"


def main(reports: list[str]) -> int:
    passed, failed, skipped = [], [], []
    for report in reports:
        prefix, _, path = report.rpartition("=")
        prefix = f"{prefix}: " if prefix else ""
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as e:
            failed.append(f"{prefix}no results ({path}: {e})")
            continue
        read_report(root, prefix, passed, failed, skipped)
    for name in failed:
        print(f"failed: {name}")
    for name, reason in skipped:
        print(f"skipped: {name}: {reason}")
    print(f"tests: {len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped")
    return 0 if not failed and passed else 1


def read_report(root: ET.Element, prefix: str, passed: list, failed: list, skipped: list) -> None:
    for case in root.iter("testcase"):
        name = prefix + case.get("name", "?")
        output = case.findtext("system-out") or ""
        skip = case.find("skipped")
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(name)
        elif skip is not None:
            # ctest writes <skipped> both for a test that exited with its SKIP_RETURN_CODE
            # (message "SKIP_RETURN_CODE=77") and for one it did not run at all (a failed
            # fixture, a missing executable): only the first is a skip.
            message = skip.get("message", "")
            if message.startswith("SKIP_RETURN_CODE") or message.startswith("SKIP_REGULAR_EXPRESSION"):
                skipped.append((name, skip_reason(output)))
            else:
                failed.append(f"{name} (not run: {message or 'unknown reason'})")
        else:
            passed.append(name)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: test_summary.py [NAME=]CTEST_JUNIT_XML...", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
