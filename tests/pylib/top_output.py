"""What `mcuprof top` prints, read back for the tests that run it."""
from __future__ import annotations


def core_sections(stdout: str) -> dict[int, dict[str, float]]:
    """The last table's section per core of a multi-core target: core -> {row name: samples}."""
    last = stdout[stdout.rindex("top "):]
    sections = {}
    for part in last.split("\ncore ")[1:]:
        header, *lines = part.splitlines()
        sections[int(header.rstrip(":"))] = {line.split()[3]: float(line.split()[2]) for line in lines[1:]
                                             if line.strip()}
    return sections
