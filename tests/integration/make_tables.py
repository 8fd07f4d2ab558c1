#!/usr/bin/env python3
"""Measure every reference scenario and print the Markdown tables of docs/firmware-ref.md.

    python3 tests/integration/make_tables.py > /tmp/tables.md

Runs each image once in QEMU with the truth plugin (about a minute on 2 cores), reads the
profiles with the mcuprof CLI (build/mcuprof) and the truth directly from the plugin's counts,
restricted to the functions of each scenario's sampled window and renormalized.
"""
import collections
import math
import sys

from fwtest import (by_function, calls, cli_json, percent, repeat_period, rows, run, shares,
                    std_error_pp, symbols, warning_kinds)


def fmt(x):
    return f"{x:.2f}" if abs(x) >= 0.005 else "0.00"


def table(header, lines):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in line) + " |" for line in lines]
    return "\n".join(out)


def truth_of(name, window):
    return shares(by_function(run(name).counts, symbols(name)), window)


def profile_row(label, name, window, truth, first=None):
    r = run(name)
    args = ["report", str(r.dump_path), "--elf", str(r.elf)]
    if first:
        args += ["--first", str(first)]
    rep = cli_json(*args)
    n = int(round(rep["samples"]))
    got = {f: percent(rep, f) for f in window}
    other = 100.0 - sum(got.values())
    err = max(abs(got[f] - truth[f]) for f in window)
    z = max(abs(got[f] - truth[f]) / std_error_pp(truth[f], n) if truth[f] > 0 else 0 for f in window)
    pcs = r.dump.pcs[:first] if first else r.dump.pcs
    rp = repeat_period(pcs) if r.dump.kind == "raw" else None
    warn = ",".join(sorted(k for k in warning_kinds(rep) if k)) or "-"
    return [label, n] + [fmt(got[f]) for f in window] + [fmt(other), fmt(err), f"{z:.1f}",
                                                       len(set(pcs)) if r.dump.kind == "raw" else "-",
                                                       rp or "-", warn]


def scenario1():
    window = ("hot_a", "hot_b", "hot_c", "run")
    truth = truth_of("loops_m4", window)
    r, syms = run("loops_m4"), symbols("loops_m4")
    per_fn = by_function(r.counts, syms)
    passes = calls(r.counts, syms, "hot_c")
    print("### Scenario 1: truth\n")
    print(table(["", "hot_a", "hot_b", "hot_c", "run"], [
        ["seed (log of one pass, 5022 instructions)", "69.77", "19.99", "10.04", "0.20"],
        ["ours, truth plugin, whole window, renormalized"] + [f"{truth[f]:.3f}" for f in window],
        ["ours, instructions per pass"] + [f"{per_fn[f] / passes:.2f}" for f in window],
    ]))
    print(f"\n({passes} passes; run's count includes its few instructions outside the loop.)\n")
    head = ["build", "N", "hot_a", "hot_b", "hot_c", "run", "other", "max err pp", "max err / SE",
            "distinct PCs", "repeat", "warnings"]
    print("### Scenario 1: profiles (percent; truth restricted to the four functions)\n")
    lines = [["truth", "-"] + [fmt(truth[f]) for f in window] + ["0.00", "-", "-", "-", "-", "-"]]
    for label, name, first in [
            ("loops_m4 fixed 2014, first 100", "loops_m4", 100),
            ("loops_m4 fixed 2014, first 1000", "loops_m4", 1000),
            ("loops_m4 fixed 2014", "loops_m4", None),
            ("loops_p5066_m4 fixed 5066", "loops_p5066_m4", None),
            ("loops_jit_m4 2014+jitter, first 100", "loops_jit_m4", 100),
            ("loops_jit_m4 2014+jitter, first 1000", "loops_jit_m4", 1000),
            ("loops_jit_m4 2014+jitter", "loops_jit_m4", None),
            ("loops_jit_m3 (Cortex-M3) 1410+jitter", "loops_jit_m3", None),
            ("loops_psp_m4 on PSP", "loops_psp_m4", None),
            ("loops_hist1_m4 2-byte buckets", "loops_hist1_m4", None),
            ("loops_hist2_m4 4-byte buckets", "loops_hist2_m4", None),
            ("loops_hist4_m4 16-byte buckets", "loops_hist4_m4", None),
            ("loops_hist4_a16_m4 16-byte, SUBALIGN(16)", "loops_hist4_a16_m4", None)]:
        t = truth_of(name, window)
        lines.append(profile_row(label, name, window, t, first))
    print(table(head, lines))
    rep = cli_json("report", str(run("loops_hist4_m4").dump_path), "--elf", str(run("loops_hist4_m4").elf))
    strays = {k: v["percent"] for k, v in rows(rep).items() if k not in window and v["samples"]}
    print(f"\n16-byte buckets without alignment gave samples to: "
          + ", ".join(f"{k} {v:.2f} %" for k, v in strays.items()) + "\n")
    tim3 = run("loops_tim3_m4")
    print(f"loops_tim3_m4 (TIM3, ARR period 12000 + jitter): {tim3.dump.n} samples, "
          f"{tim3.dump.spans[0] / tim3.dump.n:.0f} instructions per sample\n")
    bad = run("loops_psp_badmsp_m4")
    print(f"loops_psp_badmsp_m4 (prologue reads MSP only, code on PSP): {len(bad.dump.pcs)} samples, "
          f"distinct values {sorted(hex(p) for p in set(bad.dump.pcs))[:4]}\n")


