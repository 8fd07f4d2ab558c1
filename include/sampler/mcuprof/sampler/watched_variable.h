#pragma once
// --by var:NAME: a global variable read at every halt, in the same batched read as the
// registers and the running task, so that samples can be grouped by the firmware's state or
// mode with no change to the firmware. Its place, size and the names of its values come
// from the ELF's DWARF, checked before the link is touched.
#include <cstdint>
#include <optional>
#include <string>

#include "mcuprof/image/firmware.h"
#include "mcuprof/target/halting_target.h"
#include "mcuprof/inputs/run_header.h"

namespace mcuprof::sources {

// What the recording header keeps of it (RecordedVariable), and where its value is in the
// halt's read.
struct WatchedVariable : RecordedVariable {
    // Its value adds one range to the halt's request, read back by value_at.
    void add_to(HaltRequest& request);
    std::optional<uint32_t> value_at(const HaltState& state) const;

private:
    size_t range_ = 0;
};

// The variable NAME of the image (a global or static at a fixed address, of an integer,
// boolean or enumeration type of 1, 2 or 4 bytes); throws mcuprof::Error naming the ELF and
// what is wrong.
WatchedVariable find_watched_variable(const core::Image& image, const std::string& name);

} // namespace mcuprof::sources
