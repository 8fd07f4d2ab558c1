"""Scenario 3: a region with interrupts disabled (locked: cpsid i ... cpsie i).

A sample that falls due inside the region waits and is taken right after cpsie i: the truth
puts the time in locked, the profile puts it on the one instruction after cpsie i, in irq_on.
When the region is longer than the sampling period, the timer fires several times while
masked but only one exception stays pending: the region also loses share, and the same number
of samples takes more instructions. Truth restricted to hot_a, locked, irq_off, irq_on, main.
"""
import re
import unittest

from fwtest import (REPO, IntegrationCase, by_function, cli_json, disassembly, percent, run, shares,
                    std_error_pp, symbols)

WINDOW = ("hot_a", "locked", "irq_off", "irq_on", "main")
REGION = ("locked", "irq_off", "irq_on")


def after_cpsie(name):
    """Address of the instruction that follows cpsie i in irq_on."""
    body = disassembly(name)["irq_on"]
    for k, (_, text) in enumerate(body):
        if text.startswith("cpsie"):
            return body[k + 1][0]
    raise AssertionError("no cpsie in irq_on")


def cpsie_address(name):
    for address, text in disassembly(name)["irq_on"]:
        if text.startswith("cpsie"):
            return address
    raise AssertionError("no cpsie in irq_on")


class DisabledInterrupts(IntegrationCase):
    def test_the_guides_hint_names_the_cpsie_of_this_build(self):
        # docs/guide.md shows diff's hint on irqoff_m4; its address must be this build's cpsie i
        # (objdump's), or the guide has gone stale.
        guide = (REPO / "docs" / "guide.md").read_text()
        shown = re.search(r"hint: irq_on is \d+ bytes with cpsie i at (0x[0-9a-f]+)", guide)
        self.assertIsNotNone(shown, "the guide shows no interrupt-shadow hint")
        self.assertEqual(int(shown.group(1), 16), cpsie_address("irqoff_m4"))

    def report(self, name):
        r = run(name)
        self.assertEqual(r.dump.n, 10000)
        return r, cli_json("report", str(r.dump_path), "--elf", str(r.elf)), truth_shares(name)

    def test_short_region_share_lands_after_cpsie(self):
        name = "irqoff_m4"
        r, rep, truth = self.report(name)
        region = sum(truth[f] for f in REGION)
        self.assertGreater(truth["locked"], 25.0)
        self.assertLess(truth["irq_on"], 0.1)        # two instructions per pass
        # the profile: the region's share is right, but it sits in irq_on, not in locked
        self.assertWithinSE(percent(rep, "irq_on"), region, r.dump.n, what="irq_on vs region")
        self.assertWithinSE(percent(rep, "hot_a"), truth["hot_a"], r.dump.n, what="hot_a")
        self.assertLess(percent(rep, "locked"), truth["locked"] - 10 * std_error_pp(truth["locked"], r.dump.n))
        # on one address: the instruction after cpsie i
        lo, hi = symbols(name).range("irq_on")
        in_irq_on = [pc for pc in r.dump.pcs if lo <= pc < hi]
        at_next = sum(1 for pc in in_irq_on if pc == after_cpsie(name))
        self.assertGreaterEqual(at_next, 0.99 * len(in_irq_on))

    def test_long_region_loses_share(self):
        short_r, _, _ = self.report("irqoff_m4")
        r, rep, truth = self.report("irqoff_long_m4")
        region = sum(truth[f] for f in REGION)
        self.assertAlmostEqual(region, sum(truth_shares("irqoff_m4")[f] for f in REGION), delta=0.5)
        self.assertLess(percent(rep, "irq_on"), region - 8 * std_error_pp(region, r.dump.n))
        # same sampler, same period: timer events were lost, so N samples took longer
        per_sample_short = short_r.dump.spans[0] / short_r.dump.n
        per_sample_long = r.dump.spans[0] / r.dump.n
        self.assertGreater(per_sample_long, 1.05 * per_sample_short)


def truth_shares(name):
    return shares(by_function(run(name).counts, symbols(name)), WINDOW)


if __name__ == "__main__":
    unittest.main()
