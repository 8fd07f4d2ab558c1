#!/usr/bin/env python3
"""Makes tests/golden/inputs/ once: the golden test's fixed inputs (README.md says what each is).

Not part of the test: the test reads what this wrote and committed, and needs no QEMU. Run it
again only to replace the inputs on purpose (then regenerate expected/ in the same commit):

    export PYTHONPATH=$(sed "s|^|$PWD/|" tests/pylib/pythonpath | paste -sd:)
    python3 tests/golden/make_inputs.py --mcuprof build/mcuprof --fw-dir build/firmware-ref

It needs what `make build` and scripts/setup.sh give (qemu-system-arm, openocd, binutils for
ARM) and debugedit (Debian's package of that name). Every command runs with the working
directory tests/golden/inputs and names the ELFs by their file name there, so the recordings
name their images that way (`elf`; `elf_path` is absolute all the same, README.md says why
that matters). Each command is printed before it runs.

The ELFs are copies of the build's with one change: debugedit rewrites the DWARF's build
directories (the firmware build tree to `.`, the checkout's firmware-ref to `firmware-ref`),
so that the source paths they name are relative (`./firmware-ref/src/work.h`) and the HTML
report's source excerpts come from the copies under inputs/firmware-ref/src, not from a file
outside the inputs. Code, data and symbols are unchanged (checked below: the loaded bytes and
the symbol table against the original's), so the images' identity is the build's.
"""
from __future__ import annotations

import argparse
import os
import random
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
INPUTS = HERE / "inputs"

# name -> QEMU machine. Small images, each chosen for what it brings (README.md).
IMAGES = {
    "loops_chunks_m4": "netduinoplus2",      # flat recording, on-chip ring dump of 3 chunks, truth counts, SWO PCs
    "calltree_o2_m4": "netduinoplus2",       # --stacks: recursion, inlining, a six-deep chain
    "rtos_m4": "netduinoplus2",              # FreeRTOS-shaped tasks: --stacks and tags; a tagged on-chip dump
    "state_m4": "netduinoplus2",             # --by var:app_state
    "dualtasks_freertos_an521": "mps2-an521",   # two cores, a task per core
    "dual_an521": "mps2-an521",              # the truth plugin's census per core
    "vendor_boot_m4": "netduinoplus2",       # bootloader + application, two --elf
    "vendor_app_m4": "netduinoplus2",
    "mixed_forever_m4": "netduinoplus2",     # through OpenOCD and the vprobe: DWT_PCSR (reads, profile), halts, gmon.out
    "loops_hist4_m4": "netduinoplus2",       # on-chip histogram dump
    "phase_topn_m4": "netduinoplus2",        # on-chip top-N table dump
    "calls_m4": "netduinoplus2",             # -finstrument-functions records, as SWO ITM packets
}


def say(argv) -> None:
    print("+ (cd tests/golden/inputs &&", " ".join(shlex.quote(str(a)) for a in argv) + ")", flush=True)


def run(argv, **kwargs) -> subprocess.CompletedProcess:
    say(argv)
    r = subprocess.run([str(a) for a in argv], cwd=INPUTS, capture_output=True, text=True, **kwargs)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {r.stderr.strip()}")
    return r


def objcopy_bytes(elf: Path, work: Path) -> bytes:
    out = work / (elf.name + ".bin")
    subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", str(elf), str(out)], check=True)
    return out.read_bytes()


def symbols(elf: Path) -> str:
    return subprocess.run(["arm-none-eabi-nm", "-n", "-S", str(elf)], capture_output=True, text=True,
                          check=True).stdout


