"""Checks of the task tags of a multi-core recording (issue 29), shared by the tests of QEMU's
gdbstub (tests/live/test_multicore.py) and of OpenOCD (tests/vprobe/test_vprobe_cores_gdb.py):
the recording read by its format (docs/formats.md), not by mcuprof, against what the two-core
task images (firmware-ref/src/scen_dualtasks.c) guarantee."""
from __future__ import annotations

import json
import struct
import subprocess
import unittest
from pathlib import Path

import fwtest
import run_header

# scen_dualtasks.c makes a task its core's current one before it calls the task's function.
TASK_OF = {"motor_work": "motor", "display_work": "display", "radio_work": "radio", "sensor_work": "sensor"}
CORE_TASKS = {0: {"motor", "display"}, 1: {"radio", "sensor"}}


def recorded_samples(path: Path) -> tuple[list[tuple[int, int, int, bool]], dict[int, str]]:
    """Every sample's (core, pc, tag, tagged), and the task names of the task events."""
    data = path.read_bytes()
    at = run_header.records_start(data, str(path))
    samples, names = [], {}
    while at + 8 <= len(data):
        kind, size = struct.unpack_from("<HH", data, at)
        payload = data[at + 8:at + 8 + size]
        at += 8 + size
        if kind == 1:
            pc, tag, flags = struct.unpack_from("<I", payload, 8)[0], *struct.unpack_from("<II", payload, 24)
            samples.append(((flags >> 8) & 0xFF, pc, tag, bool(flags & 1)))
        elif kind == 2:
            event = json.loads(payload)
            if event.get("kind") == "task":
                names[int(event["address"], 16)] = event["name"]
    return samples, names


def check_tasks_per_core(test: unittest.TestCase, rec: Path, image: str, cli: Path, samples_expected: int) -> None:
    """Every sample whose PC is in a task's function carries that task's tag, each core only its
    own tasks; and `report --by task` gives each core exactly its own tasks."""
    samples, names = recorded_samples(rec)
    test.assertEqual(len(samples), samples_expected)
    syms = fwtest.symbols(image)
    in_task = 0
    for core, pc, tag, tagged in samples:
        task = names.get(tag) if tagged else None
        if task is not None:
            test.assertIn(task, CORE_TASKS[core], (core, hex(pc)))
        function = syms.lookup(pc)
        if function in TASK_OF:
            in_task += 1
            test.assertEqual(task, TASK_OF[function], (core, function))
    # Not an accuracy bound (plain wall clock on QEMU is biased, docs/live.md): that the tag
    # check above covered most samples, the task functions being nearly all the code run.
    test.assertGreater(in_task, len(samples) // 2)
    by_task = subprocess.run([str(cli), "report", str(rec), "--elf", str(fwtest.elf_path(image)), "--by", "task",
                              "--format", "json"], capture_output=True, text=True, timeout=300)
    test.assertEqual(by_task.returncode, 0, by_task.stderr)
    for core in json.loads(by_task.stdout)["cores"]:
        tasks = {r["name"] for r in core["functions"] if r["samples"]} - {"(no task)"}
        test.assertEqual(tasks, CORE_TASKS[core["core"]])
