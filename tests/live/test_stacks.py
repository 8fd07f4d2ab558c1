"""Call stacks at every halt (issue 7), against the truth plugin on the call-tree scenario.

The scenario (firmware-ref/src/scen_calltree.c) has a call structure known by construction, so
each function's inclusive count follows from the plugin's self counts: a chain's inclusive
count is the sum of the self counts below it, `shared` splits 3:1 between its two callers
(it costs the same on every call). Samples are taken at random instruction counts of a
replayed run (exact pacing), so among the samples outside the interrupt handler, the share
whose stack holds f is binomial around f's true inclusive share: every bound is 4 standard
errors, sqrt(p(1-p)/N)."""
from __future__ import annotations

import math
import sys
import unittest

import fwtest  # noqa: E402
from test_live_rsp import replayed_recording  # noqa: E402

Z = 4.0
SAMPLES = 4000
HANDLER = {"SysTick_Handler", "isr_work"}
CHAIN = ["deep1", "deep2", "deep3", "deep4", "deep5", "deep_leaf"]


def expected_inclusive(self_counts: dict[str, int]) -> dict[str, float]:
    s = lambda name: self_counts.get(name, 0)  # noqa: E731
    incl = {name: sum(s(c) for c in CHAIN[i:]) for i, name in enumerate(CHAIN)}
    incl["recurse"] = s("recurse")
    incl["shared"] = s("shared")
    incl["path_a"] = s("path_a") + 0.75 * s("shared")
    incl["path_b"] = s("path_b") + 0.25 * s("shared")
    incl["big_frame"] = s("big_frame") + s("frame_leaf")
    incl["frame_leaf"] = s("frame_leaf")
    incl["smash"] = s("smash")
    return incl


def check_tasks_against_stacks(test: unittest.TestCase, stacks: list[dict], hot_a_calls: int, hot_b_calls: int,
                               min_hot_a: int) -> None:
    """The RTOS scenario's stacks (--by task: each starts with its task): the task read at the
    halt and the unwound stack's task entry agree, and hot_a's samples split between the tasks
    as the truth's call counts say (motor runs hot_a(600) per turn, link hot_a(300) and
    hot_b(100), so hot_b's calls are link's turns), within Z standard errors over at least
    `min_hot_a` samples in hot_a."""
    entry = {"motor": "task_motor", "link": "task_link"}
    hot_a = {"motor": 0.0, "link": 0.0}
    for s in stacks:
        names = [f["function"] for f in s["frames"]]
        task = names[0]
        if task not in entry:   # before the scheduler starts: no task yet
            test.assertEqual(task, "(no task)", names)
            continue
        if len(names) > 1 and names[1] in entry.values():
            test.assertEqual(names[1], entry[task], names)
            test.assertFalse(s["truncated"], names)
        if names[-1] == "hot_a":
            hot_a[task] += s["samples"]
    link_turns = hot_b_calls
    motor_turns = hot_a_calls - link_turns
    motor, link = motor_turns * (5 * 600 + 4), link_turns * (5 * 300 + 4)   # hot_a(n): 5n + 4
    n = hot_a["motor"] + hot_a["link"]
    p = motor / (motor + link)
    test.assertGreater(n, min_hot_a)
    test.assertLess(abs(hot_a["motor"] / n - p), Z * math.sqrt(p * (1 - p) / n), (hot_a, p))


def inclusive_beyond_bound(stacks: list[dict], self_counts: dict[str, int]) -> tuple[list[tuple], int]:
    """The call-tree functions whose inclusive share among the stacks outside the handler is
    more than Z standard errors from the truth's (expected_inclusive), as (function, sampled %,
    true %, bound %); and the number of those stacks' samples."""
    outside = [s for s in stacks if not HANDLER & {f["function"] for f in s["frames"]}]
    n = sum(s["samples"] for s in outside)
    true_total = sum(c for f, c in self_counts.items() if f not in HANDLER)
    bad = []
    for function, incl in expected_inclusive(self_counts).items():
        p = incl / true_total
        q = sum(s["samples"] for s in outside if function in {f["function"] for f in s["frames"]}) / n
        se = math.sqrt(p * (1 - p) / n)
        if abs(q - p) > Z * se:
            bad.append((function, round(100 * q, 2), round(100 * p, 2), round(100 * Z * se, 2)))
    return bad, n


def check_chains_reach_reset(test: unittest.TestCase, stacks: list[dict]) -> int:
    """Every call-tree stack outside smash reaches Reset_Handler through main, also across the
    SysTick exception frame, whose interrupted function sits right below the handler. Returns
    the samples in the handler."""
    isr = 0
    for s in stacks:
        names = [f["function"] for f in s["frames"]]
        if "smash" in names:
            continue
        test.assertFalse(s["truncated"], names)
        if names != ["Reset_Handler"]:   # start-up code before main
            test.assertEqual(names[:2], ["Reset_Handler", "main"], names)
        handler = [i for i, f in enumerate(names) if f in HANDLER]
        if handler:
            isr += s["samples"]
            # (at -Os and -O2 SysTick_Handler tail-calls isr_work: no frame of its own)
            test.assertIn(names[handler[0] - 1], set(expected_inclusive({})) | {"main", "work"}, names)
    return isr


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


if __name__ == "__main__":
    unittest.main()