def copy_elves(fw_dir: Path, work: Path) -> None:
    for name in IMAGES:
        original, copy = fw_dir / f"{name}.elf", INPUTS / f"{name}.elf"
        shutil.copyfile(original, copy)
        for base, dest in ((REPO / "build" / "firmware-ref-build", "."), (REPO / "firmware-ref", "firmware-ref")):
            argv = ["debugedit", "-b", str(base), "-d", dest, copy.name]
            say(argv)
            subprocess.run(argv, cwd=INPUTS, check=True)
        if objcopy_bytes(original, work) != objcopy_bytes(copy, work) or symbols(original) != symbols(copy):
            sys.exit(f"{name}: debugedit changed more than the DWARF's paths")
        if str(REPO).encode() in copy.read_bytes():
            sys.exit(f"{name}: still names {REPO} (built elsewhere? change the -b of debugedit)")


def copy_sources() -> None:
    """The firmware sources the ELFs' line tables name, as committed (git show HEAD:...), under
    inputs/firmware-ref/src; the vendor images' sources are left out on purpose, so that the HTML
    report's 'not on this machine' branch is pinned too."""
    names = set()
    for name in IMAGES:
        dump = subprocess.run(["arm-none-eabi-readelf", "--debug-dump=line", str(INPUTS / f"{name}.elf")],
                              capture_output=True, text=True, check=True).stdout
        dirs: dict[str, str] = {}
        section = None
        for line in dump.splitlines():
            words = line.split()
            if "The Directory Table" in line:
                section, dirs = "dirs", {}
            elif "The File Name Table" in line:
                section = "files"
            elif "Line Number Statements" in line:
                section = None
            elif not words:
                continue
            elif section == "dirs" and words[0].isdigit() and len(words) == 2:
                dirs[words[0]] = words[1]
            elif section == "files" and words[0].isdigit() and len(words) >= 5:
                directory = dirs.get(words[1], "")
                if directory.startswith("firmware-ref/src") and "/vendor" not in directory:
                    names.add(f"{directory}/{words[-1]}")
    for path in sorted(names):
        text = subprocess.run(["git", "show", f"HEAD:{path}"], cwd=REPO, capture_output=True, check=True).stdout
        target = INPUTS / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text)
        print(f"  source {path} ({len(text)} bytes)")


def qemu_inputs(cli: Path, plugin: Path) -> None:
    import qemu_runner

    # The on-chip sampler's UART dumps and the truth plugin's counts of whole runs.
    for name, uart, truth in (("loops_chunks_m4", "uart.txt", "counts.txt"), ("rtos_m4", "rtos_uart.txt", None),
                              ("loops_hist4_m4", "hist_uart.txt", None), ("phase_topn_m4", "topn_uart.txt", None)):
        print(f"+ qemu_runner.run_to_exit({name}.elf, machine={IMAGES[name]}, uart_path={uart}, truth_path={truth})")
        qemu_runner.run_to_exit(INPUTS / f"{name}.elf", IMAGES[name], uart_path=INPUTS / uart,
                                truth_path=INPUTS / truth if truth else None, plugin=plugin, timeout=600)
    # Two vCPUs in threads of their own (no -icount), as tests/live/test_multicore.py runs them.
    print("+ qemu_runner.QemuRun(dual_an521.elf, machine=mps2-an521, uart=None, truth=dual_counts.txt, "
          "icount_shift=None).wait()")
    _dual_counts(qemu_runner, plugin)

    # Recordings made by mcuprof itself, with --qemu: exact, repeatable.
    run([cli, "record", "--qemu", "netduinoplus2", "--elf", "loops_chunks_m4.elf", "--samples", "2000",
         "--seed", "1", "-o", "flat.rec"])
    run([cli, "record", "--qemu", "netduinoplus2", "--elf", "calltree_o2_m4.elf", "--stacks", "--samples", "2000",
         "--seed", "2", "-o", "stacks.rec"])
    run([cli, "record", "--qemu", "netduinoplus2", "--elf", "rtos_m4.elf", "--stacks", "--samples", "2000",
         "--seed", "3", "-o", "rtos.rec"])
    run([cli, "record", "--qemu", "netduinoplus2", "--elf", "state_m4.elf", "--by", "var:app_state",
         "--samples", "1000", "--seed", "4", "-o", "state.rec"])
    run([cli, "record", "--qemu", "netduinoplus2", "--elf", "vendor_boot_m4.elf", "--elf", "vendor_app_m4.elf",
         "--stacks", "--samples", "2000", "--seed", "7", "-o", "pair.rec"])

    # Two cores: --qemu refuses a multi-core machine, so over the gdbstub of a QEMU started here.
    with qemu_runner.QemuRun(INPUTS / "dualtasks_freertos_an521.elf", "mps2-an521", gdb=True, uart=None,
                             icount_shift=None, timeout=600) as q:
        q.wait_listening(q.gdb_port)
        run([cli, "record", "--gdb", f"127.0.0.1:{q.gdb_port}", "--samples", "1000", "--interval", "1ms",
             "--seed", "29", "--stacks", "--elf", "dualtasks_freertos_an521.elf", "-o", "dual.rec"], timeout=600)
        q.stop()

    # -finstrument-functions records of calls_m4 go to USART1 as raw words (QEMU has no ITM).
    print("+ qemu_runner.run_to_exit(calls_m4.elf, machine=netduinoplus2, uart_path=<scratch>)")
    with tempfile.TemporaryDirectory(prefix="golden-calls-") as scratch:
        uart = Path(scratch) / "uart.bin"
        qemu_runner.run_to_exit(INPUTS / "calls_m4.elf", "netduinoplus2", uart_path=uart, timeout=600)
        raw = uart.read_bytes()
    assert len(raw) % 4 == 0, len(raw)
    words = struct.unpack(f"<{len(raw) // 4}I", raw)
    (INPUTS / "calls.swo").write_bytes(calls_stream(words))
    print(f"  calls.swo: {len(words)} words as ITM port-1 packets")


