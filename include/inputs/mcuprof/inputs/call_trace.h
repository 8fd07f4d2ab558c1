#pragma once
// Instrumented call graphs from an ITM stream (firmware-ref/src/calltrace.c): firmware built with
// -finstrument-functions whose __cyg_profile_func_enter/exit hooks write one record per
// function entry and exit to one ITM stimulus port, as three 4-byte writes:
//
//   word 0   0x4 (entry) or 0x5 (exit) in bits 31:28, CYCCNT bits 25:0 (DWT_CYCCNT & 0x03FFFFFF)
//   word 1   the call site (the return address in the caller), bit 0 cleared
//   word 2   the function's address, bit 0 cleared
//
// The records become a call graph with exact call counts and inclusive and self cycles,
// through a shadow stack of the activations.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <map>
#include <utility>
#include <vector>

#include "mcuprof/profile/call_graph.h"
#include "mcuprof/inputs/swo_reader.h"

namespace mcuprof::core {
class SymbolTable;
class SourceLocator;
}

namespace mcuprof::sources {

// calltrace.c's TRACE_CHANNEL.
inline constexpr uint32_t default_call_trace_channel = 1;

struct CallTraceCounts {
    uint64_t words = 0;             // 4-byte writes on the channel
    uint64_t other_writes = 0;      // 1- and 2-byte writes on the channel: never part of a record
    uint64_t entries = 0;
    uint64_t exits = 0;
    uint64_t exception_entries = 0; // entries whose call site is an EXC_RETURN value: handlers
    uint64_t stray_words = 0;       // address words with no record header before them (lost writes)
    uint64_t broken_records = 0;    // a header not followed by its two address words (lost writes)
    uint64_t unmatched_exits = 0;   // exits of a function not on the shadow stack (entered before
                                    // the capture began, or its entry was lost)
    uint64_t missed_exits = 0;      // activations closed because a function below them exited
    uint64_t open_at_end = 0;       // activations still open at the end, closed at the last record
    uint64_t wraps = 0;             // the 26-bit cycle counter went round
};

// The decoded trace: functions by address (names, files and lines empty until named),
// and for each edge the call site the first call of it came from.
struct CallTrace {
    core::CallGraph graph;
    std::vector<uint32_t> call_sites;   // parallel to graph.edges
    CallTraceCounts counts;
    std::vector<std::string> notes;     // what went wrong, for the report's warnings
};

// Pure: words in, call graph out. Memory grows with the distinct functions and call pairs
// and the stack depth, not with the stream's length.
class CallTraceDecoder {
public:
    CallTraceDecoder();
    // One 4-byte write to the trace's stimulus port, in stream order.
    void word(uint32_t value);
    // A 1- or 2-byte write to the port: not part of the protocol; counted.
    void other_write() { ++trace_.counts.other_writes; }
    // The stream ended: activations still open are closed at the last record's time.
    CallTrace finish();

private:
    struct Frame {
        size_t function;
        std::optional<size_t> edge;     // none for roots and exception entries
        uint64_t entered;
        uint64_t exception_time;        // exception_time_ at entry
        uint64_t callees = 0;           // inclusive cycles of the calls made from here
        bool exception;
    };
    void record(bool entry, uint32_t stamp, uint32_t call_site, uint32_t function);
    void enter(uint32_t call_site, uint32_t function);
    void exit(uint32_t function);
    void close_top();
    size_t function_index(uint32_t address);

    CallTrace trace_;
    uint32_t pending_[3] = {};
    size_t pending_words_ = 0;
    bool timing_ = false;               // a record was seen: last_stamp_ holds
    uint32_t last_stamp_ = 0;
    uint64_t now_ = 0;                  // cycles since the first record
    uint64_t exception_time_ = 0;       // cycles spent in exception handlers so far
    std::vector<Frame> stack_;
    std::vector<uint32_t> active_;      // per function: activations on the stack (recursion)
    std::unordered_map<uint32_t, size_t> functions_;
    std::map<std::pair<size_t, size_t>, size_t> edges_;
};

// Names the functions (symbol table; file and first line from DWARF) and the call sites
// (the line of the call instruction). locator may be null: no files or lines then.
void name_call_trace(CallTrace& trace, const core::SymbolTable& symbols, core::SourceLocator* locator);

// Reads an SWO stream (file, "-", "tcp:HOST:PORT") and decodes the 4-byte writes to the
// channel. options.max_samples is ignored (there are no samples).
CallTrace read_call_trace(ByteSource& source, const SwoOptions& options, uint32_t channel);

} // namespace mcuprof::sources
