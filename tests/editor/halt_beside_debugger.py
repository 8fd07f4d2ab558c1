"""By hand, not under ctest: what `mcuprof record --openocd` does when a debugger halts the
target mid-recording (docs/ide.md, "Beside Cortex-Debug"). The rig of tests/pylib/openocd_rig.py
(QEMU, the vprobe, OpenOCD with its Tcl and GDB ports) on mixed_forever_m4; record through the
Tcl port; gdb-multiarch attaches through the GDB port (which halts the core), stays 3 s and
detaches; then record is stopped with SIGINT if it still runs. Prints what happened.

    export PYTHONPATH=$(sed "s|^|$PWD/|" tests/pylib/pythonpath | paste -sd:)
    python3 tests/editor/halt_beside_debugger.py halt|pcsr
"""
import os, subprocess, sys, time, types
from pathlib import Path
import openocd_rig as R
from spawn import spawn
mode = sys.argv[1]
import tempfile
rig = types.SimpleNamespace(work=Path(tempfile.mkdtemp(prefix="mcuprof-halt-")))
rig.work.mkdir(exist_ok=True)
R.start_rig(rig, R.ELF, openocd_gdb=True)
try:
    rec = rig.work / "r.rec"
    err = open(rig.work / "record.err", "w")
    t0 = time.monotonic()
    p = spawn([str(R.CLI), "record", "--openocd", f"127.0.0.1:{rig.tcl_port}", "--mode", mode, "--elf", str(R.ELF),
               "--samples", "1000000", "-o", str(rec)], stdout=subprocess.DEVNULL, stderr=err)
    while not rec.exists() or rec.stat().st_size < 20000:
        time.sleep(0.2)
    print("recording, size", rec.stat().st_size, "at", round(time.monotonic() - t0, 1))
    # gdb attaches through OpenOCD's GDB port (the attach halts the core), stays 3 s, detaches
    g = subprocess.run(["gdb-multiarch", "-batch", "-nx", "-ex", "set confirm off", "-ex", f"target extended-remote 127.0.0.1:{rig.gdb_port}",
                        "-ex", "info registers pc", "-ex", "shell sleep 3", "-ex", "info registers pc", "-ex", "detach"], capture_output=True, text=True, timeout=60)
    print("gdb:", g.stdout.strip().replace("\n", " | ")[:400])
    time.sleep(1)
    print("record still running:", p.poll() is None, "state:", rig.tcl.run("[target current] curstate"))
    if p.poll() is None:
        p.send_signal(2); p.wait(timeout=30)
    print("record rc", p.returncode)
    err.close()
    print("record stderr:", open(rig.work / "record.err").read()[-800:])
    print(subprocess.run([str(R.CLI), "report", str(rec)], capture_output=True, text=True).stdout[:600])
finally:
    R.stop_rig(rig)
