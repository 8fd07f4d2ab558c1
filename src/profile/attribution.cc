#include "mcuprof/profile/profile.h"

#include "mcuprof/profile/address_chains.h"
#include "mcuprof/profile/cores.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_map>

#include "mcuprof/image/error.h"
#include "mcuprof/image/source_locator.h"
#include "mcuprof/image/symbols.h"
#include "mcuprof/image/unwind/thumb_code.h"
#include "mcuprof/hex.h"
#include "key_counter.h"
#include "mcuprof/profile/text_table.h"

namespace mcuprof::core {
namespace {

constexpr const char* unknown_function = "?";
constexpr const char* outside_histogram = "(outside histogram)";

// The RTOS's idle task, by the name its kernel gives it: FreeRTOS's configIDLE_TASK_NAME
// ("IDLE" by default), Zephyr's idle thread ("idle", "idle 00" per CPU). Its time is idle time.
bool is_idle_task(const std::string& name)
{
    return name == "IDLE" || name.rfind("idle", 0) == 0;
}

// One weighted address: a raw sample aggregated with its equals, a census count, or
// a share of a histogram bucket.
struct Weighted {
    uint32_t pc = 0;
    uint32_t tag = 0;
    bool tagged = false;
    double weight = 0;
    const Bucket* bucket = nullptr;   // set when the whole bucket is one row (by address)
    bool found_asleep = false;        // raw samples whose halt found the core asleep (DHCSR.S_SLEEP)
    bool histogram = false;           // a histogram bucket's count, or a share of it
};

// The key of a raw sample in aggregate(): its task tag and its address.
uint64_t sample_key(uint32_t tag, uint32_t pc) { return uint64_t(tag) << 32 | pc; }

// Whether a sample at `pc` caught the core asleep: an instant of time just past a WFI or WFE
// (a halt's PC: the wait's return address), or for DWT_PCSR reads the wait itself as well
// (the instruction last executed). Samples of executed instructions never sleep.
bool caught_asleep(const SampleSet& samples, const SymbolTable& symbols, uint32_t pc)
{
    return samples.measures_time && pc_shows_sleep(symbols, pc, samples.reads_pcsr);
}

// Whether sample i's halt found the core asleep by the debug registers (SampleSet::found_asleep).
class FoundAsleep {
public:
    explicit FoundAsleep(const SampleSet& samples) : flags_(samples.found_asleep.empty() ? 0 : samples.pcs.size())
    {
        for (size_t i : samples.found_asleep)
            if (i < flags_.size())
                flags_[i] = true;
    }
    bool operator()(size_t i) const { return i < flags_.size() && flags_[i]; }

private:
    std::vector<bool> flags_;
};

// Which row each raw sample went to, by its key (sample_key): the samples found asleep apart,
// since their row is not their address's.
struct RowsOfSamples {
    std::unordered_map<uint64_t, size_t> awake, asleep;
    size_t at(uint32_t tag, uint32_t pc, bool found_asleep) const
    {
        return (found_asleep ? asleep : awake).at(sample_key(tag, pc));
    }
};

// What a raw sample's key holds beside its PC: the task tag, by value the variable's value, or by
// exception the exception number in its place.
const std::vector<uint32_t>& key_tags(const SampleSet& samples, Grouping by)
{
    if (by == Grouping::value)
        return samples.values;
    return by == Grouping::exception ? samples.exceptions : samples.tags;
}

std::vector<Weighted> aggregate(const SampleSet& samples, const FoundAsleep& found_asleep, const SymbolTable& symbols,
                                Grouping by)
{
    std::vector<Weighted> items;
    const bool by_exception = by == Grouping::exception;
    const std::vector<uint32_t>& tags = key_tags(samples, by);
    const bool tagged = !tags.empty();
    // Raw samples: count equal (tag, pc) pairs first, so each distinct address is
    // attributed once however many samples share it.
    // Untagged samples inside the image's code (nearly all of them) are counted in a dense
    // array, one counter per halfword: no hashing on the ten-million-sample path.
    uint32_t code_start = UINT32_MAX;
    uint64_t code_end = 0;
    for (const CodeSection& c : symbols.code_sections()) {
        code_start = std::min(code_start, c.start);
        code_end = std::max(code_end, uint64_t(c.start) + c.size);
    }
    const bool dense = !tagged && code_end > code_start && code_end - code_start <= (16u << 20);
    std::vector<uint32_t> dense_counts(dense ? size_t((code_end - code_start) / 2 + 1) : 0);
    KeyCounter counts, asleep_counts;
    for (size_t i = 0; i < samples.pcs.size(); ++i) {
        const uint32_t pc = samples.pcs[i];
        const uint32_t offset = pc - code_start;
        if (found_asleep(i))
            asleep_counts.add(sample_key(tagged ? tags[i] : 0, pc));
        else if (dense && offset < code_end - code_start && (offset & 1u) == 0 && dense_counts[offset / 2] != UINT32_MAX)
            ++dense_counts[offset / 2];
        else
            counts.add(sample_key(tagged ? tags[i] : 0, pc));
    }
    for (size_t k = 0; k < dense_counts.size(); ++k)
        if (dense_counts[k] != 0)
            counts.add_many(code_start + 2 * uint32_t(k), dense_counts[k]);
    // Tag 0 is no task (a live sampler before the scheduler starts), unless the source named it.
    // A variable's 0 is a value like any other.
    const bool zero_named = by == Grouping::value || samples.tag_names.count(0) != 0;
    auto add_counted = [&](const KeyCounter& counted, bool asleep) {
        counted.each([&](uint64_t key, uint64_t n) {
            const uint32_t tag = uint32_t(key >> 32);
            items.push_back({uint32_t(key), tag, tagged && (by_exception || tag != 0 || zero_named), double(n), nullptr,
                             asleep});
        });
    };
    add_counted(counts, false);
    add_counted(asleep_counts, true);
    for (const AddressCount& c : samples.counts)
        items.push_back({c.address, 0, false, double(c.count), nullptr});

    // A bucket's count is shared equally by the even (Thumb instruction) addresses it
    // covers that belong to a function: a bucket across a boundary is split in
    // proportion to each function's part, and filler between functions gets nothing.
    for (const Bucket& b : samples.buckets) {
        if (b.count == 0)
            continue;
        if (by == Grouping::address) {
            items.push_back({b.start, 0, false, double(b.count), &b, false, true});
            continue;
        }
        std::vector<uint32_t> owned;
        for (uint64_t a = b.start; a < uint64_t(b.start) + b.size; a += 2)
            if (symbols.find(uint32_t(a)) != nullptr)
                owned.push_back(uint32_t(a));
        if (owned.empty()) {
            items.push_back({b.start, 0, false, double(b.count), nullptr, false, true});
            continue;
        }
        const double each = double(b.count) / owned.size();
        for (uint32_t a : owned)
            items.push_back({a, 0, false, each, nullptr, false, true});
    }
    return items;
}

class RowBuilder {
public:
    // `part` splits rows of one name: a source line shared by several functions (a
    // template's instances, a header's inline function) is one row per function.
    Row& row(const std::string& name, const std::string& part = {})
    {
        auto [it, added] = index_.emplace(name + '\0' + part, rows_.size());
        if (added) {
            rows_.emplace_back();
            rows_.back().name = name;
            ++parts_[name];
        }
        last_ = it->second;
        return rows_[it->second];
    }
    // The index of the row the last call of row() gave: take() keeps the order.
    size_t last() const { return last_; }
    // The rows, each name unique: the parts of a shared line are named by their function too.
    std::vector<Row> take()
    {
        for (Row& row : rows_)
            if (parts_[row.name] > 1)
                row.name += " (in " + row.function + ")";
        return std::move(rows_);
    }

private:
    std::unordered_map<std::string, size_t> index_;
    std::unordered_map<std::string, size_t> parts_;
    std::vector<Row> rows_;
    size_t last_ = 0;
};

// A function's name: the innermost inlined function's as DWARF names it (demangled), or the
// symbol table's label for the function the code belongs to, so that one function has one
// name whether DWARF or the symbol table gives it (a clone's DWARF names the function it was
// cloned from; its symbol says "[clone .constprop.0]").
std::string function_name(const Function* f, const std::vector<SourceFrame>* frames)
{
    if (frames != nullptr && frames->size() > 1 && !frames->front().function.empty())
        return frames->front().function;
    if (f != nullptr)
        return f->name;
    if (frames != nullptr && !frames->empty() && !frames->front().function.empty())
        return frames->front().function;
    return unknown_function;
}

std::string offset_in(const Function* f, uint32_t pc)
{
    if (f == nullptr)
        return unknown_function;
    char text[32];
    std::snprintf(text, sizeof text, "+0x%" PRIx32, pc - f->start);
    return f->name + text;
}

void add_lockstep_warning(Profile& profile, const LockstepFinding& found, uint32_t only_address)
{
    char text[512];
    if (found.distinct == 1) {
        std::snprintf(text, sizeof text,
                      "all %zu samples are at one address, %s: the program idles on one instruction, or the "
                      "sampling period is a multiple of the program's period (lockstep); randomize the interval to "
                      "tell them apart",
                      found.samples, hex32(only_address).c_str());
    } else {
        std::snprintf(text, sizeof text,
                      "sampling is in lockstep with the program: the address sequence repeats every %zu samples "
                      "(%.1f %% of samples equal the one %zu later, %.1f %% expected by chance; %zu distinct "
                      "addresses in the last %zu samples), so code between those %zu points is never seen; "
                      "randomize the sampling interval",
                      found.period, 100.0 * found.match_fraction, found.period, 100.0 * found.chance_fraction,
                      found.distinct, found.samples, found.period);
    }
    profile.warnings.push_back({"lockstep", text});
}

void check_sequences(Profile& profile, const SampleSet& samples)
{
    std::vector<Sequence> sequences = samples.sequences;
    if (sequences.empty())
        sequences.push_back({0, samples.pcs.size()});
    for (const Sequence& s : sequences) {
        std::span<const uint32_t> pcs(samples.pcs.data() + s.begin, s.end - s.begin);
        if (auto found = detect_lockstep(pcs)) {
            if (!profile.lockstep)
                profile.lockstep = found;
            add_lockstep_warning(profile, *found, pcs.back());
            return;   // once is enough: the chunks of one run share the cause
        }
    }
}

// The frames of one address, outermost first: the inline chain when DWARF has it, else
// the symbol table's function.
void append_frames(std::vector<StackFrame>& out, uint32_t address, const SymbolTable& symbols,
                   SourceLocator* locator)
{
    const Function* f = symbols.find(address);
    if (locator != nullptr && f != nullptr) {   // outside every function, DWARF only guesses a neighbour
        const std::vector<SourceFrame>& chain = locator->frames(address);
        if (!chain.empty() && !chain.back().function.empty()) {
            for (auto frame = chain.rbegin(); frame != chain.rend(); ++frame) {
                const bool outermost = frame == chain.rbegin();
                std::string name = outermost ? f->name : frame->function.empty() ? unknown_function : frame->function;
                out.push_back({std::move(name), frame->file, frame->line, address, !outermost,
                               outermost ? f->symbol : frame->symbol});
            }
            return;
        }
    }
    out.push_back({f != nullptr ? f->name : unknown_function, "", 0, address, false,
                   f != nullptr ? f->symbol : std::string()});
}

Truncation truncation_of(const SampleSet& samples, const SymbolTable& symbols)
{
    Truncation truncation;
    std::map<std::string, double> by_reason;
    for (size_t i = 0; i < samples.stacks.size(); ++i) {
        const CallStack& stack = samples.stacks[i];
        truncation.unwound += 1;
        if (!stack.truncated)
            continue;
        truncation.samples += 1;
        // A stack marked truncated without its reason (constructed, or from a recording of an
        // older version) is counted as such.
        std::string reason(describe(stack.stop == UnwindStop::root ? UnwindStop::not_recorded : stack.stop));
        // Which function the unwinder could not read: the chain's outermost frame.
        if (stack.stop == UnwindStop::no_frame_info) {
            const uint32_t outermost = stack.callers.empty() ? samples.pcs[i] & ~1u : stack.callers.back();
            const Function* function = symbols.find(outermost);
            reason += ": " + (function != nullptr ? function->name : "code at " + hex32(outermost));
        }
        by_reason[reason] += 1;
    }
    truncation.by_reason.assign(by_reason.begin(), by_reason.end());
    std::stable_sort(truncation.by_reason.begin(), truncation.by_reason.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    return truncation;
}

// Stack rows (identical frame chains merged) and, by function, each function's inclusive
// samples: every stack that holds it, once.
void build_stacks(Profile& profile, const SampleSet& samples, const std::vector<Weighted>& items,
                  const SymbolTable& symbols, SourceLocator* locator, const AttributionOptions& options,
                  RowBuilder& rows)
{
    std::map<std::vector<std::string>, size_t> index;   // frame names -> stack row
    // The samples' and counts' chains, then the histogram's shares, one address each.
    std::vector<AddressChain> chains = address_chains(samples, profile);
    for (const Weighted& item : items)
        if (item.histogram)
            chains.push_back({"", count_root(samples, profile), false, false, {item.pc}, item.weight});
    for (const AddressChain& chain : chains) {
        StackRow row;
        row.truncated = chain.truncated;
        row.samples = chain.weight;
        row.core = chain.core;
        if (!chain.task.empty())
            row.frames.push_back({chain.task, "", 0, 0, false, ""});
        if (chain.from_secure)
            row.frames.push_back({secure_frame_name, "", 0, 0, false, ""});
        std::vector<std::pair<std::string, const Function*>> holders;   // functions on this stack
        for (uint32_t address : chain.addresses) {
            append_frames(row.frames, address, symbols, locator);
            if (options.by == Grouping::function) {
                const Function* f = symbols.find(address);
                const std::vector<SourceFrame>* frames =
                    options.inline_frames && locator != nullptr ? &locator->frames(address) : nullptr;
                holders.emplace_back(function_name(f, frames), options.inline_frames ? nullptr : f);
                // The functions the innermost one is inlined into are on the stack too.
                if (frames != nullptr && f != nullptr)
                    for (size_t i = 1; i < frames->size(); ++i)
                        holders.emplace_back(i + 1 == frames->size() ? f->name : (*frames)[i].function, nullptr);
            }
        }
        std::sort(holders.begin(), holders.end());
        holders.erase(std::unique(holders.begin(), holders.end(),
                                  [](const auto& a, const auto& b) { return a.first == b.first; }),
                      holders.end());
        for (const auto& [name, f] : holders) {
            Row& function_row = rows.row(name);   // a function seen only as a caller gets its row here
            function_row.inclusive_samples += chain.weight;
            if (f != nullptr) {
                function_row.address = f->start;
                function_row.size = f->size;
                function_row.symbol = f->symbol;
            }
        }

        // Stacks that differ only in lines are one row (the flame graph's frames are
        // functions); the frames keep the lines of the first such stack.
        std::vector<std::string> key;
        key.push_back(row.truncated ? "1" : "0");
        key.push_back(row.core);
        for (const StackFrame& f : row.frames)
            key.push_back(f.function);
        auto [it, added] = index.emplace(std::move(key), profile.stacks.size());
        if (added)
            profile.stacks.push_back(std::move(row));
        else
            profile.stacks[it->second].samples += chain.weight;
    }
    // Samples that caught no address count in the total: one-frame stacks under their
    // row's name, so that every stack format adds up to the profile's total.
    if (samples.outside_buckets > 0)
        profile.stacks.push_back({{{outside_histogram, "", 0, 0, false, ""}}, double(samples.outside_buckets), false, ""});
    for (const auto& [name, count] : samples.without_address)
        profile.stacks.push_back({{{name, "", 0, 0, false, ""}}, double(count), false, ""});
    std::stable_sort(profile.stacks.begin(), profile.stacks.end(),   // ties keep their order: reproducible files
              [](const StackRow& a, const StackRow& b) { return a.samples > b.samples; });
}

// A bucket whose bytes belong to two or more functions cannot say which of them its samples
// hit: the attribution splits it by the functions' shares of its bytes, and says so once.
void check_straddling_buckets(Profile& profile, const SampleSet& samples, const SymbolTable& symbols)
{
    size_t straddling = 0;
    std::string example;
    for (const Bucket& b : samples.buckets) {
        if (b.count == 0)
            continue;
        std::vector<const Function*> owners;
        for (uint64_t a = b.start; a < uint64_t(b.start) + b.size; a += 2) {
            const Function* f = symbols.find(uint32_t(a));
            if (f != nullptr && std::find(owners.begin(), owners.end(), f) == owners.end())
                owners.push_back(f);
        }
        if (owners.size() < 2)
            continue;
        if (straddling++ == 0) {
            example = hex32(b.start) + " (" + std::to_string(b.size) + " bytes: ";
            for (size_t i = 0; i < owners.size(); ++i)
                example += (i == 0 ? "" : ", ") + owners[i]->name;
            example += ")";
        }
    }
    if (straddling == 0)
        return;
    profile.warnings.push_back(
        {"bucket-straddles", std::to_string(straddling) + " sampled block(s) cover two or more functions, e.g. " + example +
                                 ": their counts are split by each function's share of the block's bytes; smaller "
                                 "blocks or functions aligned to the block size remove the doubt"});
}

// ---------------------------------------------------------------- the rows of each grouping

struct RowContext {
    const SampleSet& samples;
    const SymbolTable& symbols;
    RowBuilder& rows;
    const std::vector<SourceFrame>* frames;   // the address's source frames, when wanted
    bool inline_frames;
    const std::map<uint32_t, uint32_t>& vector_table;
};

Row& function_row(const RowContext& c, const Weighted& item, const Function* f)
{
    Row& row = c.rows.row(function_name(f, c.inline_frames ? c.frames : nullptr));
    if (f != nullptr && !c.inline_frames) {
        row.address = f->start;
        row.size = f->size;
        row.symbol = f->symbol;
    }
    return row;
}

Row& line_row(const RowContext& c, const Weighted&, const Function* f)
{
    const std::string line = c.frames != nullptr ? SourceLocator::line_of(*c.frames) : std::string();
    std::string function = function_name(f, c.frames);
    Row& row = line.empty() ? c.rows.row(function + " (no line information)") : c.rows.row(line, function);
    row.function = std::move(function);
    return row;
}

Row& address_row(const RowContext& c, const Weighted& item, const Function* f)
{
    if (item.bucket != nullptr) {
        // A histogram bucket is one row, named by its range and the functions it covers.
        const Bucket& b = *item.bucket;
        Row& row = c.rows.row(hex32(b.start) + "-" + hex32(b.start + b.size - 1));
        row.address = b.start;
        row.size = b.size;
        std::string owners;
        for (uint64_t a = b.start; a < uint64_t(b.start) + b.size; a += 2) {
            const Function* owner = c.symbols.find(uint32_t(a));
            if (owner != nullptr && owners.find(owner->name) == std::string::npos)
                owners += (owners.empty() ? "" : ", ") + owner->name;
        }
        row.function = owners.empty() ? unknown_function : owners;
        return row;
    }
    Row& row = c.rows.row(hex32(item.pc));
    row.address = item.pc;
    row.function = offset_in(f, item.pc);
    if (c.frames != nullptr) {
        row.location = SourceLocator::line_of(*c.frames);
        row.inlined_into.clear();
        for (size_t i = 1; i < c.frames->size(); ++i)
            row.inlined_into.push_back(i + 1 == c.frames->size() && f != nullptr ? f->name : (*c.frames)[i].function);
    }
    return row;
}

Row& task_row(const RowContext& c, const Weighted& item, const Function*)
{
    std::string name = untagged_task_name;
    if (item.tagged) {
        auto known = c.samples.tag_names.find(item.tag);
        name = known != c.samples.tag_names.end() ? known->second : hex32(item.tag);
        if (is_idle_task(name))
            name += " (idle)";
    }
    Row& row = c.rows.row(name);
    if (item.tagged)
        row.address = item.tag;
    return row;
}

// By value: the value's name (its enumerator, else the number), as the source named it.
Row& value_row(const RowContext& c, const Weighted& item, const Function*)
{
    auto known = c.samples.value_names.find(item.tag);
    return c.rows.row(known != c.samples.value_names.end() ? known->second : std::to_string(item.tag));
}

Row& exception_row(const RowContext& c, const Weighted& item, const Function*)
{
    return c.rows.row(exception_row_name(item.tag, c.vector_table, c.symbols));
}

using RowMaker = Row& (*)(const RowContext&, const Weighted&, const Function*);

RowMaker row_maker(Grouping by)
{
    switch (by) {
    case Grouping::stack:      // rows made from the stacks later; the function rows go
    case Grouping::function: return function_row;
    case Grouping::line: return line_row;
    case Grouping::address: return address_row;
    case Grouping::task: return task_row;
    case Grouping::core:       // rows made from the cores later
        return function_row;
    case Grouping::value: return value_row;
    case Grouping::exception: return exception_row;
    }
    return function_row;
}

// Samples counted without an address: a histogram's reads outside its range, and the
// named rows some inputs carry (the SWO stream's sleep samples).
void add_rows_without_address(RowBuilder& rows, const SampleSet& samples)
{
    if (samples.outside_buckets > 0)
        rows.row(outside_histogram).samples += double(samples.outside_buckets);
    for (const auto& [name, count] : samples.without_address)
        rows.row(name).samples += double(count);
}

// row_of: filled with the row index of each raw sample's key (sample_key), when given.
RowBuilder group_rows(Profile& profile, const std::vector<Weighted>& items, const SampleSet& samples,
                      const SymbolTable& symbols, SourceLocator* locator, const AttributionOptions& options,
                      RowsOfSamples* row_of)
{
    const bool want_frames = locator != nullptr &&
                             (options.inline_frames || options.by == Grouping::line || options.by == Grouping::address);
    const RowMaker make_row = row_maker(options.by);
    RowBuilder rows;
    std::unordered_map<uint32_t, bool> seen_addresses;
    std::unordered_map<std::string, std::unordered_map<uint32_t, bool>> row_addresses;
    for (const Weighted& item : items) {
        // A sample that caught the core asleep is time spent in no code (by task, the task's).
        const bool asleep = item.bucket == nullptr && options.by != Grouping::task &&
                            (item.found_asleep || caught_asleep(samples, symbols, item.pc));
        const Function* f = symbols.find(item.pc);
        if (f == nullptr && !asleep)
            profile.unattributed += item.weight;
        seen_addresses[item.pc] = true;
        const RowContext context{samples, symbols, rows, want_frames ? &locator->frames(item.pc) : nullptr,
                                 options.inline_frames, options.vector_table};
        Row& row = asleep ? rows.row(sleep_row_name) : make_row(context, item, f);
        row.samples += item.weight;
        if (row_of != nullptr && item.bucket == nullptr)
            (item.found_asleep ? row_of->asleep : row_of->awake)[sample_key(item.tag, item.pc)] = rows.last();
        if (row_addresses[row.name].emplace(item.pc, true).second)
            ++row.distinct_addresses;
    }
    profile.unattributed += double(samples.outside_buckets);
    profile.distinct_addresses = seen_addresses.size();
    add_rows_without_address(rows, samples);
    return rows;
}

// By stack: one row per distinct chain, root first, a truncated chain under `[truncated]`
// as in the stack formats.
RowBuilder stack_rows(const Profile& profile, const SampleSet& samples)
{
    RowBuilder rows;
    for (const StackRow& stack : profile.stacks) {
        std::string name;
        for (const StackFrame& f : shown_frames(stack))
            name += (name.empty() ? "" : ";") + f.function;
        Row& row = rows.row(name);
        row.samples += stack.samples;
        row.distinct_addresses = 0;
    }
    add_rows_without_address(rows, samples);
    return rows;
}

// By core: one row per core, its samples (or executed instructions), listed even when none.
RowBuilder core_rows(const SampleSet& samples)
{
    RowBuilder rows;
    for (uint32_t core : cores_of(samples)) {
        Row& row = rows.row(core_name(samples, core));
        row.distinct_addresses = 0;
    }
    for (size_t i = 0; i < samples.pcs.size(); ++i)
        rows.row(core_name(samples, samples.cores.empty() ? 0u : samples.cores[i])).samples += 1;
    for (const AddressCount& c : samples.counts)
        rows.row(core_name(samples, c.core)).samples += double(c.count);
    add_rows_without_address(rows, samples);
    return rows;
}

// Where each batch of consecutive wall-clock halts begins: k = min(30, floor(sqrt(n))) batches
// of floor(n / k) samples, the last taking the rest. Few long batches, as batch means wants
// (10 to 30 of them: Schmeiser, "Batch size effects in the analysis of simulation output",
// Oper. Res. 30(3), 1982): halts that repeat each other lie in one batch, so the spread between
// batches sees their correlation; the 95 % intervals then use Student's t of k - 1 degrees.
// Measured on the three-loop image halted every 200 us by a host at load 10: the spread of
// batches of 50 put hot_a's error at 1.1-1.6 times the binomial one, batches of 250 at
// 1.4-1.9, so runs of correlated halts were longer than 50.
std::vector<size_t> batches_of_consecutive_halts(size_t n)
{
    const size_t k = std::min<size_t>(30, size_t(std::sqrt(double(n))));
    std::vector<size_t> starts;
    if (k < 2)
        return starts;
    for (size_t c = 0; c < k; ++c)
        starts.push_back(c * (n / k));
    return starts;
}

// The clusters whose spread gives the standard errors (indices into pcs where each begins),
// when the rows are made from the samples' addresses (not from stacks or cores) and every
// sample is a read: the bursts of back-to-back reads (in order, the first at 0), or batches of
// consecutive wall-clock halts. Empty: binomial errors.
std::vector<size_t> error_clusters(const SampleSet& samples, Grouping by)
{
    const bool reads_only = !samples.exact && by != Grouping::stack && by != Grouping::core &&
                            samples.counts.empty() && samples.buckets.empty() && samples.without_address.empty();
    if (!reads_only)
        return {};
    const std::vector<size_t>& bursts = samples.bursts;
    if (bursts.size() >= 2 && bursts.front() == 0 && bursts.back() < samples.pcs.size() &&
        std::adjacent_find(bursts.begin(), bursts.end(), std::greater_equal<>()) == bursts.end())
        return bursts;
    if (bursts.empty() && samples.wall_clock_halts)
        return batches_of_consecutive_halts(samples.pcs.size());
    return {};
}

// The variance of each row's fraction from the spread between clusters of correlated samples
// (error_clusters: bursts, batches): the ratio estimator of cluster sampling (Cochran, Sampling
// Techniques, 3rd ed., 6.13). With k clusters of m_c samples, y_c of them in the row,
// M = sum m_c and p = sum y_c / M:
//   var(p) = k / (k - 1) * sum_c (y_c - p m_c)^2 / M^2
// per row from sum y_c^2 and sum y_c m_c, so one pass over the samples serves every row.
std::vector<double> cluster_variances(const SampleSet& samples, const std::vector<size_t>& clusters,
                                      const std::vector<uint32_t>& tags, const RowsOfSamples& row_of,
                                      const FoundAsleep& found_asleep, size_t row_count)
{
    const size_t k = clusters.size();
    const double reads = double(samples.pcs.size());
    std::vector<double> y2(row_count, 0), ym(row_count, 0), y(row_count, 0);
    double m2 = 0;
    std::vector<uint32_t> in_burst(row_count, 0);
    std::vector<size_t> touched;
    const bool tagged = !tags.empty();
    for (size_t c = 0; c < k; ++c) {
        const size_t begin = clusters[c];
        const size_t end = c + 1 < k ? clusters[c + 1] : samples.pcs.size();
        for (size_t i = begin; i < end; ++i) {
            const size_t r = row_of.at(tagged ? tags[i] : 0, samples.pcs[i], found_asleep(i));
            if (in_burst[r]++ == 0)
                touched.push_back(r);
        }
        const double m = double(end - begin);
        m2 += m * m;
        for (size_t r : touched) {
            const double n = in_burst[r];
            y[r] += n;
            y2[r] += n * n;
            ym[r] += n * m;
            in_burst[r] = 0;
        }
        touched.clear();
    }
    std::vector<double> variance(row_count, 0);
    for (size_t r = 0; r < row_count; ++r) {
        const double p = y[r] / reads;
        const double spread = std::max(0.0, y2[r] - 2 * p * ym[r] + p * p * m2);
        variance[r] = double(k) / double(k - 1) * spread / (reads * reads);
    }
    return variance;
}

// variance: empty (binomial), or one per row (cluster_variances) from `clusters` clusters.
void compute_shares(Profile& profile, std::vector<Row> rows, const SampleSet& samples, bool inclusive_known,
                    const std::vector<double>& variance, size_t clusters)
{
    // The total from the integer counts, not from the (fractional) bucket shares added up.
    uint64_t total = samples.pcs.size() + samples.outside_buckets;
    for (const AddressCount& c : samples.counts)
        total += c.count;
    for (const Bucket& b : samples.buckets)
        total += b.count;
    for (const auto& [name, count] : samples.without_address)
        total += count;
    profile.total = double(total);
    profile.rows = std::move(rows);
    for (size_t r = 0; r < profile.rows.size(); ++r) {
        Row& row = profile.rows[r];
        if (!inclusive_known)
            row.inclusive_samples = row.samples;
        if (variance.empty()) {
            row.share = share_of(row.samples, profile.total, samples.exact);
            row.inclusive = share_of(row.inclusive_samples, profile.total, samples.exact);
            continue;
        }
        row.share = share_with_variance(row.samples, profile.total, variance[r], double(clusters - 1));
        row.inclusive = inclusive_known ? share_of(row.inclusive_samples, profile.total, false) : row.share;
        const double binomial = share_of(row.samples, profile.total, false).stderr_pp;
        if (binomial > 0)
            profile.errors.largest_ratio = std::max(profile.errors.largest_ratio, row.share.stderr_pp / binomial);
    }
    std::sort(profile.rows.begin(), profile.rows.end(), [](const Row& a, const Row& b) {
        return a.samples != b.samples ? a.samples > b.samples : a.name < b.name;
    });
}

// Samples whose PC lies in none of the image's code sections: code of another image ran there
// (a bootloader before an application linked at an offset, a vendor's ROM, a SoftDevice). One
// note names where, as address ranges (runs of such PCs no more than 64 KiB apart), so that the
// reader knows which image to give as well; nothing without code sections (a source that
// knows its functions only). Returns the samples it counted.
double note_samples_outside_the_image(Profile& profile, const std::vector<Weighted>& items, const SymbolTable& symbols)
{
    if (symbols.code_sections().empty())
        return 0;
    std::vector<std::pair<uint32_t, double>> outside;   // (pc, weight), raw samples and census counts
    double count = 0;
    for (const Weighted& item : items)
        if (!item.histogram && !item.found_asleep && !symbols.in_code(item.pc)) {
            outside.emplace_back(item.pc, item.weight);
            count += item.weight;
        }
    if (outside.empty() || profile.total <= 0)
        return 0;
    std::sort(outside.begin(), outside.end());
    constexpr uint32_t gap = 64u << 10;
    constexpr size_t most_ranges = 3;
    struct Range { uint32_t low, high; double weight; };
    std::vector<Range> ranges;
    for (const auto& [pc, weight] : outside) {
        if (ranges.empty() || pc - ranges.back().high > gap)
            ranges.push_back({pc, pc, 0});
        ranges.back().high = pc;
        ranges.back().weight += weight;
    }
    std::string where;
    for (size_t r = 0; r < ranges.size() && r < most_ranges; ++r)
        where += (r == 0 ? "" : ", ") + hex32(ranges[r].low) + (ranges[r].high != ranges[r].low ? "-" + hex32(ranges[r].high) : "") +
                 printf_string(" (%.0f)", ranges[r].weight);
    if (ranges.size() > most_ranges)
        where += printf_string(" and %zu more ranges", ranges.size() - most_ranges);
    const std::string image = symbols.path().empty() ? std::string("the ELF") : symbols.path();
    profile.warnings.push_back(
        {"outside-image",
         printf_string("%.0f of %.0f samples (%.1f %%) ran outside the code of %s, at %s: another image's code "
                       "(a bootloader, a ROM, a second application), or not this ELF's firmware; counted in no function",
                       count, profile.total, 100.0 * count / profile.total, image.c_str(), where.c_str())});
    return count;
}

void add_warnings(Profile& profile, const SampleSet& samples, const std::vector<Weighted>& items,
                  const SymbolTable& symbols, const AttributionOptions& options, bool stripped)
{
    // In the order a reader needs them: a stripped ELF first, then the stacks' warnings
    // (already in profile.warnings), the input's notes and the sampler's warnings.
    if (stripped)
        profile.warnings.insert(profile.warnings.begin(),
                                {"stripped", (symbols.path().empty() ? std::string("the ELF") : symbols.path()) +
                                                 " has no function symbols (stripped?): the profile is by address; "
                                                 "give the ELF before stripping for function names"});
    for (const std::string& note : samples.notes)
        profile.warnings.push_back({"input", note});
    profile.warnings.insert(profile.warnings.end(), samples.warnings.begin(), samples.warnings.end());
    if (!samples.exact && !samples.pcs.empty())
        check_sequences(profile, samples);
    check_straddling_buckets(profile, samples, symbols);
    if (samples.sampler)
        if (auto intrusion = intrusion_warning(*samples.sampler))
            profile.warnings.push_back({"intrusion", *intrusion});
    // Samples in the image's code but in no function: a wrong ELF, more likely than another image.
    const double outside = stripped ? 0 : note_samples_outside_the_image(profile, items, symbols);
    const double in_no_function = profile.unattributed - outside;
    if (!stripped && profile.total > 0 && in_no_function / profile.total > options.unattributed_warning) {
        const std::string text = printf_string(
            "%.0f of %.0f samples (%.1f %%) fall in no function of %s: is this the ELF of the firmware that ran?",
            in_no_function, profile.total, 100.0 * in_no_function / profile.total,
            symbols.path().empty() ? "the symbol table" : symbols.path().c_str());
        profile.warnings.push_back({"unattributed", text});
    }
}

// The CPU load of samples that measure time: the samples asleep (a PC just past a WFI or WFE,
// a halt that found DHCSR.S_SLEEP, or the input's own "(sleep)" row) and those of the RTOS idle task are idle; the rest is load.
std::optional<CpuLoad> cpu_load(const Profile& profile, const SampleSet& samples, const FoundAsleep& found_asleep,
                                const SymbolTable& symbols)
{
    if (!samples.measures_time || profile.total <= 0)
        return std::nullopt;
    CpuLoad load;
    std::unordered_map<uint32_t, bool> asleep_at;
    std::unordered_map<uint32_t, bool> idle_tag;
    for (const auto& [tag, name] : samples.tag_names)
        idle_tag[tag] = is_idle_task(name);
    for (size_t i = 0; i < samples.pcs.size(); ++i) {
        const uint32_t pc = samples.pcs[i];
        auto [known, added] = asleep_at.emplace(pc, false);
        if (added)
            known->second = caught_asleep(samples, symbols, pc);
        if (known->second || found_asleep(i))
            load.sleep_samples += 1;
        else if (!samples.tags.empty() && idle_tag[samples.tags[i]])
            load.idle_task_samples += 1;
    }
    if (auto sleep = samples.without_address.find(sleep_row_name); sleep != samples.without_address.end())
        load.sleep_samples += double(sleep->second);
    load.busy = share_of(profile.total - load.sleep_samples - load.idle_task_samples, profile.total, false);
    load.sleep = share_of(load.sleep_samples, profile.total, false);
    return load;
}

// By exception, with stacks: what each exception's samples preempted. The chain runs from the
// sample's PC through the handler's frames to the handler itself (its vector table entry);
// the frame below is the instruction the exception interrupted (the unwinder crosses the
// exception frame there), named by its function.
void find_preempted(Profile& profile, const SampleSet& samples, const FoundAsleep& found_asleep,
                    const SymbolTable& symbols, const AttributionOptions& options)
{
    if (options.by != Grouping::exception || samples.stacks.empty() || samples.exceptions.empty())
        return;
    std::map<std::string, std::map<std::string, double>> found;
    for (size_t i = 0; i < samples.pcs.size(); ++i) {
        const uint32_t number = samples.exceptions[i];
        if (number == 0)
            continue;
        const std::string row = caught_asleep(samples, symbols, samples.pcs[i]) || found_asleep(i)
                                    ? std::string(sleep_row_name)
                                    : exception_row_name(number, options.vector_table, symbols);
        std::vector<uint32_t> chain = {samples.pcs[i]};
        chain.insert(chain.end(), samples.stacks[i].callers.begin(), samples.stacks[i].callers.end());
        std::string what = samples.stacks[i].truncated ? "(chain cut short)" : "(no handler frame)";
        auto handler = options.vector_table.find(number);
        for (size_t k = 0; handler != options.vector_table.end() && k < chain.size(); ++k) {
            const Function* f = symbols.find(chain[k]);
            if (f == nullptr || f->start != handler->second)
                continue;
            if (k + 1 < chain.size()) {
                const Function* interrupted = symbols.find(chain[k + 1]);
                what = interrupted != nullptr ? interrupted->name : unknown_function;
            }
            break;
        }
        found[row][what] += 1;
    }
    for (auto& [row, counts] : found) {
        std::vector<std::pair<std::string, double>> sorted(counts.begin(), counts.end());
        std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
        profile.preempted[row] = std::move(sorted);
    }
}

} // namespace

std::map<uint32_t, uint32_t> vector_handlers(const std::vector<uint32_t>& vector_table)
{
    std::map<uint32_t, uint32_t> handlers;
    for (uint32_t n = 1; n < vector_table.size(); ++n)
        if (vector_table[n] != 0)
            handlers[n] = vector_table[n] & ~1u;
    return handlers;
}

std::string exception_row_name(uint32_t number, const std::map<uint32_t, uint32_t>& vector_table,
                               const SymbolTable& symbols)
{
    if (number == 0)
        return "Thread mode";
    // ARMv7-M ARM B1.5.2 and ARMv8-M's SecureFault (7): the architecture's numbers below 16.
    static const std::map<uint32_t, const char*> fixed = {
        {1, "Reset"},     {2, "NMI"},          {3, "HardFault"}, {4, "MemManage"}, {5, "BusFault"},
        {6, "UsageFault"}, {7, "SecureFault"}, {11, "SVCall"},   {12, "DebugMonitor"}, {14, "PendSV"},
        {15, "SysTick"}};
    auto known = fixed.find(number);
    std::string name = known != fixed.end() ? std::string(known->second) + " (" + std::to_string(number) + ")"
                       : number >= 16 ? "IRQ " + std::to_string(number - 16) + " (" + std::to_string(number) + ")"
                                      : "exception " + std::to_string(number);
    if (auto entry = vector_table.find(number); entry != vector_table.end())
        if (const Function* handler = symbols.find(entry->second))
            name += " " + handler->name;
    return name;
}

std::vector<StackFrame> frames_at(uint32_t address, const SymbolTable& symbols, SourceLocator* locator)
{
    std::vector<StackFrame> frames;
    append_frames(frames, address, symbols, locator);
    return frames;
}

std::optional<Grouping> parse_grouping(std::string_view text)
{
    if (text == "function")
        return Grouping::function;
    if (text == "line")
        return Grouping::line;
    if (text == "address")
        return Grouping::address;
    if (text == "task")
        return Grouping::task;
    if (text == "stack")
        return Grouping::stack;
    if (text == "core")
        return Grouping::core;
    if (!variable_of_grouping(text).empty())
        return Grouping::value;
    if (text == "exception")
        return Grouping::exception;
    return std::nullopt;
}

std::string_view variable_of_grouping(std::string_view text)
{
    constexpr std::string_view prefix = "var:";
    return text.substr(0, prefix.size()) == prefix ? text.substr(prefix.size()) : std::string_view();
}

std::string grouping_name(const Profile& profile)
{
    return profile.by == Grouping::value ? "var:" + profile.variable : std::string(name_of(profile.by));
}

std::string_view name_of(Grouping grouping)
{
    switch (grouping) {
    case Grouping::function: return "function";
    case Grouping::line: return "line";
    case Grouping::address: return "address";
    case Grouping::task: return "task";
    case Grouping::stack: return "stack";
    case Grouping::core: return "core";
    case Grouping::value: return "var";
    case Grouping::exception: return "exception";
    }
    return "?";
}

std::vector<StackFrame> shown_frames(const StackRow& stack)
{
    std::vector<StackFrame> frames;
    frames.reserve(stack.frames.size() + 2);
    if (!stack.core.empty())
        frames.push_back({stack.core, "", 0, 0, false, ""});
    if (stack.truncated)
        frames.push_back({truncated_frame_name, "", 0, 0, false, ""});
    frames.insert(frames.end(), stack.frames.begin(), stack.frames.end());
    return frames;
}

Profile attribute(const SampleSet& samples, const SymbolTable& symbols, SourceLocator* locator,
                  const AttributionOptions& asked)
{
    // A stripped ELF names no function: rows by function would be one "?" row, so the
    // profile is by address, which still tells the hot code apart.
    AttributionOptions options = asked;
    const bool stripped = symbols.functions().empty() && options.by == Grouping::function;
    if (stripped)
        options.by = Grouping::address;
    if (options.by == Grouping::exception && samples.exceptions.size() != samples.pcs.size())
        throw Error(samples.origin, "", "--by exception needs the exception (IPSR) of every sample; this input has none");
    if (!samples.stacks.empty() && samples.stacks.size() != samples.pcs.size())
        throw Error(samples.origin, "", "the call stacks (" + std::to_string(samples.stacks.size()) +
                                            ") do not match the samples (" + std::to_string(samples.pcs.size()) + ")");

    Profile profile;
    profile.origin = samples.origin;
    profile.by = options.by;
    if (options.by == Grouping::value) {
        // No samples at all (a core never sampled) is an empty profile, as by any grouping.
        const bool no_samples = samples.pcs.empty() && samples.counts.empty() && samples.buckets.empty() &&
                                samples.without_address.empty();
        if (samples.values.size() != samples.pcs.size() || (samples.pcs.empty() && !no_samples))
            throw Error(samples.origin, "", "grouping by a variable needs its value at every sample; these samples have none");
        profile.variable = samples.variable;
    }
    profile.exact = samples.exact;
    profile.run_instructions = samples.run_instructions;
    profile.sampler = samples.sampler;

    // 1. Equal samples counted once; 2. a row for each, by the grouping; 3. stacks;
    // 4. shares; 5. what the reader should doubt.
    const FoundAsleep found_asleep(samples);   // one flag per sample, read by every step below
    const std::vector<Weighted> items = aggregate(samples, found_asleep, symbols, options.by);
    // Bursts of correlated reads, and batches of consecutive wall-clock halts, get their errors
    // from the spread between them.
    const std::vector<size_t> clusters = error_clusters(samples, options.by);
    const bool by_clusters = !clusters.empty();
    RowsOfSamples row_of;
    RowBuilder rows = group_rows(profile, items, samples, symbols, locator, options, by_clusters ? &row_of : nullptr);
    if (options.by == Grouping::exception) {
        // Named before the stacks, whose roots they are (address_chains). Counts and histogram
        // buckets carry no exception: their rows are exception 0's, as aggregate() keys them.
        for (uint32_t number : samples.exceptions)
            if (!profile.exception_rows.count(number))
                profile.exception_rows[number] = exception_row_name(number, options.vector_table, symbols);
        if (!samples.counts.empty() || !samples.buckets.empty())
            profile.exception_rows.emplace(0, exception_row_name(0, options.vector_table, symbols));
    }
    profile.unwound = !samples.stacks.empty();
    profile.truncation = truncation_of(samples, symbols);
    if (options.stacks || profile.unwound || options.by == Grouping::stack)
        build_stacks(profile, samples, items, symbols, locator, options, rows);
    if (options.by == Grouping::stack)
        rows = stack_rows(profile, samples);
    if (options.by == Grouping::core)
        rows = core_rows(samples);
    std::vector<Row> made = rows.take();
    std::vector<double> variance;
    if (by_clusters) {
        variance = cluster_variances(samples, clusters, key_tags(samples, options.by), row_of, found_asleep, made.size());
        profile.errors.bursts = clusters.size();
        profile.errors.batches = samples.bursts.empty();
    }
    profile.errors.lower_bounds = !by_clusters && samples.reads_pcsr && !samples.exact;
    compute_shares(profile, std::move(made), samples, profile.unwound && options.by == Grouping::function, variance,
                   clusters.size());
    // Function rows say where their hottest code is, when lines are known.
    if (locator != nullptr && options.by == Grouping::function && !options.inline_frames) {
        for (Row& row : profile.rows)
            if (row.address)
                row.location = locator->line_at(*row.address);
    }
    profile.load = cpu_load(profile, samples, found_asleep, symbols);
    profile.sleep_not_counted = !samples.measures_time;
    find_preempted(profile, samples, found_asleep, symbols, options);
    add_warnings(profile, samples, items, symbols, options, stripped);
    // Each core's own profile: by the same grouping (by function when the rows are the cores).
    if (is_multicore(samples)) {
        AttributionOptions each = options;
        each.stacks = false;
        if (each.by == Grouping::core)
            each.by = Grouping::function;
        for (uint32_t core : cores_of(samples)) {
            const SampleSet own = samples_of_core(samples, core);   // a core named, never sampled: empty
            Profile one = attribute(own, symbols, locator, each);
            profile.cores.push_back({core, core_name(samples, core), one.total, std::move(one.rows), one.errors});
        }
        if (samples.core_stops)
            profile.core_stops = CoreStopFigures{samples.core_stops->how, samples.core_stops->simultaneous,
                                                 samples.core_stops->at_most_us.size(),
                                                 percentiles(samples.core_stops->at_least_us),
                                                 percentiles(samples.core_stops->at_most_us)};
    }
    return profile;
}

} // namespace mcuprof::core
