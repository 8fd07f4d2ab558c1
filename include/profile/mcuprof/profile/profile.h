#pragma once
// The attribution core: samples from any source in, a profile (rows with their
// statistics and warnings) out. Every source and every report format meets here.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcuprof/profile/lockstep.h"
#include "mcuprof/profile/samples.h"
#include "mcuprof/profile/stats.h"

namespace mcuprof::core {

class SymbolTable;
class SourceLocator;

// stack: one row per distinct call chain (the callers' functions, root first); core: one row
// per core of a multi-core chip.
// value: by the value of a global variable read at each halt (--by var:NAME).
// exception: Thread mode and each exception by number and handler (IPSR at each sample).
enum class Grouping { function, line, address, task, stack, core, value, exception };

// The row of samples that caught the core asleep (WFI, WFE; SWO's sleep packets).
inline constexpr const char* sleep_row_name = "(sleep)";

// "function", ..., "stack", or "var:NAME" (value; the name is variable_of_grouping's).
std::optional<Grouping> parse_grouping(std::string_view text);
// NAME of "var:NAME"; empty for any other grouping.
std::string_view variable_of_grouping(std::string_view text);
std::string_view name_of(Grouping grouping);

struct Row {
    std::string name;
    std::string symbol;                  // function rows: the function's symbol (mangled), when known
    double samples = 0;
    Share share;
    std::optional<uint32_t> address;     // function start, the address, or bucket start
    uint32_t size = 0;                   // function or bucket size in bytes
    std::string function;                // line and address rows: the enclosing function
    std::string location;                // file:line (function rows: where the function starts)
    std::vector<std::string> inlined_into;   // address rows: callers the code is inlined into
    uint64_t distinct_addresses = 0;     // distinct sampled addresses in this row
    // Function rows: samples with this function anywhere on the stack (each sample counted
    // once, however often the function recurs). Equals `samples` for flat profiles.
    double inclusive_samples = 0;
    Share inclusive;
};

// One frame of a stack row. Inlined functions are frames of their own, with the
// address of the code they were inlined into.
struct StackFrame {
    std::string function;
    std::string file;                    // source file, empty when unknown
    uint32_t line = 0;                   // 0 when unknown
    uint32_t address = 0;                // the sampled PC (leaf) or the call site (callers)
    bool inlined = false;                // inlined into the frame before it, at the same address
    std::string symbol;                  // the function as the ELF or DWARF spells it (mangled); may be empty
};

// Samples that share one call chain, root (outermost caller) first, leaf last.
struct StackRow {
    std::vector<StackFrame> frames;
    double samples = 0;
    bool truncated = false;              // the unwinder could not reach the outermost frame
    std::string core;                    // a multi-core chip's core, as the report names it; else empty
};

// The root the stack formats (collapsed, speedscope, callgrind, dot, the HTML flame graph)
// give a truncated stack: it stands for the callers the unwinder could not reach.
inline constexpr const char* truncated_frame_name = "[truncated]";
// The root of a complete Non-secure chain that the Secure state called (BLXNS; the unwinder's
// UnwindStop::secure_caller): the Secure callers are the Secure image's to show.
inline constexpr const char* secure_frame_name = "[Secure state]";
// A stack's frames as the stack formats show them: a multi-core chip's stack under its core
// (a root frame named as the report names the core), a truncated one under `[truncated]`.
std::vector<StackFrame> shown_frames(const StackRow& stack);

// How many unwound chains ended before their outermost frame, and why. Their outer callers
// are missing, so every inclusive share is a lower bound; beyond 1 % of the chains the
// reports say so.
struct Truncation {
    double samples = 0;                  // samples whose chain was truncated
    double unwound = 0;                  // samples with a chain (truncated or not)
    std::vector<std::pair<std::string, double>> by_reason;   // by samples, descending
    double percent() const { return unwound > 0 ? 100.0 * samples / unwound : 0.0; }
    bool inclusive_lower_bounds() const { return percent() > 1.0; }
};

// How the standard errors were computed. bursts == 0: binomial, each sample independent
// (or none at all, for a census). Else from the spread between that many bursts of
// back-to-back reads (SampleSet::bursts); largest_ratio is the largest of a row's standard
// error over the binomial one (the design effect's root), which says how much the reads
// of one burst repeat each other. lower_bounds: binomial figures for samples that were
// back-to-back DWT_PCSR reads with no bursts to take errors from (OpenOCD's own `profile`
// in a gmon.out, a recording from before burst marks, or rows not made from the reads'
// addresses): correlated reads, so the figures are too small.
// batches: the clusters are batches of consecutive wall-clock halts (SampleSet::
// wall_clock_halts), not bursts of reads; bursts then counts the batches.
struct ErrorModel {
    size_t bursts = 0;
    bool batches = false;
    double largest_ratio = 1;
    bool lower_bounds = false;
};

// One core's own profile (a multi-core sample set): its rows, by the profile's grouping, with
// shares of its own samples.
struct CoreProfile {
    uint32_t core = 0;
    std::string name;
    double total = 0;
    std::vector<Row> rows;               // by samples, descending
    ErrorModel errors;                   // how its own rows' standard errors were computed
};

// How busy the core was, from samples that measure time: 1 minus the share of samples asleep
// or in the RTOS's idle task, with its standard error (stats.h).
struct CpuLoad {
    double sleep_samples = 0;            // caught asleep
    double idle_task_samples = 0;        // awake in the RTOS idle task (tagged samples)
    Share busy;                          // the load, percent
    Share sleep;                         // the sleep share alone
};

// SampleSet::core_stops in figures: the spread's bounds over the halts that measured it.
struct CoreStopFigures {
    std::string how;
    bool simultaneous = false;
    uint64_t halts = 0;                   // halts whose spread was measured
    Percentiles at_least_us, at_most_us;  // of the lower and of the upper bounds
};

struct Profile {
    std::string origin;
    Grouping by = Grouping::function;
    std::string variable;                // by value: the variable's name
    bool exact = false;                  // a census: "samples" are executed instructions
    double total = 0;
    std::optional<uint64_t> run_instructions;   // the whole run's instructions, when known (SampleSet)
    double unattributed = 0;             // samples in no function
    uint64_t distinct_addresses = 0;
    std::optional<LockstepFinding> lockstep;
    std::vector<Row> rows;               // by samples, descending
    // Every sample's call chain, aggregated. Flat sources (no unwinding) give one-frame
    // stacks (plus the inline chain of the address), so every stack format works for them.
    std::vector<StackRow> stacks;        // by samples, descending
    bool unwound = false;                // stacks come from unwinding, not from flat samples
    Truncation truncation;               // of the unwound chains (all zero for flat samples)
    std::vector<Warning> warnings;
    std::optional<SamplerFigures> sampler;   // copied from the samples: rate, duty, halt latency
    // Samples that measure time: the CPU load. Samples of executed instructions cannot see the
    // core asleep: no load, and sleep_not_counted says so (a census, instruction-count pacing).
    std::optional<CpuLoad> load;
    bool sleep_not_counted = false;
    // --by exception with stacks: for each exception row, what its samples preempted (the
    // function, or the exception, that ran when it was taken), by samples, descending.
    std::map<std::string, std::vector<std::pair<std::string, double>>> preempted;
    // --by exception: each sampled exception number's row name (the Firefox format's tracks).
    std::map<uint32_t, std::string> exception_rows;
    ErrorModel errors;                   // how the standard errors were computed
    // A multi-core sample set: each core's profile, in core order (empty for one core).
    std::vector<CoreProfile> cores;
    std::optional<CoreStopFigures> core_stops;   // how the halts stopped the cores (SampleSet::core_stops)
};

// What a profile's rows are, for its reports: name_of(by), or by value "var:NAME".
std::string grouping_name(const Profile& profile);

struct AttributionOptions {
    Grouping by = Grouping::function;
    bool inline_frames = false;          // name functions by the innermost inlined frame
    double unattributed_warning = 0.05;  // warn above this share of samples in no function
    // Fill Profile::stacks for flat samples too (one-frame stacks with inline chains), for
    // the stack formats. Unwound samples always get their stacks.
    bool stacks = false;
    // --by exception: the image's vector table, exception number -> handler address (Thumb bit
    // clear; ARMv7-M ARM B1.5.3): the rows' handler names, and with stacks the handler's frame,
    // below which the chain holds what the exception preempted.
    std::map<uint32_t, uint32_t> vector_table;
};

// The frames of one code address, outermost first: its DWARF inline chain when the locator
// has one, else the symbol table's function (or "?"), as the profile's stacks name them.
std::vector<StackFrame> frames_at(uint32_t address, const SymbolTable& symbols, SourceLocator* locator);

// The handlers of a vector table (Image::vector_table's words; ARMv7-M ARM B1.5.3: word N
// is exception N's handler with the Thumb bit set, word 0 the initial main stack pointer), by
// exception number, Thumb bit clear; entries that are 0 left out.
std::map<uint32_t, uint32_t> vector_handlers(const std::vector<uint32_t>& vector_table);

// The row of exception `number` (IPSR): "Thread mode", "SysTick (15) SysTick_Handler",
// "IRQ 28 (44) TIM2_IRQHandler", the handler's name from the vector table when it has one.
std::string exception_row_name(uint32_t number, const std::map<uint32_t, uint32_t>& vector_table,
                               const SymbolTable& symbols);

// locator may be null when neither lines nor inline frames are wanted (it is then not
// needed: function and task rows come from the symbol table alone).
Profile attribute(const SampleSet& samples, const SymbolTable& symbols, SourceLocator* locator,
                  const AttributionOptions& options);

} // namespace mcuprof::core
