"""Checks of call stacks and task tags that the GDB and OpenOCD tests share: the call-tree
scenario's (firmware-ref/src/scen_calltree.c) inclusive shares and chains, the RTOS
scenario's tasks against its stacks, the Zephyr-shaped scenario's threads, and shares within
Z standard errors, sqrt(p(1-p)/N), of the truth's."""
from __future__ import annotations

import collections
import math
import struct
import sys
import unittest

import run_header
from elf_symbols import nm_symbols

Z = 4.0
NO_TASK = "(no task)"
HANDLER = {"SysTick_Handler", "isr_work"}
CHAIN = ["deep1", "deep2", "deep3", "deep4", "deep5", "deep_leaf"]

# The Zephyr-shaped scenario (zephyr_m4): what runs before the kernel starts its threads, the
# edge between them, and each thread's own functions.
ZEPHYR_BEFORE = {"Reset_Handler", "main", "con_init", "z_dummy_thread_init", "k_thread_create",
                 "k_thread_name_set", "hot_c"}
# The switch into the main thread (before z_sys_post_kernel turns), the thread start, the
# context switch and the time-slice interrupt: on behalf of whichever thread they interrupt.
ZEPHYR_EDGE = {"z_switch_to_main_thread", "SVC_Handler", "z_thread_entry", "PendSV_Handler", "z_swap_next",
               "SysTick_Handler"}
ZEPHYR_OWN = {"main": {"bg_thread_main", "hot_a", "z_time_slice_start", "semihost_exit"},
              "sensor": {"sensor_entry", "hot_b"},
              "logger": {"logger_entry", "log_flush"}}


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


def tagged_leaves(doc: dict) -> collections.Counter:
    """(task, function the PC was in) -> samples, from a `--stacks --by task` report: each
    stack starts with its task and ends with the sampled function."""
    pairs = collections.Counter()
    for s in doc["stacks"]:
        names = [f["function"] for f in s["frames"]]
        pairs[(names[0], names[-1])] += s["samples"]
    return pairs


def assert_share_between(test: unittest.TestCase, what: str, observed: float, n: float, lo: float, hi: float):
    """observed / n within Z standard errors of [lo, hi] (true shares)."""
    p = (lo + hi) / 2
    se = math.sqrt(p * (1 - p) / n)
    q = observed / n
    print(f"\n{test.id().split('.')[-2]}: {what}: {observed:.0f} of {n:.0f} samples = {100 * q:.2f} %, "
          f"truth {100 * lo:.2f}..{100 * hi:.2f} %, 4 SE = {100 * Z * se:.2f}", file=sys.stderr)
    test.assertTrue(lo - Z * se <= q <= hi + Z * se,
                    f"{what}: {100 * q:.2f} % sampled, truth {100 * lo:.2f}..{100 * hi:.2f} % ± {100 * Z * se:.2f}")


# The FPU task scenario (fpu_o2_m4, firmware-ref/src/scen_fpu.c): its tasks' entries, the
# handlers that run on their behalf, and each task's own code.
FPU_ENTRIES = ("task_fir", "task_iir")
# fpu_frshape_o2_m4's PendSV calls rtos_select_next, which calls rtos_stack_headroom.
FREERTOS_SHAPE_SWITCH = {"rtos_select_next", "rtos_stack_headroom"}
FPU_HANDLERS = {"SysTick_Handler", "tick_smooth", "PendSV_Handler", "rtos_switch_context", "SVC_Handler",
                *FREERTOS_SHAPE_SWITCH}
FPU_TASK_CODE = {"task_fir": ("task_fir", "fir_block", "fir_tap_sum"),
                 "task_iir": ("task_iir", "iir_cascade", "biquad")}


def stack_goal(stacks: list[dict]) -> dict[str, tuple[float, float]]:
    """The goal's two completeness figures, as (complete samples, samples): Thread-mode stacks
    (no handler frame) that reach their task's entry (or, before the scheduler, the reset
    handler), untruncated; Handler-mode stacks that cross into the interrupted task the same
    way."""
    figures = {"thread": [0.0, 0.0], "handler": [0.0, 0.0]}
    for s in stacks:
        names = [f["function"] for f in s["frames"]]
        kind = "handler" if FPU_HANDLERS & set(names) else "thread"
        figures[kind][1] += s["samples"]
        if not s["truncated"] and names[0] in (*FPU_ENTRIES, "Reset_Handler"):
            figures[kind][0] += s["samples"]
    return {k: (v[0], v[1]) for k, v in figures.items()}


