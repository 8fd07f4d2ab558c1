#include "mcuprof/sources/onchip_reader.h"

#include <cstdio>
#include <ostream>

#include "mcuprof/core/symbols.h"
#include "mcuprof/sources/error.h"
#include "mcuprof/transport/rsp_client.h"
#include "mcuprof/transport/tcp_connection.h"

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

} // namespace

Dump read_onchip(transport::RspClient& gdb, const core::SymbolTable& symbols, const std::string& elf_path)
{
    const auto taken = symbols.find_object("prof_taken");
    if (!taken)
        throw Error(elf_path, "symbols", "no prof_taken: the firmware has no reference on-chip sampler");
    Dump dump;
    dump.path = "on-chip memory (" + gdb.peer() + ")";
    DumpChunk chunk;
    chunk.ended = true;
    chunk.announced = read_word(gdb, taken->address);

    if (const auto ring = symbols.find_object("prof_ring")) {
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
        throw Error(elf_path, "symbols", "neither prof_ring nor prof_bins: unknown sampler build");
    }
    dump.chunks.push_back(std::move(chunk));
    return dump;
}

Dump read_onchip_over_gdb(const transport::Endpoint& endpoint, const core::SymbolTable& symbols,
                          const std::string& elf_path, std::optional<uint32_t> stop_at,
                          std::chrono::steady_clock::duration timeout)
{
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
    Dump dump = read_onchip(gdb, symbols, elf_path);
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
        if (c.kind == DumpChunk::Kind::raw) {
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
