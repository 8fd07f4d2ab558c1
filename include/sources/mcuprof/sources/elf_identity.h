#pragma once
// Which firmware image an ELF is, so that a recording can tell whether the ELF it is
// reported with is the one it sampled: the GNU build-id note where the linker wrote one
// (ld --build-id), else a SHA-256 of what is loaded into the target (the address, size and
// bytes of every SHF_ALLOC section with contents). Debug information and symbols take no
// part: an image rebuilt from the same sources, or stripped, is the same firmware.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace mcuprof::sources {

struct ElfIdentity {
    std::string kind;    // "build-id" or "sha256" (of the loadable sections)
    std::string value;   // lower-case hex

    bool operator==(const ElfIdentity& other) const { return kind == other.kind && value == other.value; }
    std::string text() const { return kind + " " + value; }
    nlohmann::json to_json() const { return {{"kind", kind}, {"value", value}}; }
    // Null or malformed (a recording that predates the identity): nullopt.
    static std::optional<ElfIdentity> from_json(const nlohmann::json& j);
};

// Throws sources::Error naming the file: unreadable, not ELF32 little-endian, not EM_ARM.
ElfIdentity elf_identity(const std::string& elf_path);

} // namespace mcuprof::sources
