"""Scenario 2: a main loop driven by a timer every TICK = 9999 instructions (the lockstep trap).

Sampled every 1680 SysTick ticks (9999 ns = 9999 instructions under -icount shift=0), every
sample lands on the same phase of the loop: one function gets all samples, and which one
depends only on when the loop started. With the jittered period the profile agrees with the
truth. The truth is restricted to the loop's functions (wait_tick, control, filter, main).
"""
import unittest

from fwtest import (IntegrationCase, by_function, cli_json, percent, rows, run, shares,
                    std_error_pp, symbols, warning_kinds)

WINDOW = ("wait_tick", "control", "filter", "main")


def truth_shares(name):
    return shares(by_function(run(name).counts, symbols(name)), WINDOW)


class TimerDrivenLoop(IntegrationCase):
    def test_truth_is_about_60_30_10(self):
        t = truth_shares("tick_m4")
        # per tick: control 1000 x 3 instructions, filter 333 x 3, the rest waits (of 9999)
        self.assertAlmostEqual(t["control"], 100 * 3005 / 9999, delta=0.2)
        self.assertAlmostEqual(t["filter"], 100 * 1004 / 9999, delta=0.2)
        self.assertGreater(t["wait_tick"], 55)

    def test_period_equal_to_the_tick_gives_one_function_everything(self):
        answers = {}
        for name in ("tick_m4", "tick_ph8499_m4", "tick_ph6499_m4"):
            r = run(name)
            self.assertEqual(r.dump.n, 1000)
            self.assertLessEqual(len(set(r.dump.pcs)), 3, name)
            rep = cli_json("report", str(r.dump_path), "--elf", str(r.elf))
            top = max(rows(rep).values(), key=lambda row: row["samples"])
            self.assertGreaterEqual(float(top["percent"]), 99.0, name)
            truth = truth_shares(name)[top["name"]]
            self.assertGreater(float(top["percent"]) - truth, 10 * std_error_pp(truth, r.dump.n),
                               f"{name}: lockstep should be far from the truth")
            self.assertIn("lockstep", warning_kinds(rep), name)
            answers[name] = top["name"]
        # three start phases, three different and equally convincing answers
        self.assertEqual(sorted(answers.values()), ["control", "filter", "wait_tick"])

    def test_jittered_period_agrees_with_the_truth(self):
        name = "tick_jit_m4"
        r = run(name)
        self.assertEqual(r.dump.n, 1000)
        rep = cli_json("report", str(r.dump_path), "--elf", str(r.elf))
        self.assertProfileMatchesTruth(rep, truth_shares(name), r.dump.n, name)
        self.assertNotIn("lockstep", warning_kinds(rep))
        self.assertSeesLikelyAddresses(r, symbols(name), WINDOW)


if __name__ == "__main__":
    unittest.main()
