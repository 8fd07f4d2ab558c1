"""Call stacks and task tags through OpenOCD's Tcl port: QEMU (-singlestep, truth plugin), the
virtual probe and the real OpenOCD, sampled with `mcuprof record --openocd --mode halt
--stacks` and `mcuprof top --openocd --stacks --by task`, checked as tests/live/test_stacks.py
checks the same images over GDB.

  calltree_forever_m4  the call tree with a structure known by construction: every stack
                       outside the corrupted one reaches Reset_Handler through main, also
                       across the SysTick exception frame, and each function's inclusive
                       share is within 4 standard errors of the truth's (the plugin's self
                       counts summed along the known tree, as test_stacks.expected_inclusive).
  rtos_forever_m4      two tasks under a PendSV scheduler with FreeRTOS's pxCurrentTCB: the
                       task read at each halt and the unwound stack's task entry are two
                       independent readings that must agree; hot_a's time splits between the
                       tasks as the truth's call counts say, within 4 standard errors.

Wall-clock stops under -singlestep are close to uniform over instructions (as in
test_record_openocd.py), so the bounds are standard errors of a sample of N from the truth's
shares. Ports are chosen at run time; every process started here is stopped on every path.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "firmware-ref" / "runner"))
sys.path.insert(0, str(REPO / "tests" / "live"))
sys.path.insert(0, str(HERE))
from test_record_openocd import by_function, read_truth  # noqa: E402
from test_stacks import CHAIN, HANDLER, expected_inclusive  # noqa: E402
from test_vprobe_openocd import CLI, FW_DIR, OPENOCD, elf_functions, require, start_rig, stop_rig  # noqa: E402

Z = 4.0
STACK_SAMPLES = 400
TASK_SAMPLES = 400


def frames_of(stack: dict) -> list[str]:
    return [f["function"] for f in stack["frames"]]


class Rig(unittest.TestCase):
    """One QEMU + vprobe + OpenOCD for `ELF`, the commands of `_sample` run against it, then
    everything stopped and the truth read."""
    ELF: Path

    @classmethod
    def setUpClass(cls):
        require((OPENOCD, "arm-none-eabi-nm"), (CLI, cls.ELF))
        cls.work = Path(tempfile.mkdtemp(prefix="mcuprof-stacks-openocd-"))
        try:
            truth = cls.work / "truth.txt"
            start_rig(cls, cls.ELF, truth=truth, singlestep=True)
            cls._sample()
            cls.tcl.raw("shutdown")
            cls.tcl.close()
            cls.tcl = None
            cls.openocd.wait(timeout=10)
            cls.vprobe.wait(timeout=10)
            cls.qemu.stop()
            cls.counts = read_truth(truth)
            cls.self_counts = by_function(cls.counts, elf_functions(cls.ELF))
        finally:
            stop_rig(cls)

    @classmethod
    def run_cli(cls, *args: str) -> subprocess.CompletedProcess:
        r = subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=600)
        print(f"\nmcuprof {args[0]}: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''}",
              file=sys.stderr)
        return r


class CallTreeThroughOpenOCD(Rig):
    ELF = FW_DIR / "calltree_forever_m4.elf"

    @classmethod
    def _sample(cls):
        rec = cls.work / "stacks.rec"
        cls.record = cls.run_cli("record", "--openocd", f"127.0.0.1:{cls.tcl_port}", "--mode", "halt", "--stacks",
                                 "--samples", str(STACK_SAMPLES), "--elf", str(cls.ELF), "-o", str(rec),
                                 "--format", "json")
        cls.state = cls.tcl.run("[target current] curstate").strip()

    def test_stacks_reach_the_reset_handler_across_exception_frames(self):
        self.assertEqual(self.record.returncode, 0, self.record.stderr)
        self.assertEqual(self.state, "running")
        doc = json.loads(self.record.stdout)
        stacks = doc["stacks"]
        self.assertEqual(sum(s["samples"] for s in stacks), STACK_SAMPLES)
        isr = 0
        for s in stacks:
            names = frames_of(s)
            if "smash" in names:   # its saved LR is garbage most of the time
                continue
            self.assertFalse(s["truncated"], names)
            if names != ["Reset_Handler"]:   # start-up code before main
                self.assertEqual(names[:2], ["Reset_Handler", "main"], names)
            handler = [i for i, f in enumerate(names) if f in HANDLER]
            if handler:   # the interrupted function sits right below the handler
                isr += s["samples"]
                self.assertIn(names[handler[0] - 1], set(expected_inclusive({})) | {"main", "work"}, names)
        # The recursion never shows more than its seven activations.
        self.assertLessEqual(max(frames_of(s).count("recurse") for s in stacks), 7)
        self.assertIn("stacks", doc["sampler"])

    def test_inclusive_shares_within_4_se_of_the_truth(self):
        self.assertEqual(self.record.returncode, 0, self.record.stderr)
        stacks = json.loads(self.record.stdout)["stacks"]
        outside = [s for s in stacks if not HANDLER & set(frames_of(s))]
        n = sum(s["samples"] for s in outside)
        true_total = sum(c for f, c in self.self_counts.items() if f not in HANDLER)
        bad = []
        for function, incl in expected_inclusive(self.self_counts).items():
            p = incl / true_total
            q = sum(s["samples"] for s in outside if function in frames_of(s)) / n
            if abs(q - p) > Z * math.sqrt(p * (1 - p) / n):
                bad.append((function, round(100 * q, 2), round(100 * p, 2)))
        self.assertEqual(bad, [], f"(function, sampled %, true %) over {n} samples")
        # The deep chain is whole wherever its leaf is on the stack: main, deep1 ... deep_leaf.
        leaf = [frames_of(s) for s in stacks if "deep_leaf" in frames_of(s)]
        self.assertTrue(leaf)
        for names in leaf:
            self.assertEqual(names[1:2 + len(CHAIN)], ["main", *CHAIN], names)


class TasksThroughOpenOCD(Rig):
    ELF = FW_DIR / "rtos_forever_m4.elf"

    @classmethod
    def _sample(cls):
        cls.rec = cls.work / "tasks.rec"
        cls.top = cls.run_cli("top", "--openocd", f"127.0.0.1:{cls.tcl_port}", "--mode", "halt", "--stacks",
                              "--by", "task", "--samples", str(TASK_SAMPLES), "--refresh", "500ms", "--rows", "0",
                              "--elf", str(cls.ELF), "-o", str(cls.rec))
        cls.state = cls.tcl.run("[target current] curstate").strip()
        cls.report = cls.run_cli("report", str(cls.rec), "--elf", str(cls.ELF), "--by", "task", "--format", "json")

    def test_top_ranks_the_tasks(self):
        self.assertEqual(self.top.returncode, 0, self.top.stderr)
        self.assertEqual(self.state, "running")
        last = [line for line in self.top.stdout.splitlines() if line.startswith("top ")][-1]
        self.assertIn(f"(end: sample count reached): {TASK_SAMPLES} samples", last)
        rows = [line.split(None, 3)[3] for line in self.top.stdout.split(last)[1].strip().splitlines()[1:]]
        self.assertEqual(set(rows) - {"(no task)"}, {"motor", "link"})

    def test_task_tags_and_stacks_agree(self):
        self.assertEqual(self.report.returncode, 0, self.report.stderr)
        doc = json.loads(self.report.stdout)
        self.assertEqual(doc["samples"], TASK_SAMPLES)
        entry = {"motor": "task_motor", "link": "task_link"}
        hot_a = {"motor": 0, "link": 0}
        for s in doc["stacks"]:
            names = frames_of(s)
            task = names[0]
            if task not in entry:   # before the scheduler starts: no task yet
                self.assertEqual(task, "(no task)", names)
                continue
            if len(names) > 1 and names[1] in entry.values():
                self.assertEqual(names[1], entry[task], names)
                self.assertFalse(s["truncated"], names)
            if names[-1] == "hot_a":
                hot_a[task] += s["samples"]
        # hot_a(n) costs 5n + 4 instructions; motor runs hot_a(600) per turn, link hot_a(300)
        # and hot_b(100): the turns from the truth's call counts (hot_b's are link's).
        functions = elf_functions(self.ELF)
        link_turns = self.counts.get(functions["hot_b"][0], 0)
        motor_turns = self.counts.get(functions["hot_a"][0], 0) - link_turns
        motor, link = motor_turns * (5 * 600 + 4), link_turns * (5 * 300 + 4)
        n = hot_a["motor"] + hot_a["link"]
        p = motor / (motor + link)
        self.assertGreater(n, 100)
        self.assertLess(abs(hot_a["motor"] / n - p), Z * math.sqrt(p * (1 - p) / n), (hot_a, p))

    def test_tasks_are_named_in_the_recording(self):
        doc = json.loads(self.report.stdout)
        names = {row["name"] for row in doc["functions"]}
        self.assertTrue({"motor", "link"} <= names, names)


if __name__ == "__main__":
    unittest.main()
