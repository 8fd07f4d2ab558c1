#include "mcuprof/sampler/onchip_reader.h"

#include <cstdio>
#include <ostream>

#include "mcuprof/image/data_layout.h"
#include "mcuprof/image/image_set.h"
#include "mcuprof/image/symbols.h"
#include "mcuprof/inputs/error.h"
#include "mcuprof/link/rsp_client.h"
#include "mcuprof/link/tcp_connection.h"

namespace mcuprof::sources {
namespace {

std::vector<uint32_t> words(const std::string& bytes, size_t width)
{
    std::vector<uint32_t> out;
    for (size_t i = 0; i + width <= bytes.size(); i += width) {
        uint32_t v = 0;
        for (size_t k = 0; k < width; ++k)
            v |= uint32_t(uint8_t(bytes[i + k])) << (8 * k);
        out.push_back(v);
    }
    return out;
}

uint32_t read_word(transport::RspClient& gdb, uint32_t address)
{
    return words(gdb.read_memory(address, 4), 4).at(0);
}

// The top-N table (PROF_TOPN builds, firmware-ref/src/sampler.h), found by its layout in
// the ELF's DWARF rather than by the firmware's header: members by name, the entry count from
// the array's length, so a table of another length or member order reads the same.
class TableReader {
public:
    explicit TableReader(const core::Image& image) : elf_path_(image.path()), layout_(image.data_layout()) {}

    void read(transport::RspClient& gdb, DumpChunk& chunk) const
    {
        const auto table = layout_.variable("prof_table");
        if (!table || !table->type || table->type->kind != core::TypeLayout::Kind::structure)
            fail("prof_table is not a structure in the DWARF");
        const core::TypeLayout& type = *table->type;
        const core::TypeLayout::Member& entries = member(type, "entries");
        if (entries.type->kind != core::TypeLayout::Kind::array || !entries.type->element || entries.type->count == 0)
            fail("prof_table.entries is not an array of known length");
        const core::TypeLayout& entry = *entries.type->element;
        const auto& block = member(entry, "block");
        const auto& hits = member(entry, "hits");
        const auto& permille = member(entry, "permille");

        const std::string bytes = gdb.read_memory(table->address, uint32_t(type.size));
        chunk.kind = DumpChunk::Kind::table;
        chunk.shift = uint32_t(value(bytes, 0, member(type, "shift")));
        chunk.total = value(bytes, 0, member(type, "total"));
        chunk.ignored = value(bytes, 0, member(type, "ignored"));
        if (chunk.shift < 1 || chunk.shift > 20)
            throw Error(elf_path_, "prof_table.shift", "reads " + std::to_string(chunk.shift) +
                                                           " from the target, outside 1..20: is this the ELF that runs?");
        for (uint64_t i = 0; i < entries.type->count; ++i) {
            const uint64_t at = entries.offset + i * entry.size;
            chunk.entries.push_back({uint32_t(value(bytes, at, block)), value(bytes, at, hits), value(bytes, at, permille)});
        }
        chunk.announced_entries = chunk.entries.size();
    }

private:
    [[noreturn]] void fail(const std::string& problem) const { throw Error(elf_path_, "DWARF", problem); }

    const core::TypeLayout::Member& member(const core::TypeLayout& type, const char* name) const
    {
        const auto* m = type.member(name);
        if (m == nullptr || !m->type)
            fail(type.name + " has no member '" + name + "'");
        return *m;
    }

    // A little-endian unsigned member at `base` + its offset in the bytes read.
    uint64_t value(const std::string& bytes, uint64_t base, const core::TypeLayout::Member& m) const
    {
        const uint64_t size = m.type->size;
        if (size == 0 || size > 8 || base + m.offset + size > bytes.size())
            fail("member '" + m.name + "' (" + std::to_string(size) + " bytes at " + std::to_string(base + m.offset) +
                 ") is not an integer inside prof_table");
        uint64_t v = 0;
        for (uint64_t k = 0; k < size; ++k)
            v |= uint64_t(uint8_t(bytes[base + m.offset + k])) << (8 * k);
        return v;
    }

