#include "mcuprof/profile/sampler_figures.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "mcuprof/image/error.h"

namespace mcuprof::core {
nlohmann::json to_json(const Percentiles& p)
{
    return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"max", p.max}};
}

namespace {

// Reads the JSON form back. A recording comes from a file: whatever a report needs must be
// there with its type, and what is optional must have its type when present.
class Reader {
public:
    explicit Reader(const std::string& where) : where_(where) {}

    double number(const nlohmann::json& object, const char* key) const
    {
        auto it = object.find(key);
        if (it == object.end() || !it->is_number())
            throw Error(where_, key, "not a number");
        return it->get<double>();
    }
    double number_or(const nlohmann::json& object, const char* key, double fallback) const
    {
        return object.contains(key) ? number(object, key) : fallback;
    }
    uint64_t count(const nlohmann::json& object, const char* key) const
    {
        const double value = number(object, key);
        if (value < 0)
            throw Error(where_, key, "a negative count");
        return uint64_t(value);
    }
    uint64_t count_or(const nlohmann::json& object, const char* key, uint64_t fallback) const
    {
        return object.contains(key) ? count(object, key) : fallback;
    }
    bool flag_or(const nlohmann::json& object, const char* key, bool fallback) const
    {
        auto it = object.find(key);
        if (it == object.end())
            return fallback;
        if (!it->is_boolean())
            throw Error(where_, key, "not true or false");
        return it->get<bool>();
    }
    std::string text(const nlohmann::json& object, const char* key) const
    {
        auto it = object.find(key);
        if (it == object.end() || !it->is_string())
            throw Error(where_, key, "not text");
        return it->get<std::string>();
    }
    const nlohmann::json& object(const nlohmann::json& parent, const char* key) const
    {
        auto it = parent.find(key);
        if (it == parent.end() || !it->is_object())
            throw Error(where_, key, "not an object");
        return *it;
    }
    Percentiles percentiles(const nlohmann::json& parent, const char* key) const
    {
        const nlohmann::json& p = object(parent, key);
        const double p50 = number(p, "p50"), p99 = number(p, "p99");
        return {p50, number_or(p, "p90", p50), p99, number_or(p, "max", p99)};
    }

private:
    const std::string& where_;
};

} // namespace

Percentiles percentiles(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    auto at = [&](double q) {
        return values.empty() ? 0.0 : values[std::min(values.size() - 1, size_t(q * double(values.size() - 1) + 0.5))];
    };
    return {at(0.5), at(0.9), at(0.99), values.empty() ? 0.0 : values.back()};
}

nlohmann::json to_json(const SamplerFigures& f)
{
    nlohmann::json out = {
        {"samples", f.samples},
        {"wall_seconds", f.wall_seconds},
        {"samples_per_second", f.samples_per_second},
        {"run_duty", f.run_duty},
        {"end", f.end},
        {"target_exited", f.target_exited},
        {"link_lost", f.link_lost},
    };
    if (f.halt_latency_us)
        out["halt_latency_us"] = to_json(*f.halt_latency_us);
    if (f.pcsr) {
        const PcsrFigures& p = *f.pcsr;
        out["pcsr"] = {{"batch", p.batch},
                       {"reads", p.reads},
                       {"halted_reads", p.halted_reads},
                       {"halted_share", p.halted_share()},
                       {"batches", p.batches},
                       {"round_trip_us", to_json(p.round_trip_us)}};
        if (p.unused_reads)
            out["pcsr"]["unused_reads"] = *p.unused_reads;
    }
    if (f.probe_commands)
        out["probe_commands"] = {{"commands", f.probe_commands->commands},
                                 {"per_sample", f.probe_commands->per_sample}};
    if (f.stacks)
        out["stacks"] = {{"mean_depth", f.stacks->mean_depth},
                         {"extra_round_trips_per_sample", f.stacks->extra_round_trips_per_sample},
                         {"ends", f.stacks->ends}};
    if (f.halt_budget)
        out["halt_budget"] = {{"max_halted", f.halt_budget->max_halted},
                              {"halted_share", f.halted_share()},
                              {"longest_halt_seconds", f.halt_budget->longest_halt_seconds},
                              {"longest_mean_wait_seconds", f.halt_budget->longest_mean_wait_seconds}};
    if (f.swo)
        out["swo"] = {{"period_cycles", f.swo->period_cycles}, {"cpu_hz", f.swo->cpu_hz}, {"swo_hz", f.swo->swo_hz}};
    if (!f.method.empty())
        out["method"] = f.method;
    if (!f.pacing.empty())
        out["pacing"] = nlohmann::json::parse(f.pacing, nullptr, false);
    return out;
}

