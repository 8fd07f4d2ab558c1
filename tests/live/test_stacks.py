"""Call stacks at every halt (issue 7), against the truth plugin on the call-tree scenario.

The scenario (firmware-ref/src/scen_calltree.c) has a call structure known by construction, so
each function's inclusive count follows from the plugin's self counts: a chain's inclusive
count is the sum of the self counts below it, `shared` splits 3:1 between its two callers
(it costs the same on every call). Samples are taken at random instruction counts of a
replayed run (exact pacing), so among the samples outside the interrupt handler, the share
whose stack holds f is binomial around f's true inclusive share: every bound is 4 standard
errors, sqrt(p(1-p)/N)."""
from __future__ import annotations

import collections
import json
import math
import os
import statistics
import subprocess
import sys
import unittest
from pathlib import Path

import fwtest  # noqa: E402
import qemu_runner  # noqa: E402
from live_runs import mcuprof, replayed_recording
from stack_checks import (FPU_ENTRIES, FPU_TASK_CODE, FREERTOS_SHAPE_SWITCH, HANDLER, Z, all_symbols,
                          assert_stack_goal, check_chains_reach_reset, check_tasks_against_stacks,
                          inclusive_beyond_bound)

SAMPLES = 4000


class Replayed(unittest.TestCase):
    def stacks_of(self, name: str, *extra: str):
        doc, counts = replayed_recording(self, name, SAMPLES, "7", "--stacks", *extra)
        self.last_counts = counts
        return doc, dict(fwtest.by_function(counts, fwtest.symbols(name)))


class CallTree(Replayed):
    def check_build(self, name: str):
        doc, self_counts = self.stacks_of(name)
        stacks = doc["stacks"]
        n_all = sum(s["samples"] for s in stacks)
        self.assertEqual(n_all, doc["samples"])

        # The report's inclusive counts are those of its own stacks.
        for row in doc["functions"]:
            held = sum(s["samples"] for s in stacks if row["name"] in {f["function"] for f in s["frames"]})
            self.assertAlmostEqual(row["inclusive_samples"], held, msg=row["name"])

        # Inclusive shares outside the handler, against the truth.
        bad, n = inclusive_beyond_bound(stacks, self_counts)
        self.assertEqual(bad, [], f"{name}: (function, sampled %, true %, bound) over {n} samples")

        # Every stack outside smash reaches the reset handler, through the exception frame too.
        isr = check_chains_reach_reset(self, stacks)
        p_isr = sum(self_counts.get(f, 0) for f in HANDLER) / sum(self_counts.values())
        self.assertGreater(isr, n_all * p_isr - Z * math.sqrt(n_all * p_isr * (1 - p_isr)))

        # Recursion: seven activations of recurse(6..0), never more.
        depths = [[f["function"] for f in s["frames"]].count("recurse") for s in stacks]
        self.assertEqual(max(depths), 7)

        # The corrupted stack: while smash's saved LR is garbage, the chain ends at smash, cut
        # short. smash's garbage window covers all but ~6 of its ~306 instructions per call.
        in_smash = [s for s in stacks if s["frames"][-1]["function"] == "smash"]
        cut = sum(s["samples"] for s in in_smash if s["truncated"] and len(s["frames"]) == 1)
        whole = sum(s["samples"] for s in in_smash)
        self.assertGreater(whole, 0)
        self.assertGreaterEqual(cut / whole, 0.9)

    def test_o0(self):
        self.check_build("calltree_o0_m4")

    def test_os(self):
        self.check_build("calltree_os_m4")

    def test_o2(self):
        self.check_build("calltree_o2_m4")

    def test_os_frame_pointer(self):
        self.check_build("calltree_os_fp_m4")

    def test_o2_frame_pointer(self):
        self.check_build("calltree_o2_fp_m4")


