#!/usr/bin/env python3
"""The demo: profile the bundled reference firmware live, in QEMU, with no change to it,
and compare the profile with the exact truth of the same run.

1. Run the firmware once under QEMU record/replay (-icount rr=record) with the truth plugin
   counting every executed instruction.
2. Replay the run with QEMU's gdbstub open; `mcuprof record` halts it at random instruction
   counts over GDB and reads PC, LR, SP and xPSR at every halt.
3. `mcuprof diff` puts the live profile next to the truth, with z-scores."""
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
import qemu_runner  # noqa: E402


def main() -> int:
    # Our headings and mcuprof's own output share stdout: line by line, they stay in order in a
    # log too (a pipe or file would otherwise hold ours back until the end).
    sys.stdout.reconfigure(line_buffering=True)
    build = Path(sys.argv[1] if len(sys.argv) > 1 else REPO / "build")
    mcuprof = build / "mcuprof"
    elf = build / "firmware-ref" / "mixed_m4.elf"
    work = Path(tempfile.mkdtemp(prefix="mcuprof-demo-"))
    try:
        return demo(mcuprof, build, elf, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def demo(mcuprof: Path, build: Path, elf: Path, work: Path) -> int:
    rr, truth, samples = work / "run.rr", work / "truth.txt", work / "samples.bin"

    print(f"== 1. running {elf.name} in QEMU (netduinoplus2), recorded, every instruction counted")
    with qemu_runner.QemuRun(elf, record=rr, truth=truth, uart=None, timeout=120,
                             plugin=build / "firmware-ref" / "libtruth.so") as q:
        q.wait()
    total = sum(int(line.split()[1]) for line in truth.read_text().splitlines())
    print(f"   {total} instructions")

    print("\n== 2. mcuprof record: halting the replayed run over GDB at random instruction counts")
    with qemu_runner.QemuRun(elf, replay=rr, gdb=True, halted=True, uart=None, timeout=120) as q:
        command = [str(mcuprof), "record", "--gdb", f"127.0.0.1:{q.gdb_port}", "--pace", "icount",
                   "--interval", str(total // 3000), "--samples", "100000", "--elf", str(elf),
                   "-o", str(samples), "--top", "10"]
        print("   $ mcuprof " + " ".join(command[1:]))
        result = subprocess.run(command)
        q.wait()
    if result.returncode != 0:
        return result.returncode

    print("\n== 3. mcuprof diff: the live profile (A) against the exact truth (B)")
    return subprocess.run([str(mcuprof), "diff", str(samples), str(truth), "--elf", str(elf), "--top", "10"]).returncode


if __name__ == "__main__":
    sys.exit(main())