SamplerFigures sampler_figures_from_json(const nlohmann::json& s, const std::string& where)
{
    const Reader read(where);
    if (!s.is_object())
        throw Error(where, "", "the sampler's figures are not a JSON object");
    SamplerFigures f;
    f.samples_per_second = read.number(s, "samples_per_second");
    f.run_duty = read.number(s, "run_duty");
    f.end = read.text(s, "end");
    f.samples = read.count_or(s, "samples", 0);
    f.wall_seconds = read.number_or(s, "wall_seconds", 0);
    f.target_exited = read.flag_or(s, "target_exited", false);
    f.link_lost = read.flag_or(s, "link_lost", false);
    // What the method measured: halt latencies (halting samplers), PCSR batches, or both
    // (a PCSR recording that fell back to halting), or the DWT's period (SWO).
    if (!s.contains("halt_latency_us") && !s.contains("pcsr") && !s.contains("swo"))
        throw Error(where, "", "neither halt latencies, DWT_PCSR batches nor an SWO period");
    if (s.contains("swo")) {
        const nlohmann::json& w = read.object(s, "swo");
        f.swo = SwoFigures{uint32_t(read.count(w, "period_cycles")), read.number(w, "cpu_hz"), read.number(w, "swo_hz")};
    }
    if (s.contains("halt_latency_us"))
        f.halt_latency_us = read.percentiles(s, "halt_latency_us");
    if (s.contains("pcsr")) {
        const nlohmann::json& p = read.object(s, "pcsr");
        PcsrFigures pcsr;
        pcsr.batch = read.count(p, "batch");
        pcsr.reads = read.count(p, "reads");
        pcsr.halted_reads = read.count(p, "halted_reads");
        pcsr.batches = read.count_or(p, "batches", 0);
        pcsr.round_trip_us = read.percentiles(p, "round_trip_us");
        if (p.contains("unused_reads"))
            pcsr.unused_reads = read.count(p, "unused_reads");
        f.pcsr = pcsr;
    }
    if (s.contains("probe_commands")) {
        const nlohmann::json& p = read.object(s, "probe_commands");
        f.probe_commands = ProbeCommandFigures{read.count(p, "commands"), read.number(p, "per_sample")};
    }
    if (s.contains("stacks")) {
        const nlohmann::json& st = read.object(s, "stacks");
        StackFigures stacks;
        stacks.mean_depth = read.number_or(st, "mean_depth", 0);
        stacks.extra_round_trips_per_sample = read.number_or(st, "extra_round_trips_per_sample", 0);
        if (st.contains("ends"))
            for (const auto& [reason, count] : read.object(st, "ends").items())
                stacks.ends[reason] = read.count(st["ends"], reason.c_str());
        f.stacks = stacks;
    }
    if (s.contains("halt_budget")) {
        const nlohmann::json& b = read.object(s, "halt_budget");
        f.halt_budget = HaltBudgetFigures{read.number(b, "max_halted"), read.number(b, "longest_halt_seconds"),
                                          read.number(b, "longest_mean_wait_seconds")};
    }
    if (s.contains("method"))
        f.method = read.text(s, "method");
    if (s.contains("pacing"))
        f.pacing = read.object(s, "pacing").dump();
    return f;
}

// A sampler that kept the target halted most of the time changed the program it measured:
// interrupts, timers and polling loops see a core that stops between them.
std::optional<std::string> intrusion_warning(const SamplerFigures& figures)
{
    if (!(figures.wall_seconds > 0) || !(figures.halted_share() > 0.5))
        return std::nullopt;
    char text[320];
    std::snprintf(text, sizeof text,
                  "the sampler kept the target halted %.1f %% of the time (running %.1f %%): code that depends on "
                  "time (interrupts, timers, polling loops) ran unlike it runs alone; --max-halted PERCENT (e.g. 25) "
                  "holds the halted share under a budget",
                  100.0 * figures.halted_share(), 100.0 * figures.run_duty);
    return std::string(text);
}

} // namespace mcuprof::core
