// attribute(): samples to rows, stacks, shares and warnings, one step per file of this folder.
#include "mcuprof/profile/profile.h"

#include <string>
#include <vector>

#include "aggregation.h"
#include "cpu_load.h"
#include "errors.h"
#include "exceptions.h"
#include "mcuprof/image/error.h"
#include "mcuprof/profile/cores.h"
#include "mcuprof/profile/sampler_figures.h"
#include "rows.h"
#include "stacks.h"
#include "warnings.h"

namespace mcuprof::core::attribution {
namespace {

// The facts the grouping needs, which an input may lack: an exception number or a variable's
// value at every sample, and a call stack for every sample when any are given.
void check_inputs(const SampleSet& samples, const AttributionOptions& options)
{
    if (options.by == Grouping::exception && samples.exceptions.size() != samples.pcs.size())
        throw Error(samples.origin, "", "--by exception needs the exception (IPSR) of every sample; this input has none");
    if (!samples.stacks.empty() && samples.stacks.size() != samples.pcs.size())
        throw Error(samples.origin, "", "the call stacks (" + std::to_string(samples.stacks.size()) +
                                            ") do not match the samples (" + std::to_string(samples.pcs.size()) + ")");
    if (options.by == Grouping::value) {
        // No samples at all (a core never sampled) is an empty profile, as by any grouping.
        const bool no_samples = samples.pcs.empty() && samples.counts.empty() && samples.buckets.empty() &&
                                samples.without_address.empty();
        if (samples.values.size() != samples.pcs.size() || (samples.pcs.empty() && !no_samples))
            throw Error(samples.origin, "", "grouping by a variable needs its value at every sample; these samples have none");
    }
}

// A profile without rows: what it was made from and how.
Profile empty_profile(const SampleSet& samples, const AttributionOptions& options)
{
    Profile profile;
    profile.origin = samples.origin;
    profile.by = options.by;
    if (options.by == Grouping::value)
        profile.variable = samples.variable;
    profile.exact = samples.exact;
    profile.run_instructions = samples.run_instructions;
    profile.sampler = samples.sampler;
    return profile;
}

// The rows and their shares. Bursts of correlated reads, and batches of consecutive wall-clock
// halts, get their errors from the spread between them (error_clusters); other samples get
// binomial errors.
void add_rows(Profile& profile, const SampleSet& samples, const std::vector<Weighted>& items,
              const FoundAsleep& found_asleep, const SymbolTable& symbols, SourceLocator* locator,
              const AttributionOptions& options)
{
    const std::vector<size_t> clusters = error_clusters(samples, options.by);
    const bool by_clusters = !clusters.empty();
    RowsOfSamples row_of;
    RowBuilder rows = group_rows(profile, items, samples, symbols, locator, options, by_clusters ? &row_of : nullptr);
    name_exception_rows(profile, samples, symbols, options);
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
}

// Function rows say where their hottest code is, when lines are known.
void locate_function_rows(Profile& profile, SourceLocator* locator, const AttributionOptions& options)
{
    if (locator == nullptr || options.by != Grouping::function || options.inline_frames)
        return;
    for (Row& row : profile.rows)
        if (row.address)
            row.location = locator->line_at(*row.address);
}

// Each core's own profile: by the same grouping (by function when the rows are the cores).
void add_core_profiles(Profile& profile, const SampleSet& samples, const SymbolTable& symbols, SourceLocator* locator,
                       const AttributionOptions& options)
{
    if (!is_multicore(samples))
        return;
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

} // namespace
} // namespace mcuprof::core::attribution

namespace mcuprof::core {

Profile attribute(const SampleSet& samples, const SymbolTable& symbols, SourceLocator* locator,
                  const AttributionOptions& asked)
{
    // A stripped ELF names no function: rows by function would be one "?" row, so the
    // profile is by address, which still tells the hot code apart.
    AttributionOptions options = asked;
    const bool stripped = symbols.functions().empty() && options.by == Grouping::function;
    if (stripped)
        options.by = Grouping::address;
    attribution::check_inputs(samples, options);

    Profile profile = attribution::empty_profile(samples, options);
    const attribution::FoundAsleep found_asleep(samples);   // one flag per sample, read by every step below
    const std::vector<attribution::Weighted> items = attribution::aggregate(samples, found_asleep, symbols, options.by);
    attribution::add_rows(profile, samples, items, found_asleep, symbols, locator, options);
    attribution::locate_function_rows(profile, locator, options);
    profile.load = attribution::cpu_load(profile, samples, found_asleep, symbols);
    profile.sleep_not_counted = !samples.measures_time;
    attribution::find_preempted(profile, samples, found_asleep, symbols, options);
    attribution::add_warnings(profile, samples, items, symbols, options, stripped);
    attribution::add_core_profiles(profile, samples, symbols, locator, options);
    return profile;
}

} // namespace mcuprof::core
