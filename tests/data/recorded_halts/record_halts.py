#!/usr/bin/env python3
"""Records halts of a reference image for the replayed-halt unit tests
(tests/sampler/recorded_halts_test.cc). Run by hand after `make build`, not by the suite:

    export PYTHONPATH=$(sed "s|^|$PWD/|" tests/pylib/pythonpath | paste -sd:)
    python3 tests/data/recorded_halts/record_halts.py calltree_o2_m4 fpu_o2_m4 --halts 60
    python3 tests/data/recorded_halts/record_halts.py zephyr_m4 --halts 30

For each image: one QEMU run recorded (record/replay, with the truth plugin for the run's
length), then the recording replayed under gdb-multiarch, stopped by QEMU's replay_break at
instruction counts drawn with a fixed seed (so the same halts come back on every machine).
At each halt gdb saves what a sampler can read there and what gdb itself makes of it:

  registers  r0-r12, sp, lr, pc and xPSR; in handler mode also MSP (= SP) and PSP, read by
             running one MRS instruction (QEMU 7.2's gdbstub describes neither). That
             instruction was not in the recorded run, so the replay ends after such a halt
             and a new one takes the next halts;
  memory     every stack the halt's SP or PSP lies in, from 512 bytes below that pointer to
             the stack's top (the main stack is __stack_limit..__stack_top; a task's stack is
             the .bss/.data object holding the pointer), and every smaller .bss/.data object
             whole (the kernel's current-task pointer, its started flag, the tasks' control
             blocks);
  oracle     gdb's own backtrace (`set backtrace past-main on`): each frame's pc and
             function, exception frames ("<signal handler called>") and inlined calls marked
             (for a handler that interrupted code on PSP, the interrupted registers are popped
             from PSP by hand first, since gdb cannot read PSP here); and, when the image has a
             FreeRTOS- or Zephyr-shaped kernel, the running task's name as gdb evaluates it
             from the DWARF (pxCurrentTCB->pcTaskName, _kernel.cpus[0].current->name), or
             null while the kernel has not started (xSchedulerRunning, z_sys_post_kernel 0).

Output: IMAGE.json beside this script (layout in docs/testing.md, "Recorded halts") and a
copy of the ELF the halts belong to (addresses must match it), IMAGE.elf.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import fwtest
import qemu_runner
from elf_symbols import nm_symbols

HERE = Path(__file__).resolve().parent
BELOW_SP = 512          # bytes below a stack pointer kept (the sampler's window reaches below SP)
SMALL_OBJECT = 512      # .bss/.data objects under this size are saved whole; larger ones are stacks
SEED = 20261130
# The running task as gdb reads it from the DWARF, by a symbol only that kernel has: (the
# "scheduler started" flag, the running task's name).
KERNELS = {"pxCurrentTCB": ("xSchedulerRunning", "pxCurrentTCB->pcTaskName"),            # FreeRTOS-shaped
           "_kernel": ("z_sys_post_kernel", "_kernel.cpus[0].current->name")}            # Zephyr-shaped

# Runs inside gdb-multiarch (-x): drives the halts and prints one JSON document.
GDB_SCRIPT = r'''
import json, os
import gdb

plan = json.loads(os.environ["RECORD_HALTS_PLAN"])
for setting in ("pagination off", "confirm off", "backtrace past-main on", "backtrace limit 64"):
    gdb.execute("set " + setting)
gdb.execute("target remote 127.0.0.1:%d" % plan["gdb_port"], to_string=True)
inferior = gdb.selected_inferior()

def register(name):
    return int(gdb.parse_and_eval("$" + name)) & 0xFFFFFFFF

def region_of(address):
    for start, end in plan["stacks"]:
        if start <= address < end:
            return start, end
    return None

def process_stack_pointer(regs):
    """PSP, which QEMU 7.2's gdbstub does not describe: read by running one MRS r0, PSP
    (ARMv7-M ARM, B5.2.3: F3EF 8009) on the halted core, followed by B . (E7FE) twice so
    that a step that runs on cannot leave, in the 8 bytes below SP; then those bytes, r0,
    PC and xPSR are put back."""
    stub = (regs["r"][13] - 8) & ~3
    saved = bytes(inferior.read_memory(stub, 8))
    inferior.write_memory(stub, b"\xef\xf3\x09\x80\xfe\xe7\xfe\xe7")
    gdb.execute("set $xpsr = %d" % (regs["xpsr"] & ~0x0600FC00), to_string=True)   # no IT state
    gdb.execute("set $pc = %d" % stub, to_string=True)
    gdb.execute("stepi", to_string=True)
    if register("pc") != stub + 4:
        raise gdb.GdbError("the stack-pointer stub did not step once")
    value = register("r0")
    inferior.write_memory(stub, saved)
    for name, value_back in (("r0", regs["r"][0]), ("pc", regs["r"][15]), ("xpsr", regs["xpsr"])):
        gdb.execute("set $%s = %d" % (name, value_back), to_string=True)
    gdb.execute("flushregs", to_string=True)
    return value

def backtrace():
    frames = []
    frame = gdb.newest_frame()
    while frame is not None:
        frames.append({"pc": frame.pc() & 0xFFFFFFFF, "function": frame.name() or "??",
                       "exception": frame.type() == gdb.SIGTRAMP_FRAME,
                       "inline": frame.type() == gdb.INLINE_FRAME})
        try:
            frame = frame.older()
        except gdb.error:
            break
    return frames

halts = []
for icount in plan["icounts"]:
    gdb.execute("monitor replay_break %d" % icount, to_string=True)
    gdb.execute("continue", to_string=True)
    regs = {"r": [register("r%d" % i) for i in range(13)] + [register(n) for n in ("sp", "lr", "pc")],
            "xpsr": register("xpsr"), "msp": None, "psp": None}
    # In handler mode SP is MSP (B1.4.7), and a handler that interrupted a task needs PSP: the
    # stub reads it. Its step is an instruction the recorded run did not have, after which
    # the replay no longer matches the log: this session ends with this halt.
    handler = regs["xpsr"] & 0x1FF != 0
    if handler:
        regs["msp"] = regs["r"][13]
        regs["psp"] = process_stack_pointer(regs)
    ranges = [tuple(r) for r in plan["objects"]]
    for pointer in (regs["r"][13], regs["psp"]):
        region = region_of(pointer) if pointer is not None else None
        if region:
            ranges.append((max(region[0], (pointer - plan["below_sp"]) & ~3), region[1]))
    merged = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    memory = [[start, bytes(inferior.read_memory(start, end - start)).hex()] for start, end in merged]
    frames = backtrace()
    exception = next((i for i, f in enumerate(frames) if f["exception"]), None)
    if exception is not None and regs["psp"] is not None and frames[exception]["pc"] & 4:
        # The handler interrupted code on PSP, which gdb cannot read here: it would take the
        # frame from MSP. So the interrupted state is put in the registers by hand, popped
        # from PSP as the exception return would (ARMv7-M ARM, B1.5.7-B1.5.8: r0-r3, r12,
        # lr, pc, xPSR; 0x68 bytes with the FP state when EXC_RETURN bit 4 is 0, 0x20
        # without; 4 more when the stacked xPSR's bit 9 says the frame was aligned), and gdb
        # unwinds on from there.
        words = inferior.read_memory(regs["psp"], 32).tobytes()
        stacked = [int.from_bytes(words[i:i + 4], "little") for i in range(0, 32, 4)]
        size = (0x20 if frames[exception]["pc"] & 0x10 else 0x68) + (4 if stacked[7] & 0x200 else 0)
        for name, value in zip(("r0", "r1", "r2", "r3", "r12", "lr", "pc", "xpsr"), stacked):
            gdb.execute("set $%s = %d" % (name, value), to_string=True)
        gdb.execute("set $sp = %d" % (regs["psp"] + size), to_string=True)
        frames = frames[:exception + 1] + backtrace()
    oracle = {"frames": frames}
    if plan["kernel"]:
        started, name = plan["kernel"]
        oracle["task"] = gdb.parse_and_eval(name).string() if int(gdb.parse_and_eval(started)) else None
    halts.append({"icount": icount, "registers": regs, "memory": memory, "oracle": oracle})
    if handler:
        break
print("HALTS-JSON " + json.dumps(halts))
gdb.execute("kill", to_string=True)
'''


def memory_plan(elf: Path) -> tuple[list[list[int]], list[list[int]]]:
    """(small objects saved whole, stack regions) of the image's RAM, from nm."""
    symbols = nm_symbols(elf)
    address = {s.name: s.address for s in symbols}
    main_stack = [address.get("__stack_limit", address["__bss_end"]), address["__stack_top"]]
    objects, stacks = [], [main_stack]
    for s in symbols:
        if s.kind.lower() in "bd" and s.size > 0:
            (objects if s.size < SMALL_OBJECT else stacks).append([s.address, s.address + s.size])
    return objects, stacks


