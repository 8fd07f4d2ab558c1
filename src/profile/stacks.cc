#include "stacks.h"

#include <algorithm>
#include <map>
#include <string>

#include "mcuprof/hex.h"
#include "mcuprof/profile/address_chains.h"
#include "rows.h"

namespace mcuprof::core::attribution {
namespace {

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

} // namespace

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

} // namespace mcuprof::core::attribution

namespace mcuprof::core {

std::vector<StackFrame> frames_at(uint32_t address, const SymbolTable& symbols, SourceLocator* locator)
{
    std::vector<StackFrame> frames;
    attribution::append_frames(frames, address, symbols, locator);
    return frames;
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

} // namespace mcuprof::core
