#pragma once
// --by var:NAME: a global variable read at every halt, in the same batched read as the
// registers and the running task, so that samples can be grouped by the firmware's state or
// mode with no change to the firmware. Its place, size and the names of its values come
// from the ELF's DWARF, checked before the link is touched.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "mcuprof/image/firmware.h"
#include "mcuprof/sources/halting_target.h"

namespace mcuprof::sources {

struct WatchedVariable {
    std::string name;
    uint32_t address = 0;
    uint32_t size = 0;          // 1, 2 or 4 bytes
    bool is_signed = false;
    std::map<uint32_t, std::string> names;   // an enumeration's values (their bits) -> enumerator

    // The value's name: its enumerator, else the number (signed where the type is).
    std::string name_of(uint32_t bits) const;
    // The recording header's "variable"; from_json gives nothing for a field that is not one.
    nlohmann::json to_json() const;
    static std::optional<WatchedVariable> from_json(const nlohmann::json& j);

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