def scenario2():
    window = ("wait_tick", "control", "filter", "main")
    print("### Scenario 2: timer-driven loop (TICK 9999), 1000 samples\n")
    head = ["build", "N", *window, "other", "max err pp", "max err / SE", "distinct PCs", "repeat",
            "warnings"]
    t = truth_of("tick_m4", window)
    lines = [["truth (tick_m4)", "-"] + [fmt(t[f]) for f in window] + ["0.00", "-", "-", "-", "-", "-"]]
    for label, name in [("tick_m4 fixed 1680, PHASE 1000", "tick_m4"),
                        ("tick_ph8499_m4 fixed 1680, PHASE 8499", "tick_ph8499_m4"),
                        ("tick_ph6499_m4 fixed 1680, PHASE 6499", "tick_ph6499_m4"),
                        ("tick_jit_m4 1680+jitter", "tick_jit_m4")]:
        lines.append(profile_row(label, name, window, truth_of(name, window)))
    print(table(head, lines) + "\n")


def scenario3():
    window = ("hot_a", "locked", "irq_off", "irq_on", "main")
    print("### Scenario 3: interrupts disabled, 10000 samples\n")
    lines = []
    for label, name in [("locked(300), hot_a(700)", "irqoff_m4"),
                        ("locked(7500), hot_a(17500)", "irqoff_long_m4")]:
        t = truth_of(name, window)
        r = run(name)
        rep = cli_json("report", str(r.dump_path), "--elf", str(r.elf))
        lines.append([label, "truth"] + [fmt(t[f]) for f in window] + ["-"])
        lines.append([label, "profile"] + [fmt(percent(rep, f)) for f in window]
                     + [f"{r.dump.spans[0] / r.dump.n:.0f}"])
    print(table(["program", "", *window, "instructions per sample"], lines) + "\n")


def scenario4():
    window = ("hot_a", "isr_work", "EXTI0_IRQHandler", "main")
    print("### Scenario 4: work in EXTI0's handler, 10000 samples\n")
    lines = []
    for label, name in [("EXTI0 priority 0 (= sampler)", "isr_eq_m4"),
                        ("EXTI0 priority 0x80", "isr_low_m4")]:
        t = truth_of(name, window)
        r = run(name)
        rep = cli_json("report", str(r.dump_path), "--elf", str(r.elf))
        lines.append([label, "truth"] + [fmt(t[f]) for f in window])
        lines.append([label, "profile"] + [fmt(percent(rep, f)) for f in window])
    print(table(["build", "", *window], lines) + "\n")


def scenario5():
    print("### Scenario 5: instructions per sample\n")
    lines = []
    seed = {"cost_m4": "21", "cost_jit_m4": "32", "cost_hist_m4": "30", "cost_hist_jit_m4": "41",
            "cost_m3": "21"}
    for name, label in [("cost_m4", "ring, fixed period (M4)"), ("cost_m3", "ring, fixed period (M3)"),
                        ("cost_jit_m4", "ring + jitter"), ("cost_hist_m4", "buckets"),
                        ("cost_hist_jit_m4", "buckets + jitter")]:
        f = run(name).dump.fields
        lines.append([label, name, f["off"], f["on"], f["samples"], f["per_sample"], f["rem"], seed[name]])
    print(table(["sampler", "image", "off", "on", "samples", "per sample", "rem", "seed"], lines) + "\n")


def rtos():
    name = "rtos_m4"
    r, syms = run(name), symbols(name)
    d = r.dump
    print("### RTOS: two tasks, 5000 samples tagged with pxCurrentTCB\n")
    rep = cli_json("report", str(r.dump_path), "--elf", str(r.elf), "--by", "task")
    lines = [[k, int(v["samples"]), fmt(float(v["percent"]))] for k, v in rows(rep).items()]
    combo = collections.Counter((d.tasks[t], syms.lookup(pc)) for pc, t in zip(d.pcs, d.tags))
    for (task, fn), n in combo.most_common(6):
        lines.append([f"{task} / {fn}", n, fmt(100.0 * n / d.n)])
    print(table(["task (/ function)", "samples", "percent"], lines))
    window = ("hot_a", "hot_b", "task_motor", "task_link", "PendSV_Handler", "rtos_switch_context")
    t = truth_of(name, window)
    rep = cli_json("report", str(r.dump_path), "--elf", str(r.elf))
    print()
    print(table(["", *window], [["truth"] + [fmt(t[f]) for f in window],
                                ["profile"] + [fmt(percent(rep, f)) for f in window]]) + "\n")


if __name__ == "__main__":
    for section in (scenario1, scenario2, scenario3, scenario4, scenario5, rtos):
        section()
        sys.stdout.flush()
