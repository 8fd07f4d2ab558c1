"""The process table, read from /proc: which processes a command started, and whether they
still run (the live tests' check that mcuprof leaves no QEMU behind)."""
from __future__ import annotations

import os
from pathlib import Path


def children_of(pid: int) -> set[int]:
    """The processes whose parent is `pid`, from the process table (/proc/*/stat)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[1]) == pid:
            found.add(int(entry))
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:].split()[0] != "Z"
