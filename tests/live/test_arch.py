"""Every Cortex-M architecture QEMU has (issue 28): the arch scenario (firmware-ref/src/scen_arch.c)
on each board of firmware-ref's board table, recorded and replayed with exact pacing
(instruction counts) under `--stacks`, against the truth plugin's counts of the same run.

The goals, per image (docs/stacks.md, "Every architecture"):
- every function with >= 0.5 % of the truth within 4 standard errors, sqrt(p(1-p)/N);
- >= 99 % of the Thread-mode stacks complete, at the reset handler (or, for the Non-secure
  application, under `[Secure state]` at its reset, entered by BLXNS);
- >= 95 % of the Handler-mode stacks cross into the interrupted code;
- no complete chain with another root (a false root, unmarked);
- the inclusive shares of the call tree's roots within 4 standard errors: run_round among the
  Thread-mode stacks, the SysTick handler's among all.
The figures are printed for docs/stacks.md."""
from __future__ import annotations

import collections
import math
import sys
import unittest

import fwtest  # noqa: E402
from live_runs import replayed_recording

SAMPLES = 3000
Z = 4.0
HANDLER = {"SysTick_Handler", "tick_work", "tick_leaf"}
SECURE_ROOT = "[Secure state]"


def in_tree(function: str) -> bool:
    """Functions that run only below run_round: the scenario's own, libgcc's soft float and
    division, the Secure entry and what it calls."""
    return (function in {"run_round", "stage_filter", "filter_step", "stage_checksum", "mix_word", "stage_divide",
                         "divide_step"}
            or function.startswith("__") or "secure_scramble" in function)


class ArchImages(unittest.TestCase):
    def check_image(self, name: str, roots: tuple[str, ...] = ("Reset_Handler",)):
        doc, counts = replayed_recording(self, name, SAMPLES, "28", "--stacks")
        truth = fwtest.by_function(counts, fwtest.symbols(name))
        total = sum(truth.values())
        n = doc["samples"]
        stacks = doc["stacks"]
        self.assertEqual(sum(s["samples"] for s in stacks), n)

        # Flat shares of every function >= 0.5 %.
        # By address, not by name: where libgcc gives one function two names (__aeabi_fmul and
        # __mulsf3), the report's row takes the name nm's lookup gives that address.
        syms = fwtest.symbols(name)
        same_address = {n: syms.lookup(start) for start, _, n in syms.funcs}
        sampled = collections.Counter()
        for row in doc["functions"]:
            sampled[same_address.get(row["name"], row["name"])] += row["samples"]
        bad = []
        for function, count in truth.items():
            p = count / total
            if p < 0.005:
                continue
            q = sampled.get(function, 0) / n
            if abs(q - p) > Z * math.sqrt(p * (1 - p) / n):
                bad.append((function, round(100 * q, 2), round(100 * p, 2)))
        self.assertEqual(bad, [], f"{name}: (function, sampled %, true %) beyond 4 SE over {n} samples")

        # Completeness: Thread-mode chains at their root, Handler-mode chains across the frame.
        thread = [0, 0]
        handler = [0, 0]
        false_roots = []
        for s in stacks:
            names = [f["function"] for f in s["frames"]]
            at_handler = [i for i, f in enumerate(names) if f in HANDLER]
            if not s["truncated"] and names[0] not in roots:
                false_roots.append(names)
            if at_handler:
                handler[1] += s["samples"]
                # Crossed: the interrupted code lies below the handler's first frame.
                if not s["truncated"] and at_handler[0] > 0 and names[at_handler[0] - 1] != SECURE_ROOT:
                    handler[0] += s["samples"]
            else:
                thread[1] += s["samples"]
                if not s["truncated"]:
                    thread[0] += s["samples"]
        print(f"\n{name}: {n} samples; thread-mode stacks complete {thread[0]} of {thread[1]} "
              f"({100 * thread[0] / thread[1]:.2f} %); handler-mode stacks crossed {handler[0]} of {handler[1]} "
              f"({100 * handler[0] / max(handler[1], 1):.2f} %); truncated {doc.get('truncation')}", file=sys.stderr)
        self.assertEqual(false_roots, [], f"{name}: complete chains at another root")
        self.assertGreaterEqual(thread[0] / thread[1], 0.99, name)
        self.assertGreater(handler[1], 0, name)
        self.assertGreaterEqual(handler[0] / handler[1], 0.95, name)

        # The roots' inclusive shares: run_round among the Thread-mode stacks (its tree's self
        # counts among the Thread-mode instructions), the handler's among all stacks.
        thread_true = sum(c for f, c in truth.items() if f not in HANDLER)
        tree_true = sum(c for f, c in truth.items() if in_tree(f))
        handler_true = sum(c for f, c in truth.items() if f in HANDLER)
        in_run_round = sum(s["samples"] for s in stacks
                           if not HANDLER & {f["function"] for f in s["frames"]}
                           and "run_round" in {f["function"] for f in s["frames"]})
        in_handler = sum(s["samples"] for s in stacks if HANDLER & {f["function"] for f in s["frames"]})
        for what, sampled_count, of, p in (("run_round", in_run_round, thread[1], tree_true / thread_true),
                                           ("SysTick_Handler", in_handler, n, handler_true / total)):
            se = math.sqrt(p * (1 - p) / of)
            print(f"{name}: {what} inclusive {100 * sampled_count / of:.2f} % (truth {100 * p:.2f} %, "
                  f"4 SE {100 * Z * se:.2f} %)", file=sys.stderr)
            self.assertLessEqual(abs(sampled_count / of - p), Z * se, f"{name}: {what} inclusive")

    def test_microbit_cortex_m0(self):
        self.check_image("arch_microbit")

    def test_an385_cortex_m3(self):
        self.check_image("arch_an385")

    def test_an500_cortex_m7(self):
        self.check_image("arch_an500")

    def test_an505_cortex_m33_secure(self):
        self.check_image("arch_an505")

    def test_an505_cortex_m33_nonsecure(self):
        # The Secure boot's own samples end at Reset_Handler; the application's under
        # [Secure state], entered at ns_reset.
        self.check_image("arch_ns_an505", roots=("Reset_Handler", SECURE_ROOT))

    def test_an547_cortex_m55(self):
        self.check_image("arch_an547")


if __name__ == "__main__":
    unittest.main()