class CallFrameState(Replayed):
    """-O2 code whose call-frame information uses DW_CFA_remember_state/restore_state
    (firmware-ref/src/scen_cfistate.c: early returns, tail calls, shrink-wrapping): every
    chain, in thread mode and through the interrupt, reaches the reset handler, and the
    reports count the truncated chains (none here) alike."""

    def test_o2_remember_restore_state(self):
        doc, self_counts = self.stacks_of("cfistate_o2_m4")
        stacks = doc["stacks"]
        cut = [([f["function"] for f in s["frames"]], s["samples"]) for s in stacks if s["truncated"]]
        self.assertEqual(cut, [])
        after_restore = 0
        for s in stacks:
            names = [f["function"] for f in s["frames"]]
            if names != ["Reset_Handler"]:
                self.assertEqual(names[:2], ["Reset_Handler", "main"], names)
            after_restore += s["samples"] if "likely_tail" in names else 0
        self.assertGreater(after_restore, 0)
        self.assertEqual(doc["truncation"]["samples"], 0)
        self.assertEqual(doc["truncation"]["unwound_samples"], doc["samples"])
        self.assertFalse(doc["truncation"]["inclusive_lower_bounds"])


class ExceptionTables(Replayed):
    """calltree_o2_exidx_m4 is calltree_o2_m4's code built without -g: no .debug_frame, only
    .ARM.exidx. Replayed with the same seed, both recordings halt at the same instructions,
    so their chains can be compared sample for sample (as multisets of chains). The
    exception tables hold one rule per function, that of its body: in a prologue or an
    epilogue that has moved SP they unwind a frame that is not there, so a few chains may
    differ. The goal of stack sampling (docs/stacks.md) is >= 99 % of the thread-mode
    chains complete; it must hold here, and >= 99 % must equal those of .debug_frame."""

    def test_exidx_chains_match_debug_frame(self):
        dwarf, _ = self.stacks_of("calltree_o2_m4")
        exidx, _ = self.stacks_of("calltree_o2_exidx_m4")
        self.assertEqual(dwarf["samples"], exidx["samples"])

        def chains(doc):
            out = {}
            for s in doc["stacks"]:
                # Without -g there is no inline information: drop the inlined work() frames.
                names = tuple(f["function"] for f in s["frames"] if f["function"] != "work")
                if names[-1] == "smash":   # smash corrupts its saved LR on purpose: not compared
                    continue
                key = (names, s["truncated"])
                out[key] = out.get(key, 0) + s["samples"]
            return out

        a, b = chains(dwarf), chains(exidx)
        n = sum(a.values())
        same = sum(min(count, b.get(key, 0)) for key, count in a.items())
        complete = sum(c for (names, cut), c in b.items()
                       if not cut and (names == ("Reset_Handler",) or names[:2] == ("Reset_Handler", "main")))

        print(f"\nexidx vs debug_frame: {same:.0f} of {n:.0f} chains equal, {complete:.0f} complete",
              file=sys.stderr)
        self.assertGreaterEqual(same / n, 0.99, (a, b))
        self.assertGreaterEqual(complete / n, 0.99)


class Tasks(Replayed):
    """The RTOS scenario (two round-robin tasks under a PendSV scheduler with FreeRTOS's
    pxCurrentTCB): the running task read at each halt and the unwound stack are two
    independent readings that must agree, and hot_a's time splits 2:1 between the tasks
    (truth: the plugin's call counts, as in tests/integration/test_rtos.py)."""

    def test_tasks_and_stacks_agree(self):
        doc, self_counts = self.stacks_of("rtos_m4", "--by", "task")
        syms = fwtest.symbols("rtos_m4")
        counts = self.last_counts
        check_tasks_against_stacks(self, doc["stacks"], fwtest.calls(counts, syms, "hot_a"),
                                   fwtest.calls(counts, syms, "hot_b"), 500)


