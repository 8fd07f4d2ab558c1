"""Scenario 4: work inside another interrupt handler (EXTI0, raised by software; isr_work(300)).

At the sampler's own priority the handler can not be preempted: the pending SysTick
tail-chains after it and finds main's frame, so isr_work gets no sample and its time lands on
main's instruction after the store that raised EXTI0. At a lower priority (0x80) the sampler
preempts it and isr_work gets its share. Truth restricted to hot_a, isr_work,
EXTI0_IRQHandler, main.
"""
import unittest

from fwtest import IntegrationCase, by_function, cli_json, disassembly, percent, run, shares, symbols

WINDOW = ("hot_a", "isr_work", "EXTI0_IRQHandler", "main")


def truth_shares(name):
    return shares(by_function(run(name).counts, symbols(name)), WINDOW)


class OtherHandler(IntegrationCase):
    def test_equal_priority_handler_is_invisible(self):
        name = "isr_eq_m4"
        r = run(name)
        rep = cli_json("report", str(r.dump_path), "--elf", str(r.elf))
        truth = truth_shares(name)
        self.assertGreater(truth["isr_work"], 25.0)
        self.assertEqual(percent(rep, "isr_work"), 0.0)
        self.assertEqual(percent(rep, "EXTI0_IRQHandler"), 0.0)
        hidden = truth["isr_work"] + truth["EXTI0_IRQHandler"] + truth["main"]
        self.assertWithinSE(percent(rep, "main"), hidden, r.dump.n, what="main absorbs the handler")
        self.assertWithinSE(percent(rep, "hot_a"), truth["hot_a"], r.dump.n, what="hot_a")
        # on one address, right after the store that pended EXTI0
        lo, hi = symbols(name).range("main")
        in_main = [pc for pc in r.dump.pcs if lo <= pc < hi]
        top = max(set(in_main), key=in_main.count)
        self.assertGreaterEqual(in_main.count(top), 0.99 * len(in_main))
        body = disassembly(name)["main"]
        k = [a for a, _ in body].index(top)
        self.assertTrue(body[k - 1][1].startswith("str"), body[k - 1])

    def test_lower_priority_handler_is_visible(self):
        name = "isr_low_m4"
        r = run(name)
        rep = cli_json("report", str(r.dump_path), "--elf", str(r.elf))
        self.assertProfileMatchesTruth(rep, truth_shares(name), r.dump.n, name)


if __name__ == "__main__":
    unittest.main()
