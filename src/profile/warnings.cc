#include "warnings.h"

#include <algorithm>
#include <cstdio>
#include <span>
#include <string>

#include "mcuprof/hex.h"
#include "mcuprof/printf_string.h"
#include "mcuprof/profile/sampler_figures.h"

namespace mcuprof::core::attribution {
namespace {

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

} // namespace

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

} // namespace mcuprof::core::attribution