class StackPointerStub(unittest.TestCase):
    """QEMU 7.2's gdbstub describes no MSP or PSP: they are read by one MRS instruction run in
    the free stack below SP (src/link/rsp/special_register_stub.cc). At 1000 halts at random
    moments of the FPU task scenario, the helper (stack_pointer_stub_check) reads every
    register the server describes (r0-r15, xPSR, d0-d15, FPSCR; QEMU 10 also MSP, PSP and the
    masks) and the 512 bytes below SP,
    reads MSP and PSP through the stub, and reads them all again: nothing may differ. The
    values are checked against the firmware's own record and the architecture: in Handler
    mode the core runs on MSP (MSP = SP); in a task, on PSP (PSP = SP) with MSP where
    rtos_start left it (rtos_thread_msp, written by the firmware just before its svc)."""

    def test_stub_leaves_the_target_as_it_was(self):
        name = "fpu_forever_o2_m4"
        syms = all_symbols(fwtest.elf_path(name))
        witness = syms["rtos_thread_msp"][0]
        stacks = [(syms[s][0], syms[s][0] + syms[s][1]) for s in ("fir_stack", "iir_stack")]
        with qemu_runner.QemuRun(fwtest.elf_path(name), gdb=True, halted=True, timeout=300) as q:
            r = subprocess.run([os.environ["MCUPROF_STUB_CHECK"], f"127.0.0.1:{q.gdb_port}", "1000", "11",
                                hex(witness)], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        halts = [json.loads(line) for line in r.stdout.splitlines()]
        self.assertEqual(len(halts), 1000)
        in_task = in_handler = 0
        for h in halts:
            self.assertTrue(h["registers_same"], h)
            self.assertTrue(h["memory_same"], h)
            self.assertEqual(len(h["memory_hex"]), 2 * 512, h)
            self.assertGreaterEqual(h["registers"], 17 + 16 + 1)
            self.assertIsNotNone(h["msp"], h)
            self.assertIsNotNone(h["psp"], h)
            if h["xpsr"] & 0x1FF:
                in_handler += 1
                self.assertEqual(h["msp"], h["sp"], h)
            elif any(lo <= h["sp"] < hi for lo, hi in stacks):
                in_task += 1
                self.assertEqual(h["psp"], h["sp"], h)
                self.assertEqual(h["msp"], h["witness"], h)
            else:   # before the scheduler: main on MSP
                self.assertEqual(h["msp"], h["sp"], h)
        self.assertGreater(in_task, 500)
        self.assertGreater(in_handler, 0)
        halt = statistics.median(h["halt_us"] for h in halts)
        stub = statistics.median(h["stub_us"] for h in halts) / 2
        print(f"\nstack pointer stub: {in_task} halts in tasks, {in_handler} in handlers; median halt "
              f"(interrupt + g) {halt:.0f} us, one stub read {stub:.0f} us", file=sys.stderr)


class FpuTasks(unittest.TestCase):
    """The goal of stack sampling on -O2 FPU tasks (firmware-ref/src/scen_fpu.c: two preempted
    tasks, extended exception frames with lazy stacking, an FPU interrupt more urgent than
    PendSV), with exact pacing against the truth plugin's task mode, which splits its counts at
    every task switch: >= 99 % of Thread-mode stacks complete to their task's entry, >= 90 % of
    Handler-mode stacks complete into the interrupted task, and each task entry's inclusive
    share within 4 standard errors of the task's exact share."""

    def check_goal(self, name: str):
        """Records `name` against the per-task truth and asserts the goal; returns the report,
        the truth's counts by task control block and by address, and each task entry's block."""
        syms = all_symbols(fwtest.elf_path(name))
        taskfile = fwtest.work_dir("mcuprof-tasks-") / "tasks.txt"
        truth_args = (f"taskfile={taskfile}",
                      f"tcbload={syms['rtos_tcb_load'][0]:#x}", f"tcbload={syms['rtos_first_tcb_load'][0]:#x}",
                      f"taskswitch={syms['rtos_switched'][0]:#x}", f"taskswitch={syms['rtos_first_switched'][0]:#x}")
        doc, counts = replayed_recording(self, name, SAMPLES, "17", "--stacks", truth_args=truth_args)
        # Each task checked every result against its first: no register was corrupted, by the
        # context switches or by the stack-pointer stub's steps (status 1 otherwise).
        self.assertEqual(doc["sampler"]["end"], "the target exited with code 0")

        # The truth split by task: it adds up to the plain counts, address by address, and each
        # task's own code (Thread mode, never shared) belongs to that task alone.
        per_task = collections.defaultdict(collections.Counter)
        for line in taskfile.read_text().splitlines():
            tcb, address, n = line.split()
            per_task[tcb][int(address, 16)] += int(n)
        summed = collections.Counter()
        for c in per_task.values():
            summed.update(c)
        self.assertEqual(dict(summed), counts)
        tcb_of = {"task_fir": f"{syms['fir_tcb'][0]:#010x}", "task_iir": f"{syms['iir_tcb'][0]:#010x}"}
        funcs = fwtest.symbols(name)
        for entry, code in FPU_TASK_CODE.items():
            for tcb, c in per_task.items():
                owned = sum(n for a, n in c.items() if funcs.lookup(a) in code)
                if tcb == tcb_of[entry]:
                    self.assertGreater(owned, 0)
                else:
                    self.assertEqual(owned, 0, (entry, tcb))

        stacks = doc["stacks"]
        n = sum(s["samples"] for s in stacks)
        self.assertEqual(n, doc["samples"])
        assert_stack_goal(self, f"{name}, {n:.0f} samples", doc)
        total = sum(counts.values())
        for entry in FPU_ENTRIES:
            p = sum(per_task[tcb_of[entry]].values()) / total
            q = sum(s["samples"] for s in stacks if entry in {f["function"] for f in s["frames"]}) / n
            se = math.sqrt(p * (1 - p) / n)
            print(f"  {entry}: true {100 * p:.2f} %, sampled inclusive {100 * q:.2f} %, SE {100 * se:.2f}, "
                  f"z {(q - p) / se:+.1f}", file=sys.stderr)
            self.assertLess(abs(q - p), Z * se, (entry, p, q))
        return doc, per_task, counts, tcb_of

    def test_goal_against_per_task_truth(self):
        self.check_goal("fpu_o2_m4")

    def test_by_exception_against_the_truth(self):
        """`--by exception` with exact pacing: each exception's share is the truth's share of
        its handler's code (arm-none-eabi-nm's functions that run only in that handler), Thread
        mode the rest, within 4 SE; the rows are named by the vector table's handlers, and
        what SysTick preempted adds up to its samples."""
        name = "fpu_o2_m4"
        doc, counts = replayed_recording(self, name, SAMPLES, "23", "--stacks", "--by", "exception")
        funcs = fwtest.symbols(name)
        handler_code = {"SysTick (15) SysTick_Handler": {"SysTick_Handler", "tick_smooth", "con_puts", "con_dec",
                                                         "semihost_exit"},
                        "PendSV (14) PendSV_Handler": {"PendSV_Handler", "rtos_switch_context"},
                        "SVCall (11) SVC_Handler": {"SVC_Handler", "rtos_start"}}
        total = sum(counts.values())
        truth = collections.Counter()
        for address, n in counts.items():
            owner = funcs.lookup(address)
            truth[next((row for row, code in handler_code.items() if owner in code), "Thread mode")] += n
        rows = {r["name"]: r["samples"] for r in doc["functions"]}
        n = doc["samples"]
        self.assertTrue(set(rows) <= set(truth), rows)
        for row, count in truth.items():
            p, q = count / total, rows.get(row, 0) / n
            se = math.sqrt(p * (1 - p) / n)
            print(f"  {row}: true {100 * p:.2f} %, sampled {100 * q:.2f} %, z {(q - p) / max(se, 1e-12):+.1f}",
                  file=sys.stderr)
            self.assertLessEqual(abs(q - p), Z * se, (row, p, q))
        systick = "SysTick (15) SysTick_Handler"
        self.assertGreater(rows[systick], 50)
        self.assertEqual(sum(e["samples"] for e in doc["preempted"][systick]), rows[systick])
        self.assertNotIn("cpu_load", doc)   # exact pacing lands on executed instructions
        self.assertFalse(doc["sleep_counted"])

    def test_goal_under_freertos_shaped_switch(self):
        """The same tasks under a PendSV in the shape of FreeRTOS's Cortex-M4F port
        (MINIRTOS_SWITCH_FREERTOS_SHAPE in minirtos.c): EXC_RETURN saved on the task's stack
        with r4-r11, only {r0, r3} on the main stack while rtos_select_next (and its callee
        rtos_stack_headroom) picks the next task. Besides the goal: the samples inside those
        two functions are those of the task being switched out, so for each task the share of
        samples in them whose complete chain leads into that task must match the truth's
        count of their instructions under that task (the truth splits at the switch's msr psp,
        not from any stack), within 4 SE; and no complete chain through PendSV passes
        through the scheduler's start, leads anywhere but into a task, or holds a frame
        above PendSV that is not one of its calls (check_freertos_shaped_chains)."""
        name = "fpu_frshape_o2_m4"
        doc, per_task, counts, tcb_of = self.check_goal(name)
        funcs = fwtest.symbols(name)
        stacks = doc["stacks"]
        n = sum(s["samples"] for s in stacks)
        total = sum(counts.values())
        in_switch = sum(c for a, c in counts.items() if funcs.lookup(a) in FREERTOS_SHAPE_SWITCH)
        self.assertGreater(in_switch / total * n, 100)   # enough samples expected inside the switch
        for entry in FPU_ENTRIES:
            p = sum(c for a, c in per_task[tcb_of[entry]].items() if funcs.lookup(a) in FREERTOS_SHAPE_SWITCH) / total
            q = sum(s["samples"] for s in stacks
                    if not s["truncated"] and s["frames"][-1]["function"] in FREERTOS_SHAPE_SWITCH
                    and s["frames"][0]["function"] == entry) / n
            se = math.sqrt(p * (1 - p) / n)
            print(f"  inside the switch, out of {entry}: true {100 * p:.2f} %, sampled {100 * q:.2f} %, "
                  f"SE {100 * se:.2f}, z {(q - p) / se:+.1f}", file=sys.stderr)
            self.assertLess(abs(q - p), Z * se, (entry, p, q))
        check_freertos_shaped_chains(self, stacks)

    def test_freertos_shaped_switch_at_wall_clock_moments(self):
        """fpu_frshape_forever_o2_m4 halted at wall-clock moments (3000 halts, ended by their
        count), where halts land in proportion to QEMU's time per instruction, not to the
        instruction count: the goal's two completeness figures, and the same shape of every
        complete chain through PendSV."""
        name = "fpu_frshape_forever_o2_m4"
        elf = fwtest.elf_path(name)
        rec = fwtest.work_dir("mcuprof-live-") / "rec.bin"
        with qemu_runner.QemuRun(elf, gdb=True, halted=True, timeout=600) as q:
            r = mcuprof("record", "--gdb", f"127.0.0.1:{q.gdb_port}", "--samples", "3000", "--seed", "5",
                        "--elf", str(elf), "--stacks", "-o", str(rec), "--format", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["sampler"]["end"], "sample count reached")
        assert_stack_goal(self, f"{name} (wall clock)", doc)
        check_freertos_shaped_chains(self, doc["stacks"])


def check_freertos_shaped_chains(test: unittest.TestCase, stacks: list[dict]) -> None:
    """Under the FreeRTOS-shaped switch, a complete chain through PendSV starts at a task's
    entry, never passes through the scheduler's start, and holds from PendSV on only
    PendSV's own calls or SysTick preempting it: never a frame taken from the stale LR
    (after the call LR still points into rtos_select_next, which a chain gone wrong shows as
    PendSV's caller)."""
    above_pendsv = (["PendSV_Handler", "rtos_select_next", "rtos_stack_headroom"],
                    ["PendSV_Handler", "SysTick_Handler", "tick_smooth"])
    for s in stacks:
        names = [f["function"] for f in s["frames"]]
        if "PendSV_Handler" in names and not s["truncated"]:
            test.assertIn(names[0], FPU_ENTRIES, names)
            test.assertNotIn("rtos_start", names)
            tail = names[names.index("PendSV_Handler"):]
            test.assertTrue(any(tail == shape[:len(tail)] for shape in above_pendsv), names)


if __name__ == "__main__":
    unittest.main()
