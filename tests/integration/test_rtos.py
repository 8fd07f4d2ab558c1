"""RTOS scenario: two round-robin tasks ("motor": hot_a(600); "link": hot_a(300), hot_b(100))
under a minimal PendSV scheduler with a FreeRTOS-style pxCurrentTCB, sampled with the task
control block as a tag. hot_a's time splits 2:1 between motor and link.
"""
import collections
import unittest

from fwtest import (IntegrationCase, by_function, calls, cli_json, rows, run, shares,
                    std_error_pp, symbols)

WINDOW = ("hot_a", "hot_b", "task_motor", "task_link", "PendSV_Handler", "rtos_switch_context")
PER_CALL = {600: 5 * 600 + 4, 300: 5 * 300 + 4}  # hot_a(n) = 5n + 4 instructions


class Tasks(IntegrationCase):
    def setUp(self):
        self.name = "rtos_m4"
        self.r = run(self.name)
        self.syms = symbols(self.name)
        self.per_fn = by_function(self.r.counts, self.syms)
        # motor calls hot_a once per turn, link calls hot_a and hot_b once per turn
        link_turns = calls(self.r.counts, self.syms, "hot_b")
        motor_turns = calls(self.r.counts, self.syms, "hot_a") - link_turns
        self.hot_a_motor = motor_turns * PER_CALL[600]
        self.hot_a_link = link_turns * PER_CALL[300]

    def test_truth_of_the_shared_function_is_two_to_one(self):
        self.assertEqual(self.hot_a_motor + self.hot_a_link, self.per_fn["hot_a"])
        self.assertAlmostEqual(self.hot_a_motor / self.hot_a_link, 2.0, delta=0.01)

    def test_dump_names_the_tasks_and_tags_every_sample(self):
        d = self.r.dump
        self.assertEqual(sorted(d.tasks.values()), ["link", "motor"])
        self.assertEqual(len(d.tags), len(d.pcs))
        self.assertEqual(len(d.pcs), d.n)
        self.assertTrue(set(d.tags) <= set(d.tasks))

    def test_hot_a_samples_split_two_to_one_by_task(self):
        d = self.r.dump
        lo, hi = self.syms.range("hot_a")
        tags = collections.Counter(d.tasks[t] for pc, t in zip(d.pcs, d.tags) if lo <= pc < hi)
        n = tags["motor"] + tags["link"]
        expected = 100.0 * self.hot_a_motor / (self.hot_a_motor + self.hot_a_link)
        self.assertWithinSE(100.0 * tags["motor"] / n, expected, n, what="motor's part of hot_a")

    def test_cli_by_task(self):
        d = self.r.dump
        rep = cli_json("report", str(self.r.dump_path), "--elf", str(self.r.elf), "--by", "task")
        got = rows(rep)
        direct = collections.Counter(d.tasks[t] for t in d.tags)
        self.assertEqual({k: int(v["samples"]) for k, v in got.items()}, dict(direct))
        # bounds from the truth: the context switch is split between the two tags
        motor = self.hot_a_motor + self.per_fn["task_motor"]
        link = self.hot_a_link + self.per_fn["hot_b"] + self.per_fn["task_link"]
        switch = self.per_fn["PendSV_Handler"] + self.per_fn["rtos_switch_context"]
        total = motor + link + switch
        lo, hi = 100.0 * motor / total, 100.0 * (motor + switch) / total
        se = std_error_pp((lo + hi) / 2, d.n)
        share = float(got["motor"]["percent"])
        self.assertTrue(lo - 4 * se <= share <= hi + 4 * se, (share, lo, hi, se))

    def test_cli_by_function_matches_truth(self):
        rep = cli_json("report", str(self.r.dump_path), "--elf", str(self.r.elf))
        self.assertProfileMatchesTruth(rep, shares(self.per_fn, WINDOW), self.r.dump.n, self.name)


if __name__ == "__main__":
    unittest.main()
