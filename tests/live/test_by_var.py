"""--by var:NAME (issue 31): samples grouped by the value of a global variable read at each
halt, against a truth computed without mcuprof.

state_m4 (firmware-ref/src/scen_state.c) sets the enumeration app_state before each state's
work, and each state's work is one function: IDLE runs hot_a, MEASURE hot_b, SEND hot_c. The
time in a state is then that function's share of the run's instructions (the truth plugin's
counts, attributed with arm-none-eabi-nm's symbol table), give or take main's own
instructions between the stores, which fall in whichever state was just set: the bound adds
main's whole share (about 0.2 %) to 4 standard errors.

- record --qemu --by var:app_state: each state's share against that truth, the rows named by
  the DWARF's enumerators, in text, JSON and HTML, and report --by var:app_state of the
  recording gives the same rows.
- top --qemu --by var:app_state: its last table (every sample of the run, no decay) against
  the same truth, headed by the variable's name.
- a signed 16-bit integer (app_level, -3 throughout): one row named "-3".
- checked before the link: a float, a structure, an unknown name, a variable the linker
  removed, each one line and exit 2, with --gdb at a port where nothing listens (the check
  comes first, so the error names the variable, not the link); report --by var:OTHER of the
  recording is refused likewise.

QEMU is started by mcuprof (record --qemu) or by qemu_runner on free ports, stopped on every path."""
from __future__ import annotations

import math
import re
import shutil
import socket
import tempfile
import unittest
from pathlib import Path

import fwtest
import qemu_runner
from live_runs import mcuprof, report_json

IMAGE = "state_m4"
STATES = {"STATE_IDLE": "hot_a", "STATE_MEASURE": "hot_b", "STATE_SEND": "hot_c"}
SAMPLES = 3000


def unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ByVariable(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-byvar-"))
        cls.elf = fwtest.elf_path(IMAGE)
        census = cls.work / "census.txt"
        qemu_runner.run_to_exit(cls.elf, truth_path=census, timeout=300)
        by_function = fwtest.by_function(fwtest.read_counts(census), fwtest.symbols(IMAGE))
        total = sum(by_function.values())
        cls.truth = {state: 100.0 * by_function[fn] / total for state, fn in STATES.items()}
        cls.main_share = 100.0 * by_function["main"] / total
        cls.rec = cls.work / "state.bin"
        cls.recorded = mcuprof("record", "--qemu", "netduinoplus2", "--elf", str(cls.elf), "--by", "var:app_state",
                               "--samples", str(SAMPLES), "-o", str(cls.rec))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work, ignore_errors=True)

    def test_time_per_state_against_the_truth(self):
        self.assertEqual(self.recorded.returncode, 0, self.recorded.stderr)
        doc = report_json(self.rec, self.elf, "--by", "var:app_state")
        self.assertEqual(doc["by"], "var:app_state")
        rows = {r["name"]: r for r in doc["functions"]}
        self.assertEqual(set(rows), set(STATES), rows.keys())   # enumerators; STATE_FAULT never set
        n = sum(r["samples"] for r in rows.values())
        self.assertGreaterEqual(n, SAMPLES * 0.9)
        for state, truth in self.truth.items():
            se = 100.0 * math.sqrt(truth / 100 * (1 - truth / 100) / n)
            self.assertLess(abs(rows[state]["percent"] - truth), 4 * se + self.main_share,
                            f"{state}: {rows[state]['percent']:.2f} % against {truth:.2f} % (se {se:.2f})")

    def test_text_and_html_name_the_states(self):
        self.assertEqual(self.recorded.returncode, 0, self.recorded.stderr)
        text = self.recorded.stdout   # record prints the profile of what it recorded
        self.assertIn("var:app_state", text)
        for state in STATES:
            self.assertRegex(text, rf"\n\s+[\d.]+\s+[\d.]+\s+\d+\s+{state}\n")
        page = self.work / "state.html"
        r = mcuprof("report", str(self.rec), "--elf", str(self.elf), "--by", "var:app_state", "--format", "html",
                    "-o", str(page))
        self.assertEqual(r.returncode, 0, r.stderr)
        html = page.read_text()
        for state in STATES:
            self.assertIn(state, html)

    def test_top_ranks_the_states_against_the_truth(self):
        r = mcuprof("top", "--qemu", "netduinoplus2", "--elf", str(self.elf), "--by", "var:app_state",
                    "--samples", str(SAMPLES), "--rows", "0")
        self.assertEqual(r.returncode, 0, r.stderr)
        last = r.stdout.strip().split("\n\n")[-1].splitlines()
        self.assertEqual(last[1].split(), ["%", "+-se", "weight", "app_state"])
        shown = {}
        for line in last[2:]:
            percent, _, weight, name = line.split(None, 3)
            shown[name] = (float(percent), float(weight))
        self.assertEqual(set(shown), set(STATES), last)
        n = sum(weight for _, weight in shown.values())
        self.assertGreaterEqual(n, SAMPLES * 0.9)
        for state, truth in self.truth.items():
            se = 100.0 * math.sqrt(truth / 100 * (1 - truth / 100) / n)
            self.assertLess(abs(shown[state][0] - truth), 4 * se + self.main_share,
                            f"top {state}: {shown[state][0]:.2f} % against {truth:.2f} % (se {se:.2f})")

    def test_a_signed_integer_is_named_by_its_value(self):
        rec = self.work / "level.bin"
        r = mcuprof("record", "--qemu", "netduinoplus2", "--elf", str(self.elf), "--by", "var:app_level",
                    "--samples", "50", "-o", str(rec))
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = report_json(rec, self.elf, "--by", "var:app_level")
        self.assertEqual([row["name"] for row in doc["functions"]], ["-3"])

    def test_checked_before_the_link(self):
        port = unused_port()
        for name, reason in (("app_ratio", "of type 'float'"), ("app_config", "of type 'struct app_config'"),
                             ("no_such_variable", "no global or static variable 'no_such_variable'")):
            for command in (("record", "-o", str(self.work / "never.bin")), ("top",)):
                r = mcuprof(command[0], "--gdb", f"127.0.0.1:{port}", "--elf", str(self.elf), "--by", f"var:{name}",
                            "--samples", "10", *command[1:])
                lines = [line for line in r.stderr.splitlines() if line.strip()]
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(len(lines), 1, r.stderr)
                self.assertIn(reason, lines[0])
                self.assertIn(f"--by var:{name}", lines[0])

    def test_a_recording_without_the_variable_is_refused(self):
        self.assertEqual(self.recorded.returncode, 0, self.recorded.stderr)
        r = mcuprof("report", str(self.rec), "--elf", str(self.elf), "--by", "var:app_level")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("watched the variable app_state, not app_level", r.stderr)


if __name__ == "__main__":
    unittest.main()