def _dual_counts(qemu_runner, plugin: Path) -> None:
    with qemu_runner.QemuRun(INPUTS / "dual_an521.elf", "mps2-an521", uart=None, truth=INPUTS / "dual_counts.txt",
                             plugin=plugin, icount_shift=None, timeout=600) as q:
        status = q.wait()
    if status != 0:
        sys.exit(f"dual_an521 exited {status}")


def calls_stream(words) -> bytes:
    """The call records as the ITM would send them (tests/integration/test_calls.py): a sync
    packet, then each word as a 4-byte software packet of stimulus port 1."""
    out = bytearray(b"\0" * 5 + b"\x80")
    for w in words:
        out += bytes([(1 << 3) | 0b11]) + struct.pack("<I", w)
    return bytes(out)


def swo_stream(pcs: list[int]) -> bytes:
    """A DWT PC-sampling capture of the PCs the on-chip sampler took (uart.txt, in order), as
    the ITM packs them (ARMv7-M ARM D4; docs/swo.md), with every other packet kind mcuprof
    counts placed at fixed places: it starts in the middle of a packet (the tail of a PC
    sample, for --sync), then a sync; a local timestamp every 64 samples, a sleep sample every
    50, a sync every 1000; an overflow, a software write to port 0, an exception trace, an
    event counter and a global timestamp once each; and a reserved header. No probe here
    captures SWO (QEMU has no TPIU), so the stream is made, not captured."""
    out = bytearray(b"\x02\x00\x08")                    # the tail of a PC packet
    out += b"\0" * 5 + b"\x80"                          # sync
    for i, pc in enumerate(pcs):
        if i and i % 1000 == 0:
            out += b"\0" * 5 + b"\x80"
        if i % 64 == 0:
            out += bytes([0xC0, 0x85, 0x01])            # local timestamp, 2 payload bytes
        if i % 50 == 49:
            out += b"\x15\x00"                          # a sleep sample
        out += b"\x17" + struct.pack("<I", pc)
        if i == 300:
            out += b"\x70"                              # overflow
        if i == 400:
            out += b"\x01A"                             # ITM software, port 0, 1 byte
        if i == 500:
            out += b"\x0e\x0f\x10"                      # exception 15 (SysTick) entered
        if i == 600:
            out += b"\x05\x02"                          # event counter: EXC wrapped
        if i == 700:
            out += b"\x94\x81\x82\x83\x04"              # global timestamp 1, 4 bytes
        if i == 800:
            out += b"\x04"                              # a reserved header: bad
    return bytes(out)


