"""--by var:NAME through OpenOCD's Tcl port (issue 31): `record --openocd --mode halt --by
var:app_state` reads the watched variable in the same Tcl script as each halt's registers.

The image is state_forever_m4 (firmware-ref/src/scen_state.c without an end): app_state is set
to IDLE, MEASURE, SEND before hot_a, hot_b, hot_c, so the time in each state is the time in its
function, give or take main's few instructions between the stores, which fall in the state just
set. QEMU runs behind the vprobe (JTAG) at the truth plugin's uniform cost, and the recording is
held against the time census of its own window (the host time in which a wall-clock halt would
have stopped in each function: docs/firmware-ref.md): each state's share within 4 binomial
standard errors of its function's share, plus main's whole share of the window. Rows are named
by the DWARF's enumerators, and the target is left running.

Samples are 50 ms apart on average (exponential waits), five rounds of the workload at 2000 ns
an instruction, so the phase at each halt is random. The recording ends by its sample count;
the image never ends. Ports are chosen at run time; every process started here is stopped on
every path.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import fwtest
from openocd_rig import CLI, OPENOCD, UNIFORM_COST_NS, elf_functions, require, start_rig, stop_rig
from openocd_record_suite import by_function
from qemu_runner import census_window

IMAGE = "state_forever_m4"
STATES = {"STATE_IDLE": "hot_a", "STATE_MEASURE": "hot_b", "STATE_SEND": "hot_c"}
SAMPLES = 400
Z = 4.0


class ByVariableThroughOpenOCD(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.elf = fwtest.elf_path(IMAGE)
        require((OPENOCD, "arm-none-eabi-nm"), (CLI, cls.elf))
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-byvar-openocd-"))
        try:
            start_rig(cls, cls.elf, truth=cls.work / "truth.txt", uniform_cost_ns=UNIFORM_COST_NS)
            _, before = cls.qemu.snapshot_and_times()
            cls.recording = subprocess.run(
                [str(CLI), "record", "--openocd", f"127.0.0.1:{cls.tcl_port}", "--mode", "halt", "--by", "var:app_state",
                 "--samples", str(SAMPLES), "--interval", "50ms", "--seed", "31", "--elf", str(cls.elf),
                 "-o", str(cls.work / "state.rec"), "--format", "json"],
                capture_output=True, text=True, timeout=900)
            _, after = cls.qemu.snapshot_and_times()
            cls.state_after = cls.tcl.run("[target current] curstate").strip()
            cls.window = by_function(census_window(before, after), elf_functions(cls.elf))
        finally:
            stop_rig(cls)

    def test_time_per_state_against_the_time_census(self):
        self.assertEqual(self.recording.returncode, 0, self.recording.stderr)
        self.assertEqual(self.state_after, "running")
        doc = json.loads(self.recording.stdout)
        self.assertEqual(doc["by"], "var:app_state")
        rows = {row["name"]: row["samples"] for row in doc["functions"]}
        self.assertEqual(set(rows), set(STATES), rows)   # enumerators; STATE_FAULT never set
        n = sum(rows.values())
        self.assertEqual(n, SAMPLES)
        total = sum(self.window.values())
        main_share = self.window.get("main", 0) / total
        print("\n" + ", ".join(f"{state} {100 * rows[state] / n:.2f}/{100 * self.window[fn] / total:.2f}"
                               for state, fn in STATES.items()) + " (% sampled/time census)", file=sys.stderr)
        for state, function in STATES.items():
            p = self.window[function] / total
            q = rows[state] / n
            se = math.sqrt(p * (1 - p) / n)
            self.assertLess(abs(q - p), Z * se + main_share,
                            f"{state}: {100 * q:.2f} % against {100 * p:.2f} % of the window's time (se {100 * se:.2f})")


if __name__ == "__main__":
    unittest.main()
