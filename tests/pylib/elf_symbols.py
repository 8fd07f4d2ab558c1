"""An ELF's symbol table as binutils reads it (arm-none-eabi-nm): the one reader of nm's output
for the tests and benchmarks, whose checks must not depend on the tool under test."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from os import PathLike


@dataclass(frozen=True)
class Symbol:
    name: str
    address: int   # the symbol's value as nm prints it
    size: int      # 0 when the symbol has none
    kind: str      # nm's letter: T/t code, W/w weak, D/d data, B/b bss, ...

    @property
    def start(self) -> int:
        """Where a function's code starts: its value without the Thumb bit (ARM ELF, 5.5.3)."""
        return self.address & ~1


def nm_symbols(elf: PathLike | str, kinds: str | None = None) -> list[Symbol]:
    """Every defined symbol of `elf` in address order, or those whose nm letter is in `kinds`."""
    out = subprocess.run(["arm-none-eabi-nm", "-n", "-S", "--defined-only", str(elf)],
                         capture_output=True, text=True, check=True).stdout
    symbols = []
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 4:     # value, size, letter, name
            symbol = Symbol(fields[3], int(fields[0], 16), int(fields[1], 16), fields[2])
        elif len(fields) == 3:   # no size
            symbol = Symbol(fields[2], int(fields[0], 16), 0, fields[1])
        else:
            continue
        if kinds is None or symbol.kind in kinds:
            symbols.append(symbol)
    return symbols


def census_by_function(census: dict[int, int], elf: PathLike | str) -> dict[int | None, int]:
    """A census (address -> instructions) grouped by the nm function that spans each address,
    keyed by its start (None: outside every function with a size)."""
    functions = sorted({(s.start, s.size) for s in nm_symbols(elf, "TtWw") if s.size > 0}, reverse=True)
    grouped: dict[int | None, int] = {}
    for address, count in census.items():
        owner = next((start for start, size in functions if start <= address < start + size), None)
        grouped[owner] = grouped.get(owner, 0) + count
    return grouped


def symbolizer_chain(elf: PathLike | str, address: int, demangle: bool = True) -> list[tuple[str, str]]:
    """llvm-symbolizer-19's inline chain at an address, innermost first: (function, file:line),
    the place empty where it knows none; `demangle` False: the linkage names as the ELF has them."""
    out = subprocess.run(["llvm-symbolizer-19", f"--obj={elf}", "--inlines", "--functions=linkage",
                          *([] if demangle else ["--no-demangle"]), hex(address)],
                         capture_output=True, text=True, check=True).stdout
    lines = [line for line in out.splitlines() if line.strip()]
    chain = []
    for name, place in zip(lines[0::2], lines[1::2]):
        file, line = place.rsplit(":", 2)[0:2]
        chain.append((name, f"{file}:{line}" if file != "??" and line != "0" else ""))
    return chain