def dump_pcs(text: str) -> list[int]:
    return [int(w, 16) for line in text.splitlines() if line.startswith("p ") for w in line.split()[1:]]


def openocd_inputs(cli: Path) -> None:
    """QEMU running mixed_forever_m4, `mcuprof vprobe` in front of its gdbstub, the real OpenOCD
    on the vprobe (JTAG, configs/openocd/qemu-vprobe.cfg): tests/pylib/openocd_rig.py's rig."""
    import openocd_rig

    elf = INPUTS / "mixed_forever_m4.elf"
    rig = types.SimpleNamespace(work=Path(tempfile.mkdtemp(prefix="golden-openocd-")))
    print(f"+ openocd_rig.start_rig({elf.name})  # QEMU -S, mcuprof vprobe --port 0, openocd -f qemu-vprobe.cfg")
    openocd_rig.start_rig(rig, elf)
    try:
        tcl = f"127.0.0.1:{rig.tcl_port}"
        run([cli, "record", "--openocd", tcl, "--mode", "pcsr", "--batch", "16", "--samples", "2000",
             "--interval", "1ms", "--seed", "6", "--elf", elf.name, "-o", "pcsr.rec"], timeout=900)
        run([cli, "record", "--openocd", tcl, "--mode", "pcsr", "--pcsr-read", "profile", "--samples", "2000",
             "--seed", "9", "--elf", elf.name, "-o", "pcsr_profile.rec"], timeout=900)
        run([cli, "record", "--openocd", tcl, "--mode", "halt", "--stacks", "--samples", "500",
             "--interval", "2ms", "--seed", "8", "--elf", elf.name, "-o", "halt_openocd.rec"], timeout=900)
        low, high = text_range(elf)
        gmon = INPUTS / "gmon.out"
        command = f"profile 1 {gmon} 0x{low:x} 0x{high:x}"
        print(f"+ openocd tcl: {command}")
        print("  " + rig.tcl.run(command).strip().replace("\n", "\n  "))
    finally:
        openocd_rig.stop_rig(rig)


def text_range(elf: Path) -> tuple[int, int]:
    out = subprocess.run(["arm-none-eabi-readelf", "-SW", str(elf)], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        words = line.replace("[ ", "[").split()
        if len(words) > 4 and words[1] == ".text":
            start, size = int(words[3], 16), int(words[5], 16)
            return start, start + size
    raise SystemExit(f"{elf}: no .text")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mcuprof", type=Path, default=REPO / "build" / "mcuprof")
    ap.add_argument("--fw-dir", type=Path, default=REPO / "build" / "firmware-ref")
    ap.add_argument("--plugin", type=Path, default=None, help="libtruth.so (default: beside --mcuprof)")
    a = ap.parse_args()
    cli = a.mcuprof.resolve()
    plugin = (a.plugin or cli.parent / "libtruth.so").resolve()
    os.environ["MCUPROF_CLI"] = str(cli)       # the vprobe the OpenOCD rig starts
    if INPUTS.exists():
        shutil.rmtree(INPUTS)
    INPUTS.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="golden-elves-") as work:
        copy_elves(a.fw_dir.resolve(), Path(work))
    copy_sources()
    qemu_inputs(cli, plugin)
    pcs = dump_pcs((INPUTS / "uart.txt").read_text())
    (INPUTS / "swo.bin").write_bytes(swo_stream(pcs))
    print(f"  swo.bin: {len(pcs)} PC samples of uart.txt")
    openocd_inputs(cli)
    total = sum(p.stat().st_size for p in INPUTS.rglob("*") if p.is_file())
    print(f"inputs: {sum(1 for p in INPUTS.rglob('*') if p.is_file())} files, {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
