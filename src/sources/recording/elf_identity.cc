#include "mcuprof/sources/elf_identity.h"

#include <cstdio>

#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/SHA256.h>

#include "mcuprof/sources/error.h"

namespace mcuprof::sources {
namespace {

std::string hex(llvm::ArrayRef<uint8_t> bytes)
{
    std::string text;
    char digits[3];
    for (uint8_t byte : bytes) {
        std::snprintf(digits, sizeof digits, "%02x", byte);
        text += digits;
    }
    return text;
}

uint32_t word_at(llvm::ArrayRef<uint8_t> bytes, size_t at)
{
    return uint32_t(bytes[at]) | uint32_t(bytes[at + 1]) << 8 | uint32_t(bytes[at + 2]) << 16 |
           uint32_t(bytes[at + 3]) << 24;
}

// The descriptor of the NT_GNU_BUILD_ID note (type 3, owner "GNU") in a SHT_NOTE section:
// notes are namesz, descsz, type, then the name and the descriptor, each padded to 4 bytes
// (System V ABI, "Note Section").
std::optional<std::string> build_id_in(llvm::ArrayRef<uint8_t> notes)
{
    constexpr uint32_t nt_gnu_build_id = 3;
    auto padded = [](uint64_t n) { return (n + 3) & ~uint64_t(3); };
    for (size_t at = 0; at + 12 <= notes.size();) {
        const uint32_t name_size = word_at(notes, at), desc_size = word_at(notes, at + 4);
        const uint32_t type = word_at(notes, at + 8);
        const uint64_t desc_at = at + 12 + padded(name_size), end = desc_at + padded(desc_size);
        if (end > notes.size())
            return std::nullopt;
        const llvm::ArrayRef<uint8_t> name = notes.slice(at + 12, name_size);
        if (type == nt_gnu_build_id && name_size == 4 && name[0] == 'G' && name[1] == 'N' && name[2] == 'U' &&
            desc_size > 0)
            return hex(notes.slice(desc_at, desc_size));
        at = end;
    }
    return std::nullopt;
}

std::string message_of(llvm::Error error)
{
    return llvm::toString(std::move(error));
}

} // namespace

std::optional<ElfIdentity> ElfIdentity::from_json(const nlohmann::json& j)
{
    if (!j.is_object() || !j.contains("kind") || !j.contains("value") || !j["kind"].is_string() ||
        !j["value"].is_string())
        return std::nullopt;
    return ElfIdentity{j["kind"].get<std::string>(), j["value"].get<std::string>()};
}

ElfIdentity elf_identity(const std::string& elf_path)
{
    auto binary = llvm::object::ObjectFile::createObjectFile(elf_path);
    if (!binary)
        throw Error(elf_path, "", "cannot read ELF: " + message_of(binary.takeError()));
    const auto* elf = llvm::dyn_cast<llvm::object::ELF32LEObjectFile>(binary->getBinary());
    if (elf == nullptr)
        throw Error(elf_path, "ELF header", "not a 32-bit little-endian ELF (Cortex-M firmware is ELF32 ARM)");
    const auto& file = elf->getELFFile();
    if (file.getHeader().e_machine != llvm::ELF::EM_ARM)
        throw Error(elf_path, "ELF header",
                    "ELF machine is " + std::to_string(file.getHeader().e_machine) + ", not ARM (40)");
    auto sections = file.sections();
    if (!sections)
        throw Error(elf_path, "section headers", message_of(sections.takeError()));

    llvm::SHA256 digest;
    for (const auto& section : *sections) {
        const bool note = section.sh_type == llvm::ELF::SHT_NOTE;
        const bool loaded = (section.sh_flags & llvm::ELF::SHF_ALLOC) != 0 && section.sh_type != llvm::ELF::SHT_NOBITS;
        if (!note && !loaded)
            continue;   // .bss has no bytes in the file; debug sections are not the firmware
        auto contents = file.getSectionContents(section);
        if (!contents)
            throw Error(elf_path, "section headers", message_of(contents.takeError()));
        if (note)
            if (auto id = build_id_in(*contents))
                return {"build-id", *id};
        if (!loaded)
            continue;
        const uint8_t place[8] = {uint8_t(section.sh_addr),       uint8_t(section.sh_addr >> 8),
                                  uint8_t(section.sh_addr >> 16), uint8_t(section.sh_addr >> 24),
                                  uint8_t(section.sh_size),       uint8_t(section.sh_size >> 8),
                                  uint8_t(section.sh_size >> 16), uint8_t(section.sh_size >> 24)};
        digest.update(llvm::ArrayRef<uint8_t>(place));
        digest.update(*contents);
    }
    const auto sum = digest.final();   // std::array<uint8_t, 32> since LLVM 15
    return {"sha256", hex(llvm::ArrayRef<uint8_t>(sum.data(), sum.size()))};
}

} // namespace mcuprof::sources
