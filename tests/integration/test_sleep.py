"""Sleep and CPU load: sleep_m4 (firmware-ref/src/scen_sleep.c) runs work() on every tick of
TIM4 and sleeps in WFI between; the on-chip sampler (TIM3, jittered) interrupts at instants of
virtual time, so a sample that finds the core asleep has the address just past the WFI.

The truth is the firmware's own account in TIM2's counts of virtual time, not mcuprof's:
`awake=` (the time inside work()) and `span=` (the sampled window), so the sleep share is
1 - awake / span. Run under -icount shift=0,sleep=off, the run is the same on any host.
"""
import re
import subprocess
import unittest

from fwtest import IntegrationCase, by_function, cli_json, rows, run, symbols

IMAGE = "sleep_m4"


def sleep_run():
    return run(IMAGE, icount_sleep=False)


def firmware_account(text: str) -> tuple[int, int]:
    awake = int(re.search(r"^awake=(\d+)$", text, re.M).group(1))
    span = int(re.search(r"^span=(\d+)$", text, re.M).group(1))
    return awake, span


class SleepAndLoad(IntegrationCase):
    def test_the_sleep_share_and_the_load_agree_with_the_firmwares_account(self):
        r = sleep_run()
        awake, span = firmware_account(r.text)
        truth_sleep = 100.0 * (1 - awake / span)
        self.assertGreater(truth_sleep, 20)   # the image sleeps, and works, a good part of the time
        self.assertLess(truth_sleep, 80)
        rep = cli_json("report", str(r.dump_path), "--elf", str(r.elf))
        n = int(rep["samples"])
        self.assertEqual(n, r.dump.n)
        load = rep["cpu_load"]
        self.assertWithinSE(float(load["sleep_percent"]), truth_sleep, n, what="sleep share")
        self.assertWithinSE(float(load["percent"]), 100 - truth_sleep, n, what="CPU load")
        self.assertEqual(rows(rep)["(sleep)"]["samples"], load["sleep_samples"])
        self.assertEqual(load["idle_task_samples"], 0)
        # Every sample counted asleep is at the instruction after the WFI, by the disassembly.
        listing = subprocess.run(["arm-none-eabi-objdump", "-d", str(r.elf)], capture_output=True, text=True,
                                 check=True).stdout
        wfi = [int(line.split(":")[0], 16) for line in listing.splitlines() if "\twfi" in line]
        self.assertEqual(len(wfi), 1)
        self.assertEqual(sum(1 for pc in r.dump.pcs if pc == wfi[0] + 2), load["sleep_samples"])

    def test_what_the_firmwares_account_leaves_out_is_small(self):
        # awake= counts the time in work() only; the rest of the awake time is the loop around
        # the WFI and the handlers that wake the core: their instructions, one nanosecond each
        # under -icount shift=0, against the span (TIM2 counts about one a nanosecond here).
        r = sleep_run()
        _, span = firmware_account(r.text)
        counts = by_function(r.counts, symbols(IMAGE))
        left_out = sum(counts[f] for f in ("sleep_until_tick", "TIM4_IRQHandler", "TIM3_IRQHandler",
                                           "sample_record"))
        self.assertLess(left_out / span, 0.005, counts)

    def test_a_census_counts_no_sleep(self):
        # The truth plugin counts executed instructions: a sleeping core executes none.
        r = sleep_run()
        rep = cli_json("truth", str(r.truth_path), "--elf", str(r.elf))
        self.assertFalse(rep["sleep_counted"])
        self.assertNotIn("cpu_load", rep)
        self.assertNotIn("(sleep)", rows(rep))


if __name__ == "__main__":
    unittest.main()