def record(name: str, halts: int) -> Path:
    elf = fwtest.elf_path(name)
    work = Path(tempfile.mkdtemp(prefix="mcuprof-record-halts-"))
    try:
        rr, truth = work / "rr.bin", work / "truth.txt"
        with qemu_runner.QemuRun(elf, record=rr, truth=truth, uart=None, timeout=600) as q:
            if q.wait() != 0:
                raise SystemExit(f"{name}: the recorded run failed")
        total = sum(fwtest.read_counts(truth).values())
        # Halts from a tenth of the run on (past the start-up code), at instruction counts a
        # fixed seed draws: the same halts on every machine.
        draw = random.Random(f"{SEED}:{name}")
        icounts = sorted(draw.sample(range(total // 10, total - 1000), halts))
        objects, stacks = memory_plan(elf)
        names = {s.name for s in nm_symbols(elf)}
        kernel = next((k for symbol, k in KERNELS.items() if symbol in names), None)
        plan = {"icounts": icounts, "objects": objects, "stacks": stacks, "below_sp": BELOW_SP, "kernel": kernel}
        script = work / "halts.py"
        script.write_text(GDB_SCRIPT)
        recorded = []
        while len(recorded) < len(icounts):
            # One replay per session: it ends after a halt that ran the stub (see GDB_SCRIPT).
            plan["icounts"] = icounts[len(recorded):]
            with qemu_runner.QemuRun(elf, replay=rr, gdb=True, halted=True, uart=None, timeout=600) as q:
                plan["gdb_port"] = q.gdb_port
                r = subprocess.run(["gdb-multiarch", "-batch", "-nx", str(elf), "-x", str(script)],
                                   env={**os.environ, "RECORD_HALTS_PLAN": json.dumps(plan)},
                                   stdout=subprocess.PIPE, text=True, timeout=600)
            line = next((l for l in r.stdout.splitlines() if l.startswith("HALTS-JSON ")), None)
            if line is None:
                raise SystemExit(f"{name}: gdb recorded nothing:\n{r.stdout[-2000:]}")
            recorded += json.loads(line[len("HALTS-JSON "):])
            print(f"{name}: {len(recorded)} of {len(icounts)} halts", file=sys.stderr)
        document = {"image": f"{name}.elf", "seed": SEED, "instructions": total, "below_sp": BELOW_SP,
                    "halts": recorded}
        out = HERE / f"{name}.json"
        out.write_text(json.dumps(document, separators=(",", ":")) + "\n")
        shutil.copyfile(elf, HERE / f"{name}.elf")
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("images", nargs="+", help="reference image names (build/firmware-ref/NAME.elf)")
    parser.add_argument("--halts", type=int, default=40, help="halts per image (default 40)")
    args = parser.parse_args()
    for name in args.images:
        out = record(name, args.halts)
        print(f"{out}: {args.halts} halts, {out.stat().st_size} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
