#!/usr/bin/env python3
"""Speed of the virtual probe, for docs/vprobe.md: QEMU (mixed_forever_m4) + mcuprof vprobe +
OpenOCD 0.12, driven through OpenOCD's Tcl port, and the vprobe alone driven by a bare
remote_bitbang client. Not a test: it prints figures. Run after `make build`:

    python3 tests/vprobe/measure_vprobe.py [--seconds 3]
"""
from __future__ import annotations

import argparse
import re
import socket
import subprocess
import sys
import time

import openocd_rig as t  # its process and Tcl helpers
import qemu_runner
from spawn import spawn


def timed(tcl: t.TclRpc, script: str) -> float:
    """Seconds OpenOCD took for a Tcl script, measured inside OpenOCD."""
    tcl.run(f"set _t0 [clock microseconds]; {script}; set _dt [expr {{[clock microseconds] - $_t0}}]")
    return int(tcl.raw("set _dt")) / 1e6


def bare_client(port: int, scans: int) -> tuple[float, float]:
    """(scans/s with one round trip each, TAP clocks/s streamed) for a remote_bitbang client
    without OpenOCD: IDCODE DR scans of 32 bits with a TDO read per bit, then a stream of
    clocks with no reads."""
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    reset = b"2626262626" b"04" b"2604040"   # Test-Logic-Reset, Run-Test/Idle, to Shift-DR
    scan = b"".join(b"0R4" for _ in range(31)) + b"2R6" + b"26040" + b"26040"   # 32 bits, Update, back to Shift-DR
    s.sendall(reset)
    started = time.perf_counter()
    for _ in range(scans):
        s.sendall(scan)
        got = b""
        while len(got) < 32:
            got += s.recv(64)
    round_trips = scans / (time.perf_counter() - started)
    stream = b"04" * 500000
    started = time.perf_counter()
    s.sendall(stream + b"R")
    s.recv(1)
    clocks = 500000 / (time.perf_counter() - started)
    s.sendall(b"Q")
    s.close()
    return round_trips, clocks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=3, help="length of the profile run")
    args = ap.parse_args()

    with qemu_runner.QemuRun(t.ELF, gdb=True, halted=True, uart=None, timeout=600) as q:
        vprobe = spawn([str(t.CLI), "vprobe", "--gdb", f"127.0.0.1:{q.gdb_port}", "--port", "0"],
                       stderr=subprocess.PIPE, text=True)
        try:
            port = int(re.search(r":(\d+),", vprobe.stderr.readline()).group(1))
            round_trips, clocks = bare_client(port, 2000)
            print(f"bare remote_bitbang client: {round_trips:.0f} 32-bit scans/s with a round trip each "
                  f"({1e6 / round_trips:.0f} us per scan); {clocks / 1e6:.2f} M TAP clocks/s streamed")
            print(vprobe.stderr.read().strip())
        finally:
            t.stop_process(vprobe)

        vprobe = spawn([str(t.CLI), "vprobe", "--gdb", f"127.0.0.1:{q.gdb_port}", "--port", "0"],
                       stderr=subprocess.PIPE, text=True)
        tcl_port = qemu_runner.free_port()
        openocd = None
        try:
            port = int(re.search(r":(\d+),", vprobe.stderr.readline()).group(1))
            openocd = spawn([t.OPENOCD, "-f", str(t.CONFIG), "-c", f"remote_bitbang port {port}",
                             "-c", "gdb_port disabled", "-c", "telnet_port disabled",
                             "-c", f"tcl_port {tcl_port}", "-c", "init"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            t.wait_port(tcl_port, openocd, "openocd")
            tcl = t.TclRpc(tcl_port, timeout=120)
            n = 1000
            s = timed(tcl, f"for {{set i 0}} {{$i < {n}}} {{incr i}} {{drscan qemu.cpu 32 0}}")
            print(f"OpenOCD drscan (32 bits): {n / s:.0f}/s, {1e6 * s / n:.0f} us each")
            for where, setup in (("running", ""), ("halted", "halt")):
                if setup:
                    tcl.run(setup)
                for region, address in (("flash", 0x08000000), ("SRAM", 0x20000000), ("peripherals", 0x40000000)):
                    words = 256 if region == "peripherals" else 4096
                    s = timed(tcl, f"read_memory 0x{address:08x} 32 {words}")
                    print(f"read_memory {region}, target {where}: {words / s:.0f} words/s")
            s = timed(tcl, "for {set i 0} {$i < 200} {incr i} {mww 0x20010000 $i}")
            print(f"mww (one word, target halted): {200 / s:.0f}/s")
            s = timed(tcl, "for {set i 0} {$i < 50} {incr i} {resume; halt}")
            print(f"resume + halt (registers read at each halt): {50 / s:.0f}/s, {1e3 * s / 50:.1f} ms each")
            s = timed(tcl, "for {set i 0} {$i < 200} {incr i} {step}")
            print(f"step: {200 / s:.0f}/s")
            tcl.run("resume")
            s = timed(tcl, f"set _out [capture {{profile {args.seconds} /dev/null}}]")
            match = re.search(r"(\d+) samples", tcl.raw("set _out"))
            print(f"profile {args.seconds} s: {match.group(1) if match else '?'} DWT_PCSR samples, "
                  f"the command took {s:.2f} s")
            tcl.raw("shutdown")
            tcl.close()
            openocd.wait(timeout=10)
            vprobe.wait(timeout=10)
            print(vprobe.stderr.read().strip())
        finally:
            t.stop_process(openocd)
            t.stop_process(vprobe)
    with open("/proc/loadavg") as f:
        print("load average while measuring:", f.read().split()[:3])
    return 0


if __name__ == "__main__":
    sys.exit(main())
