#include "rows.h"

#include <cinttypes>
#include <cstdio>
#include <unordered_map>

#include "mcuprof/hex.h"
#include "mcuprof/profile/address_chains.h"
#include "mcuprof/profile/cores.h"
#include "cpu_load.h"

namespace mcuprof::core::attribution {
namespace {

// An address as its function and the offset into it: "main+0x1c".
std::string offset_in(const Function* f, uint32_t pc)
{
    if (f == nullptr)
        return unknown_function;
    char text[32];
    std::snprintf(text, sizeof text, "+0x%" PRIx32, pc - f->start);
    return f->name + text;
}

// What every row maker reads: the row maker of a grouping names an item's row and fills in
// what the row says beside its samples.
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

} // namespace

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

} // namespace mcuprof::core::attribution
