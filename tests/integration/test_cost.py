"""Scenario 5: instructions the sampler executes per sample.

The firmware times the same work without and with the sampler (TIM2 counts instructions under
-icount shift=0). The difference divides exactly by the number of samples, and the truth plugin
counts the same number of instructions in the sampler's two functions.
"""
import unittest

from fwtest import IntegrationCase, by_function, run, symbols

BUILDS = ("cost_m4", "cost_jit_m4", "cost_hist_m4", "cost_hist_jit_m4", "cost_m3")


def cost(name):
    r = run(name)
    f = r.dump.fields
    return r, f


class CostPerSample(IntegrationCase):
    def test_difference_is_a_whole_number_of_instructions_per_sample(self):
        for name in BUILDS:
            r, f = cost(name)
            self.assertGreater(f["samples"], 50, name)
            self.assertEqual(f["rem"], 0, name)
            self.assertEqual(f["on"] - f["off"], f["per_sample"] * f["samples"], name)

    def test_truth_counts_the_same_handler_instructions(self):
        for name in BUILDS:
            r, f = cost(name)
            per_fn = by_function(r.counts, symbols(name))
            handler = per_fn["SysTick_Handler"] + per_fn["sample_record"]
            self.assertEqual(handler % f["per_sample"], 0, name)
            taken = handler // f["per_sample"]
            # samples outside the timed window (between prof_start and the first clock read)
            self.assertTrue(f["samples"] <= taken <= f["samples"] + 2, (name, taken, f))

    def test_cost_is_the_same_on_cortex_m3_and_m4(self):
        self.assertEqual(cost("cost_m3")[1]["per_sample"], cost("cost_m4")[1]["per_sample"])

    def test_jitter_and_buckets_cost_more_than_the_plain_ring(self):
        ring, ring_jit = cost("cost_m4")[1]["per_sample"], cost("cost_jit_m4")[1]["per_sample"]
        hist, hist_jit = cost("cost_hist_m4")[1]["per_sample"], cost("cost_hist_jit_m4")[1]["per_sample"]
        self.assertLess(ring, ring_jit)
        self.assertLess(ring, hist)
        self.assertLess(hist, hist_jit)
        self.assertLess(ring, 30)  # a 6-instruction entry and a short C body


if __name__ == "__main__":
    unittest.main()
