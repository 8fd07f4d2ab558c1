#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <string>

#include "mcuprof/profile/call_graph.h"
#include "mcuprof/image/firmware.h"
#include "mcuprof/image/symbols.h"
#include "mcuprof/inputs/call_trace.h"
#include "../image/tool_output.h"

using namespace mcuprof;
using namespace mcuprof::sources;

namespace {

constexpr uint32_t main_fn = 0x08000100, f_fn = 0x08000200, g_fn = 0x08000300, handler_fn = 0x08000400;

struct Record {
    bool entry;
    uint32_t stamp;
    uint32_t site;
    uint32_t function;
};

// The three words seed 003's hooks write for a record.
void feed(CallTraceDecoder& decoder, std::initializer_list<Record> records)
{
    for (const Record& r : records) {
        decoder.word((r.entry ? 0x40000000u : 0x50000000u) | (r.stamp & 0x03FFFFFF));
        decoder.word(r.site);
        decoder.word(r.function);
    }
}

const core::CallGraphFunction& function(const CallTrace& t, uint32_t address)
{
    for (const auto& f : t.graph.functions)
        if (f.address == address)
            return f;
    FAIL("no function at " << address);
    throw 0;
}

const core::CallGraphEdge* edge(const CallTrace& t, uint32_t caller, uint32_t callee)
{
    for (const auto& e : t.graph.edges)
        if (t.graph.functions[e.caller].address == caller && t.graph.functions[e.callee].address == callee)
            return &e;
    return nullptr;
}

// main calls f twice, then g, which calls f; main never returns.
//   f 110..150 (40), f 160..200 (40), g 210..260 (50) with f 220..230 (10) inside.
CallTrace nested_trace()
{
    CallTraceDecoder d;
    feed(d, {{true, 100, 0x08000010, main_fn},
             {true, 110, 0x08000106, f_fn}, {false, 150, 0x08000106, f_fn},
             {true, 160, 0x0800010a, f_fn}, {false, 200, 0x0800010a, f_fn},
             {true, 210, 0x0800010e, g_fn},
             {true, 220, 0x08000306, f_fn}, {false, 230, 0x08000306, f_fn},
             {false, 260, 0x0800010e, g_fn}});
    return d.finish();
}

void put_stimulus(std::string& stream, uint32_t channel, uint32_t value)
{
    stream.push_back(char((channel << 3) | 3));   // ARMv7-M D4.2.8: port in bits 7:3, SS 0b11: 4 bytes
    for (int i = 0; i < 4; ++i)
        stream.push_back(char(value >> (8 * i)));
}

} // namespace

TEST_CASE("call trace: exact calls, self and inclusive cycles worked out by hand")
{
    const CallTrace t = nested_trace();
    CHECK(t.graph.event == "Cycles");
    CHECK(t.counts.entries == 5);
    CHECK(t.counts.exits == 4);
    CHECK(t.counts.open_at_end == 1);   // main, closed at the last record (260)
    const auto& m = function(t, main_fn);
    const auto& f = function(t, f_fn);
    const auto& g = function(t, g_fn);
    CHECK(*m.calls == 1);
    CHECK(*f.calls == 3);
    CHECK(*g.calls == 1);
    CHECK(m.inclusive_cost == 160);             // 100..260
    CHECK(m.self_cost == 160 - 40 - 40 - 50);
    CHECK(f.self_cost == 90);
    CHECK(f.inclusive_cost == 90);
    CHECK(g.inclusive_cost == 50);
    CHECK(g.self_cost == 40);
    REQUIRE(t.graph.edges.size() == 3);
    CHECK(*edge(t, main_fn, f_fn)->calls == 2);
    CHECK(edge(t, main_fn, f_fn)->inclusive_cost == 80);
    CHECK(*edge(t, main_fn, g_fn)->calls == 1);
    CHECK(edge(t, main_fn, g_fn)->inclusive_cost == 50);
    CHECK(*edge(t, g_fn, f_fn)->calls == 1);
    CHECK(edge(t, g_fn, f_fn)->inclusive_cost == 10);
    CHECK(edge(t, f_fn, g_fn) == nullptr);
    // The first call's site is kept for the edge.
    CHECK(t.call_sites[size_t(edge(t, main_fn, f_fn) - t.graph.edges.data())] == 0x08000106);
}

TEST_CASE("call trace: the 26-bit cycle counter going round is counted and the time stays right")
{
    CallTraceDecoder d;
    feed(d, {{true, 0x03FFFFF0, 0x08000010, main_fn},
             {true, 0x03FFFFFA, 0x08000106, f_fn},     // 10 later
             {false, 0x00000014, 0x08000106, f_fn},    // 0x1A later, across the wrap
             {false, 0x00000020, 0x08000010, main_fn}});
    const CallTrace t = d.finish();
    CHECK(t.counts.wraps == 1);
    CHECK(function(t, f_fn).inclusive_cost == 0x1A);
    CHECK(function(t, main_fn).inclusive_cost == 0x30);
    CHECK(function(t, main_fn).self_cost == 0x30 - 0x1A);
    CHECK(t.counts.open_at_end == 0);
}

