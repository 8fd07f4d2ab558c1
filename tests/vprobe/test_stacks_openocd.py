"""Call stacks and task tags through OpenOCD's Tcl port: QEMU (the truth plugin at uniform cost), the
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
  zephyr_forever_m4    three threads under the kernel shaped like Zephyr's, found through
                       _kernel.cpus[0].current: no sample of a thread's own code is tagged
                       with another thread, and each thread's share is within 4 standard
                       errors of the truth's (tests/live/test_tasks.py, over GDB).

QEMU runs the truth plugin's uniform-cost mode, so wall-clock halts land on instructions in
proportion to their executions, and the truth is the exact count of the recordings' own window
(the plugin's snapshots just before and after them; tests/vprobe/test_oracle_paths.py): the
bounds are standard errors of a sample of N from the window's shares. Ports are chosen at run time; every process started here is stopped on every path.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from openocd_record_suite import by_function
from openocd_rig import (CLI, FW_DIR, OPENOCD, UNIFORM_COST_NS, elf_functions, require, shut_down_openocd, start_rig,
                         stop_rig)
from qemu_runner import census_window
from stack_checks import (CHAIN, NO_TASK, ZEPHYR_EDGE, ZEPHYR_OWN, assert_share_between, check_chains_reach_reset,
                          check_tasks_against_stacks, inclusive_beyond_bound, tagged_leaves)

STACK_SAMPLES = 400
TASK_SAMPLES = 400
# A mean wait of 50 ms between halts: 25 000 instructions of the uniform-cost guest at most, and
# exponential waits, so the phase of the workload is random at each halt and the samples stay
# independent draws of it.
INTERVAL = ("--interval", "50ms")


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
            start_rig(cls, cls.ELF, truth=cls.work / "truth.txt", uniform_cost_ns=UNIFORM_COST_NS)
            before = cls.qemu.snapshot()
            cls._sample()
            cls.counts = census_window(before, cls.qemu.snapshot())
            shut_down_openocd(cls)
            cls.qemu.stop()
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
                                 *INTERVAL, "--samples", str(STACK_SAMPLES), "--elf", str(cls.ELF), "-o", str(rec),
                                 "--format", "json")
        cls.state = cls.tcl.run("[target current] curstate").strip()

    def test_stacks_reach_the_reset_handler_across_exception_frames(self):
        self.assertEqual(self.record.returncode, 0, self.record.stderr)
        self.assertEqual(self.state, "running")
        doc = json.loads(self.record.stdout)
        stacks = doc["stacks"]
        self.assertEqual(sum(s["samples"] for s in stacks), STACK_SAMPLES)
        check_chains_reach_reset(self, stacks)
        # The recursion never shows more than its seven activations.
        self.assertLessEqual(max(frames_of(s).count("recurse") for s in stacks), 7)
        self.assertIn("stacks", doc["sampler"])

    def test_inclusive_shares_within_4_se_of_the_truth(self):
        self.assertEqual(self.record.returncode, 0, self.record.stderr)
        stacks = json.loads(self.record.stdout)["stacks"]
        bad, n = inclusive_beyond_bound(stacks, self.self_counts)
        self.assertEqual(bad, [], f"(function, sampled %, true %, bound) over {n} samples")
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
                              "--by", "task", *INTERVAL, "--samples", str(TASK_SAMPLES), "--refresh", "500ms",
                              "--rows", "0", "--elf", str(cls.ELF), "-o", str(cls.rec))
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
        # The walk and the bounds of tests/live/test_stacks.py; fewer samples here (wall
        # clock through the probe), so the 4-standard-error bound is wider, not looser.
        functions = elf_functions(self.ELF)
        check_tasks_against_stacks(self, doc["stacks"], self.counts.get(functions["hot_a"][0], 0),
                                   self.counts.get(functions["hot_b"][0], 0), 100)

    def test_tasks_are_named_in_the_recording(self):
        doc = json.loads(self.report.stdout)
        names = {row["name"] for row in doc["functions"]}
        self.assertTrue({"motor", "link"} <= names, names)


class ZephyrThreadsThroughOpenOCD(Rig):
    ELF = FW_DIR / "zephyr_forever_m4.elf"

    @classmethod
    def _sample(cls):
        cls.record = cls.run_cli("record", "--openocd", f"127.0.0.1:{cls.tcl_port}", "--mode", "halt", "--stacks",
                                 "--by", "task", *INTERVAL, "--samples", str(TASK_SAMPLES), "--elf", str(cls.ELF),
                                 "-o", str(cls.work / "threads.rec"), "--format", "json")
        cls.state = cls.tcl.run("[target current] curstate").strip()

    def test_thread_tags_and_shares_against_the_truth(self):
        self.assertEqual(self.record.returncode, 0, self.record.stderr)
        self.assertEqual(self.state, "running")
        pairs = tagged_leaves(json.loads(self.record.stdout))
        self.assertEqual(sum(pairs.values()), TASK_SAMPLES)
        owner = {f: task for task, fs in ZEPHYR_OWN.items() for f in fs}
        # Sampling starts long after start-up: every sample of a thread's code has its thread.
        wrong = {k: v for k, v in pairs.items() if k[1] in owner and k[0] != owner[k[1]]}
        self.assertEqual(wrong, {})
        # The truth after the start: the threads' own functions and the switch between them.
        own = {task: sum(self.self_counts.get(f, 0) for f in fs) for task, fs in ZEPHYR_OWN.items()}
        edge = sum(self.self_counts.get(f, 0) for f in ZEPHYR_EDGE)
        total = sum(own.values()) + edge
        tagged = sum(v for (task, _), v in pairs.items() if task != NO_TASK)
        for task in own:
            sampled = sum(v for (t, _), v in pairs.items() if t == task)
            assert_share_between(self, task, sampled, tagged, own[task] / total, (own[task] + edge) / total)


if __name__ == "__main__":
    unittest.main()
