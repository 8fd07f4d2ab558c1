#include "exceptions.h"

#include <algorithm>
#include <map>
#include <string>

namespace mcuprof::core::attribution {

void name_exception_rows(Profile& profile, const SampleSet& samples, const SymbolTable& symbols,
                         const AttributionOptions& options)
{
    if (options.by != Grouping::exception)
        return;
    for (uint32_t number : samples.exceptions)
        if (!profile.exception_rows.count(number))
            profile.exception_rows[number] = exception_row_name(number, options.vector_table, symbols);
    if (!samples.counts.empty() || !samples.buckets.empty())
        profile.exception_rows.emplace(0, exception_row_name(0, options.vector_table, symbols));
}

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

} // namespace mcuprof::core::attribution

namespace mcuprof::core {

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

} // namespace mcuprof::core