TEST_CASE("call trace: an exception handler is a root, and its time is not the interrupted function's")
{
    CallTraceDecoder d;
    feed(d, {{true, 0, 0x08000010, main_fn},
             {true, 10, 0x08000106, f_fn},
             {true, 20, 0xFFFFFFF8, handler_fn},      // EXC_RETURN 0xFFFFFFF9, bit 0 cleared
             {true, 25, 0x08000406, g_fn}, {false, 35, 0x08000406, g_fn},
             {false, 50, 0xFFFFFFF8, handler_fn},
             {false, 70, 0x08000106, f_fn}});
    const CallTrace t = d.finish();
    CHECK(t.counts.exception_entries == 1);
    CHECK(function(t, handler_fn).inclusive_cost == 30);
    CHECK(function(t, handler_fn).self_cost == 20);
    CHECK(*function(t, handler_fn).calls == 1);
    CHECK(function(t, f_fn).inclusive_cost == 60 - 30);
    CHECK(function(t, f_fn).self_cost == 30);
    CHECK(function(t, main_fn).inclusive_cost == 70 - 30);
    CHECK(function(t, main_fn).self_cost == 10);
    CHECK(edge(t, f_fn, handler_fn) == nullptr);
    CHECK(edge(t, handler_fn, g_fn)->inclusive_cost == 10);
    CHECK(edge(t, main_fn, f_fn)->inclusive_cost == 30);
}

TEST_CASE("call trace: recursion counts the outermost activation once in the inclusive time")
{
    CallTraceDecoder d;
    feed(d, {{true, 0, 0x08000010, f_fn},
             {true, 10, 0x08000206, f_fn},
             {false, 30, 0x08000206, f_fn},
             {false, 40, 0x08000010, f_fn}});
    const CallTrace t = d.finish();
    const auto& f = function(t, f_fn);
    CHECK(*f.calls == 2);
    CHECK(f.inclusive_cost == 40);
    CHECK(f.self_cost == 20 + 20);
    CHECK(*edge(t, f_fn, f_fn)->calls == 1);
    CHECK(edge(t, f_fn, f_fn)->inclusive_cost == 20);
}

TEST_CASE("call trace: lost words, unmatched and missed exits are counted, never fatal")
{
    CallTraceDecoder d;
    d.word(0x08000200);                               // an address word with no header: stray
    feed(d, {{false, 5, 0x08000010, g_fn}});          // exit of a function never entered
    d.word(0x40000006);                               // entry header ...
    d.word(0x08000010);                               // ... cut after one address word
    feed(d, {{true, 10, 0x08000010, main_fn},
             {true, 20, 0x08000106, f_fn},
             {true, 30, 0x08000206, g_fn},            // g's exit is lost
             {false, 60, 0x08000106, f_fn}});         // f exits: g is closed at 60 too
    d.other_write();
    d.word(0x50000000);                               // a last header, cut
    const CallTrace t = d.finish();
    CHECK(t.counts.stray_words == 1);
    CHECK(t.counts.broken_records == 2);
    CHECK(t.counts.unmatched_exits == 1);
    CHECK(t.counts.missed_exits == 1);
    CHECK(t.counts.other_writes == 1);
    CHECK(t.counts.open_at_end == 1);
    CHECK(function(t, g_fn).inclusive_cost == 30);
    CHECK(function(t, f_fn).inclusive_cost == 40);
    CHECK(function(t, f_fn).self_cost == 10);
    CHECK(t.notes.size() == 5);
}

TEST_CASE("call trace: read from an ITM stream, only 4-byte writes on the chosen port")
{
    std::string stream = std::string(5, '\0') + '\x80';   // sync
    const uint32_t words[] = {0x40000064, 0x08000010, main_fn, 0x4000006e, 0x08000106, f_fn,
                              0x50000096, 0x08000106, f_fn};
    for (uint32_t w : words) {
        put_stimulus(stream, 1, w);
        stream += std::string("\x17\x10\x02\x00\x08", 5);   // a PC sample between: ignored
        put_stimulus(stream, 2, 0x4000FFFF);             // another port: ignored
    }
    stream += "\x09\x41";                                // a 1-byte write to port 1: counted
    const auto source = memory_byte_source(stream, "memory", 7);
    CallTrace t = read_call_trace(*source, {}, 1);
    CHECK(t.counts.words == 9);
    CHECK(t.counts.other_writes == 1);
    CHECK(function(t, f_fn).inclusive_cost == 40);
    CHECK(function(t, main_fn).inclusive_cost == 50);
    CHECK(t.graph.origin.find("2 entries, 1 exits, 0 counter wraps; packets: ") != std::string::npos);

    const auto symbols = core::SymbolTable::from({{main_fn, 0x100, "main", {}, {}, {}}, {f_fn, 0x40, "f", {}, {}, {}}});
    name_call_trace(t, symbols, nullptr);
    CHECK(function(t, main_fn).name == "main");
    CHECK(function(t, f_fn).name == "f");
}

TEST_CASE("call trace: same-named statics are two boxes of the dot graph, as graphviz draws them")
{
    // The two static checksum() of cxx_o2_m4 (unit_a.cpp, unit_b.cpp) as an instrumented trace
    // would find them: by address. Named from the image, each keeps its file in the label.
    const core::Image image = core::Image::open(std::string(FIRMWARE_DIR) + "/cxx_o2_m4.elf");
    CallTrace t;
    for (const core::Function& f : image.symbols().functions())
        if (f.symbol == "_ZL8checksumPKhi")
            t.graph.functions.push_back({"", "", 0, f.start, 10, 10, 1});
    REQUIRE(t.graph.functions.size() == 2);
    name_call_trace(t, image.symbols(), &image.locator());
    const std::string dot_file = "call_trace_test_namesakes.dot";
    {
        std::ofstream out(dot_file);
        core::write_dot(t.graph, out);
    }
    const std::string svg = tool_output("dot -Tsvg " + dot_file);
    std::remove(dot_file.c_str());
    CHECK(svg.find(">checksum(unsigned char const*, int) (unit_a.cpp)</text>") != std::string::npos);
    CHECK(svg.find(">checksum(unsigned char const*, int) (unit_b.cpp)</text>") != std::string::npos);
}