def assert_stack_goal(test: unittest.TestCase, what: str, doc: dict) -> dict[str, tuple[float, float]]:
    """The goal's two completeness figures of a report's stacks (stack_goal), printed, and
    asserted: >= 99 % of the Thread-mode stacks and >= 90 % of the Handler-mode stacks
    complete, with some Handler-mode stacks among them. Returns the figures."""
    goal = stack_goal(doc["stacks"])
    print(f"\n{what}: thread-mode stacks complete {goal['thread'][0]:.0f} of {goal['thread'][1]:.0f}; "
          f"handler-mode {goal['handler'][0]:.0f} of {goal['handler'][1]:.0f}; truncated {doc.get('truncation')}",
          file=sys.stderr)
    test.assertGreaterEqual(goal["thread"][0] / goal["thread"][1], 0.99)
    test.assertGreater(goal["handler"][1], 0)
    test.assertGreaterEqual(goal["handler"][0] / goal["handler"][1], 0.90)
    return goal


def all_symbols(elf) -> dict[str, tuple[int, int]]:
    """Every defined symbol (functions, data, assembly labels) as name -> (address without the
    Thumb bit, size); labels have size 0."""
    return {s.name: (s.start, s.size) for s in nm_symbols(elf)}


# The two-core image's call chains (firmware-ref/src/scen_dual.c), each core's own: the round
# its entry calls, and the functions that round calls; the round's last call, shared_step, is a
# tail call (`b.w shared_step` after the round's frame is popped, arm-none-eabi-gcc -O2), so
# shared_step sits right under the entry.
DUAL_CHAINS = ({"entry": "main", "round": "core0_round", "callees": {"c0_heavy", "c0_light"}},
               {"entry": "core1_main", "round": "core1_round", "callees": {"c1_alpha", "c1_beta"}})


def recorded_chains(path, functions: dict[str, tuple[int, int]]) -> list[tuple[int, list[str], bool]]:
    """Every sample's (core, chain root first, truncated) from a recording's bytes (docs/formats.md:
    a stack record, u32 flags then the callers innermost first, follows its sample), each address
    named by the ELF's function symbols (`functions`: name -> (start, end)), "?" outside them."""
    def name(address: int) -> str:
        return next((n for n, (start, end) in functions.items() if start <= address < end), "?")

    data = path.read_bytes()
    at = run_header.records_start(data, str(path))
    chains = []
    while at + 8 <= len(data):
        kind, size = struct.unpack_from("<HH", data, at)
        payload = data[at + 8:at + 8 + size]
        at += 8 + size
        if kind == 1:
            pc, flags = struct.unpack_from("<I", payload, 8)[0], struct.unpack_from("<I", payload, 28)[0]
            chains.append([flags >> 8 & 0xFF, [name(pc)], False])
        elif kind == 4:
            stack_flags = struct.unpack_from("<I", payload, 0)[0]
            callers = [struct.unpack_from("<I", payload, i)[0] for i in range(4, size, 4)]
            chains[-1][1] = [name(a) for a in reversed(callers)] + chains[-1][1]
            chains[-1][2] = bool(stack_flags & 1)
    return [(core, names, truncated) for core, names, truncated in chains]


def check_dual_chains(test: unittest.TestCase, chains: list[tuple[int, list[str], bool]], halts: int) -> None:
    """Both cores unwound at every halt, each chain its own core's (DUAL_CHAINS): a callee of the
    round under the round under the core's entry, the round under the entry, or the entry alone
    (its loop); never a frame of the other core's code."""
    test.assertEqual(sorted(collections.Counter(core for core, _, _ in chains).items()), [(0, halts), (1, halts)])
    for core, names, truncated in chains:
        own = DUAL_CHAINS[core]
        test.assertFalse(truncated, (core, names))
        leaf = names[-1]
        if leaf in own["callees"]:
            test.assertEqual(names[-3:], [own["entry"], own["round"], leaf], (core, names))
        elif leaf == "shared_step":
            test.assertEqual(names[-2:], [own["entry"], leaf], (core, names))
        elif leaf == own["round"]:
            test.assertEqual(names[-2:], [own["entry"], leaf], (core, names))
        else:
            test.assertEqual(leaf, own["entry"], (core, names))
        other = DUAL_CHAINS[1 - core]
        foreign = {other["entry"], other["round"]} | other["callees"]
        test.assertEqual(foreign & set(names), set(), (core, names))