    std::string elf_path_;
    const core::DataLayout& layout_;
};

} // namespace

Dump read_onchip(transport::RspClient& gdb, const core::ImageSet& images)
{
    const core::SymbolTable& symbols = images.symbols();
    const std::string& elf_path = images.main().path();
    const auto taken = symbols.find_object("prof_taken");
    if (!taken)
        throw Error(elf_path, "symbols", "no prof_taken: the firmware has no reference on-chip sampler");
    Dump dump;
    dump.path = "on-chip memory (" + gdb.peer() + ")";
    DumpChunk chunk;
    chunk.ended = true;
    chunk.announced = read_word(gdb, taken->address);

    if (symbols.find_object("prof_table")) {
        TableReader(images.main()).read(gdb, chunk);
    } else if (const auto ring = symbols.find_object("prof_ring")) {
        // The ring holds the last `length` samples; the oldest is at taken % length once it
        // has wrapped (the sampler writes sample k at k % length).
        const size_t length = ring->size / 4;
        if (length == 0)
            throw Error(elf_path, "symbols", "prof_ring has no size");
        const std::vector<uint32_t> all = words(gdb.read_memory(ring->address, ring->size), 4);
        std::vector<uint32_t> tags;
        if (const auto tag_ring = symbols.find_object("prof_tags"))
            tags = words(gdb.read_memory(tag_ring->address, tag_ring->size), 4);
        const uint64_t n = chunk.announced;
        const size_t held = size_t(std::min<uint64_t>(n, length));
        for (uint64_t k = n - held; k < n; ++k) {
            chunk.pcs.push_back(all[k % length]);
            if (!tags.empty())
                chunk.tags.push_back(tags[k % length]);
        }
        chunk.kind = DumpChunk::Kind::raw;
    } else if (const auto bins = symbols.find_object("prof_bins")) {
        const auto shift = symbols.find_object("prof_shift");
        const auto base = symbols.find_object("__text_start");
        const auto outside = symbols.find_object("prof_outside");
        if (!shift || !base || !outside)
            throw Error(elf_path, "symbols", "prof_bins without prof_shift, prof_outside or __text_start");
        chunk.kind = DumpChunk::Kind::histogram;
        chunk.base = base->address;
        chunk.shift = read_word(gdb, shift->address);
        chunk.outside = read_word(gdb, outside->address);
        chunk.counts = words(gdb.read_memory(bins->address, bins->size), 2);
    } else {
        throw Error(elf_path, "symbols", "none of prof_ring, prof_bins, prof_table: unknown sampler build");
    }
    dump.chunks.push_back(std::move(chunk));
    return dump;
}

Dump read_onchip_over_gdb(const transport::LinkAddress& endpoint, const core::ImageSet& images,
                          std::optional<uint32_t> stop_at, std::chrono::steady_clock::duration timeout)
{
    const std::string& elf_path = images.main().path();
    transport::RspClient::Options options;
    transport::RspClient gdb(endpoint, options);
    gdb.handshake();   // the target is halted now
    if (stop_at) {
        gdb.insert_breakpoint(*stop_at);
        gdb.resume();
        const transport::StopReply stop = gdb.wait_stop(timeout);
        if (stop.kind != transport::StopReply::Kind::signal)
            throw Error(elf_path, "", "the target exited before reaching the stop address");
        gdb.remove_breakpoint(*stop_at);
    }
    Dump dump = read_onchip(gdb, images);
    gdb.detach();
    return dump;
}

void write_dump(const Dump& dump, std::ostream& out)
{
    char word[16];
    for (const auto& [address, name] : dump.tasks) {
        std::snprintf(word, sizeof word, "%08x", address);
        out << "task " << word << ' ' << name << '\n';
    }
    for (const DumpChunk& c : dump.chunks) {
        if (c.span)
            out << "span=" << *c.span << '\n';
        auto lines = [&](char kind, const std::vector<uint32_t>& values, size_t per_line, const char* format) {
            for (size_t i = 0; i < values.size(); ++i) {
                if (i % per_line == 0)
                    out << (i == 0 ? "" : "\n") << kind;
                std::snprintf(word, sizeof word, format, values[i]);
                out << ' ' << word;
            }
            if (!values.empty())
                out << '\n';
        };
        if (c.kind == DumpChunk::Kind::table) {
            out << "prof topn n=" << c.announced << " shift=" << c.shift << " total=" << c.total
                << " ignored=" << c.ignored << " entries=" << c.entries.size() << '\n';
            for (const TableEntry& e : c.entries) {
                std::snprintf(word, sizeof word, "%08x", e.block);
                out << "t " << word << ' ' << e.hits << ' ' << e.permille << '\n';
            }
        } else if (c.kind == DumpChunk::Kind::raw) {
            out << "prof raw n=" << c.announced << '\n';
            lines('p', c.pcs, 8, "%08x");
            lines('g', c.tags, 8, "%08x");
        } else {
            std::snprintf(word, sizeof word, "%08x", c.base);
            out << "prof hist base=0x" << word << " shift=" << c.shift << " n=" << c.announced
                << " out=" << c.outside << '\n';
            lines('h', c.counts, 16, "%04x");
        }
        out << "end\n";
    }
}

} // namespace mcuprof::sources
