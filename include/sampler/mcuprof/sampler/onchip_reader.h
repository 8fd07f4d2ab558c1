#pragma once
// Reads the reference on-chip sampler's memory (firmware-ref/src/sampler.c) over the debug
// link, with no UART: the ring of PCs (prof_ring, prof_tags), the histogram (prof_bins,
// prof_shift, prof_outside) or the top-N table (prof_table), and the count prof_taken.
// Addresses and lengths come from the ELF's symbols, the table's layout from its DWARF.
// The result is the same dump the firmware would print.
#include <chrono>
#include <optional>
#include <string>

#include "mcuprof/inputs/dump_reader.h"

namespace mcuprof::core {
class ImageSet;
}
namespace mcuprof::transport {
class RspClient;
struct LinkAddress;
}

namespace mcuprof::sources {

// The target must be halted. The sampler's variables are found among the set's symbols, the
// top-N table's layout in the main image's DWARF. Throws sources::Error when the ELF has no
// sampler.
Dump read_onchip(transport::RspClient& gdb, const core::ImageSet& images);

// Connects to a GDB server, optionally lets the target run until it reaches `stop_at`
// (a breakpoint, removed again), reads the sampler, and detaches, leaving the target
// running. Throws transport::Error or sources::Error.
Dump read_onchip_over_gdb(const transport::LinkAddress& gdb, const core::ImageSet& images,
                          std::optional<uint32_t> stop_at, std::chrono::steady_clock::duration timeout);

// The dump in the firmware's own text format (docs/formats.md), which `report` reads.
void write_dump(const Dump& dump, std::ostream& out);

} // namespace mcuprof::sources
