"""Task tags at every halt against the truth plugin, under exact pacing (a recorded run
replayed and stopped at random instruction counts, so the samples are uniform over the run's
instructions and binomial around each part's exact share).

The truth of "when the scheduler started" comes from the plugin's per-address counts: the
scenarios run some functions only before the first task is entered (start-up code and the
start-up work, hot_c) and the rest only after, so the summed counts of the first set are the
instruction count at which the kernel starts, up to the few instructions of the kernel's own
start (its "edge" functions, where the started flag turns). Each task runs its own functions
alone, so their counts are the task's exact instructions; the context switch and the tick
interrupt run on behalf of whichever task they interrupt, and widen the bounds by their
counts. Every bound is 4 standard errors, sqrt(p(1-p)/N)."""
from __future__ import annotations

import unittest

import fwtest
from live_runs import replayed_recording
from stack_checks import (NO_TASK, ZEPHYR_BEFORE, ZEPHYR_EDGE, ZEPHYR_OWN, assert_share_between,
                          check_tasks_against_stacks, tagged_leaves)

SAMPLES = 4000


class FreeRtosBeforeTheScheduler(unittest.TestCase):
    """The RTOS scenario with start-up work after the tasks are created (rtos_boot_m4): as in
    FreeRTOS, pxCurrentTCB points at the first task created from then on, but no task runs
    until rtos_start sets xSchedulerRunning. Samples before it say (no task)."""

    BEFORE = {"Reset_Handler", "main", "con_init", "clock_start", "rtos_task_create", "hot_c"}
    EDGE = {"rtos_start", "SVC_Handler"}   # xSchedulerRunning turns 1 in rtos_start

    def test_no_task_until_the_scheduler_runs(self):
        name = "rtos_boot_m4"
        doc, counts = replayed_recording(self, name, SAMPLES, "17", "--stacks", "--by", "task")
        syms = fwtest.symbols(name)
        per_fn = fwtest.by_function(counts, syms)
        # Each start-up function is entered as often as the start-up calls it: never again later.
        entries = {f: fwtest.calls(counts, syms, f) for f in self.BEFORE}
        self.assertEqual(entries, {f: 2 if f == "rtos_task_create" else 1 for f in self.BEFORE})

        pairs = tagged_leaves(doc)
        n = sum(pairs.values())
        self.assertEqual(n, doc["samples"])
        wrong = {k: v for k, v in pairs.items()
                 if k[1] not in self.EDGE and (k[0] == NO_TASK) != (k[1] in self.BEFORE)}
        self.assertEqual(wrong, {}, "samples before the scheduler with a task, or after it without one")

        total = sum(counts.values())
        before = sum(per_fn[f] for f in self.BEFORE)
        edge = sum(per_fn[f] for f in self.EDGE)
        no_task = sum(v for (task, _), v in pairs.items() if task == NO_TASK)
        self.assertGreater(no_task, 100)
        assert_share_between(self, "(no task)", no_task, n, before / total, (before + edge) / total)
        # After the start, the task read at the halt and the unwound stack agree.
        check_tasks_against_stacks(self, doc["stacks"], fwtest.calls(counts, syms, "hot_a"),
                                   fwtest.calls(counts, syms, "hot_b"), 500)


class ZephyrThreads(unittest.TestCase):
    """Three threads under the kernel shaped like Zephyr's (zephyr_m4), with time slicing:
    the running thread through _kernel.cpus[0].current and its k_thread name, (no task) until
    z_sys_post_kernel, found from the ELF's DWARF alone."""

    BEFORE, EDGE, OWN = ZEPHYR_BEFORE, ZEPHYR_EDGE, ZEPHYR_OWN

    def test_thread_shares_and_tags_against_the_truth(self):
        name = "zephyr_m4"
        doc, counts = replayed_recording(self, name, SAMPLES, "18", "--stacks", "--by", "task")
        syms = fwtest.symbols(name)
        per_fn = fwtest.by_function(counts, syms)
        known = self.BEFORE | self.EDGE | set().union(*self.OWN.values())
        self.assertEqual({f for f, c in per_fn.items() if c} - known, set(), "functions the test does not place")
        entries = {f: fwtest.calls(counts, syms, f) for f in ("main", "hot_c", "k_thread_create")}
        self.assertEqual(entries, {"main": 1, "hot_c": 1, "k_thread_create": 3})

        pairs = tagged_leaves(doc)
        n = sum(pairs.values())
        self.assertEqual(n, doc["samples"])
        self.assertEqual({task for task, _ in pairs} - {NO_TASK}, set(self.OWN))
        owner = {f: task for task, fs in self.OWN.items() for f in fs}
        # 0 wrong tags: a thread's own code is tagged with that thread; start-up code with no task.
        # (bg_thread_main's first instructions run before it sets z_sys_post_kernel.)
        wrong = {k: v for k, v in pairs.items()
                 if (k[1] in self.BEFORE and k[0] != NO_TASK)
                 or (k[1] in owner and k[0] != owner[k[1]] and not (k[0] == NO_TASK and k[1] == "bg_thread_main"))}
        self.assertEqual(wrong, {})

        total = sum(counts.values())
        edge = sum(per_fn[f] for f in self.EDGE) + per_fn["bg_thread_main"]
        for task, functions in self.OWN.items():
            own = sum(per_fn[f] for f in functions)
            sampled = sum(v for (t, _), v in pairs.items() if t == task)
            assert_share_between(self, task, sampled, n, (own - per_fn["bg_thread_main"] * (task == "main")) / total,
                                 (own + edge) / total)
        before = sum(per_fn[f] for f in self.BEFORE)
        no_task = sum(v for (task, _), v in pairs.items() if task == NO_TASK)
        assert_share_between(self, NO_TASK, no_task, n, before / total, (before + edge) / total)


if __name__ == "__main__":
    unittest.main()
