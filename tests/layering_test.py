#!/usr/bin/env python3
"""The layers' include roots keep dependencies pointing one way (docs/architecture.md).

For each layer library, take the compile command CMake uses for one of its sources
(compile_commands.json), and compile a one-line file that includes a header of every layer
with exactly that command: the layers it may use must compile, the others must fail with
"file not found". The oracle is the dependency list written in docs/architecture.md, not
the CMake file under test.
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile

# Which layers each layer may include (its own and base always), along the debug stack.
ALLOWED = {
    "base": {"base"},
    "link": {"base", "link"},
    "image": {"base", "image"},
    "profile": {"base", "image", "profile"},
    "report": {"base", "image", "profile", "report"},
    "inputs": {"base", "link", "image", "profile", "inputs"},
    "target": {"base", "link", "image", "profile", "inputs", "target"},
    "sampler": {"base", "link", "image", "profile", "inputs", "target", "sampler"},
    "vprobe": {"base", "link", "vprobe"},
}
# One header of each layer, as sources spell it.
HEADER = {
    "base": "mcuprof/error.h",
    "link": "mcuprof/link/error.h",
    "image": "mcuprof/image/error.h",
    "profile": "mcuprof/profile/stats.h",
    "report": "mcuprof/report/report.h",
    "inputs": "mcuprof/inputs/error.h",
    "target": "mcuprof/target/halting_target.h",
    "sampler": "mcuprof/sampler/sampling_loop.h",
    "vprobe": "mcuprof/vprobe/error.h",
}


def command_for(commands, layer):
    """The compile command of the first source file of src/LAYER/."""
    for entry in commands:
        rel = os.path.relpath(entry["file"], SOURCE_DIR)
        if rel.startswith(f"src/{layer}/") and rel.endswith(".cc"):
            return entry
    sys.exit(f"layering: no source of layer {layer} in compile_commands.json")


def compiles(entry, header):
    with tempfile.TemporaryDirectory() as scratch:
        probe = os.path.join(scratch, "probe.cc")
        with open(probe, "w") as f:
            f.write(f'#include "{header}"\n')
        args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
        # Keep the compiler and its flags; compile the probe, check syntax only.
        kept = [args[0]]
        skip = False
        for a in args[1:]:
            if skip:
                skip = False
                continue
            if a in ("-o", "-c", "-MF", "-MT", "-MQ"):
                skip = True
                continue
            if a == entry["file"] or a.endswith(os.path.basename(entry["file"])) and not a.startswith("-"):
                continue
            if a in ("-MD", "-MMD"):
                continue
            kept.append(a)
        result = subprocess.run(kept + ["-fsyntax-only", probe], cwd=entry["directory"],
                                capture_output=True, text=True)
        if result.returncode != 0 and "No such file" not in result.stderr and "not found" not in result.stderr:
            sys.exit(f"layering: {header} failed to compile for another reason:\n{result.stderr}")
        return result.returncode == 0


BUILD_DIR, SOURCE_DIR = sys.argv[1], sys.argv[2]
with open(os.path.join(BUILD_DIR, "compile_commands.json")) as f:
    COMMANDS = json.load(f)

failures = []
for layer, allowed in ALLOWED.items():
    entry = command_for(COMMANDS, layer)
    for other, header in HEADER.items():
        ok = compiles(entry, header)
        if ok != (other in allowed):
            failures.append(f"{layer} including {other} ({header}): "
                            + ("compiles, but the layer must not see it" if ok else "does not compile"))
        print(f"{layer:9} -> {other:9} {'compiles' if ok else 'refused'}")
if failures:
    print("\n".join(failures))
    sys.exit(1)
