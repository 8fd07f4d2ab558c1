// The Firefox Profiler's processed profile format, version 70, as its type definitions
// describe it (firefox-devtools/profiler, src/types/profile.ts; the version in
// src/app-logic/constants.ts). Columnar tables shared by the threads (profile.shared), each
// row an index into the next: sample -> stack (a tree by prefix) -> frame -> func -> string.
#include <map>
#include <optional>
#include <ostream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "mcuprof/profile/address_chains.h"
#include "mcuprof/image/error.h"
#include "mcuprof/profile/cores.h"
#include "mcuprof/hex.h"
#include "mcuprof/report/report.h"
#include "interned_strings.h"

namespace mcuprof::core {

namespace {

using json = nlohmann::json;

constexpr int processed_profile_version = 70;
constexpr int gecko_profile_version = 36;   // the Gecko format of the same profiler release

class FirefoxTables {
public:
    // A stack node: its frame under its parent (`prefix`, or none for a root).
    size_t stack(std::optional<size_t> prefix, const StackFrame& frame, int inline_depth)
    {
        const size_t frame_index = this->frame(frame, inline_depth);
        auto [it, added] = stacks_.emplace(std::pair(prefix, frame_index), stacks_.size());
        if (added) {
            stack_table_["frame"].push_back(frame_index);
            // 0 for a root; else how far back the parent is (parents come first).
            stack_table_["prefixOffset"].push_back(prefix ? it->second - *prefix : 0);
        }
        return it->second;
    }

    json shared()
    {
        stack_table_["length"] = stacks_.size();
        frame_table_["length"] = frames_.size();
        func_table_["length"] = funcs_.size();
        sources_["length"] = files_.size();
        for (const char* column : {"frame", "prefixOffset"})
            if (!stack_table_.contains(column))
                stack_table_[column] = json::array();
        for (const char* column : {"address", "lib", "inlineDepth", "category", "subcategory", "func",
                                   "nativeSymbol", "innerWindowID", "line", "column", "originalLocation"})
            if (!frame_table_.contains(column))
                frame_table_[column] = json::array();
        for (const char* column : {"name", "isJS", "relevantForJS", "resource", "source", "lineNumber",
                                   "columnNumber", "originalLocation"})
            if (!func_table_.contains(column))
                func_table_[column] = json::array();
        for (const char* column : {"id", "filename", "startLine", "startColumn", "sourceMapURL", "content"})
            if (!sources_.contains(column))
                sources_[column] = json::array();
        return {
            {"stackTable", stack_table_},
            {"frameTable", frame_table_},
            {"funcTable", func_table_},
            // Resources and native symbols group native code by library; firmware has one
            // image and its functions are already named, so both stay empty.
            {"resourceTable", {{"length", 0}, {"name", json::array()}, {"host", json::array()},
                               {"type", json::array()}}},
            {"nativeSymbols", {{"libIndex", json::array()}, {"address", json::array()}, {"name", json::array()},
                               {"functionSize", json::array()}, {"length", 0}}},
            {"stringArray", strings_.strings()},
            {"sources", sources_},
            {"sourceLocationTable", {{"source", json::array()}, {"line", json::array()},
                                     {"column", json::array()}, {"length", 0}}},
        };
    }

private:
    size_t frame(const StackFrame& f, int inline_depth)
    {
        const size_t func = this->func(f.function, f.file);
        auto [it, added] = frames_.emplace(std::tuple(f.address, inline_depth, func, f.line), frames_.size());
        if (added) {
            // -1: no address (a task, "(sleep)", the truncation mark); no library (-1) either.
            frame_table_["address"].push_back(f.address != 0 ? int64_t(f.address) : -1);
            frame_table_["lib"].push_back(-1);
            frame_table_["inlineDepth"].push_back(inline_depth);
            frame_table_["category"].push_back(0);      // "Other", the one category
            frame_table_["subcategory"].push_back(0);
            frame_table_["func"].push_back(func);
            frame_table_["nativeSymbol"].push_back(nullptr);
            frame_table_["innerWindowID"].push_back(0);  // 0: not a JS frame of a page
            frame_table_["line"].push_back(f.line != 0 ? json(f.line) : json(nullptr));
            frame_table_["column"].push_back(nullptr);
            frame_table_["originalLocation"].push_back(nullptr);
        }
        return it->second;
    }

    size_t func(const std::string& name, const std::string& file)
    {
        auto [it, added] = funcs_.emplace(std::pair(name, file), funcs_.size());
        if (added) {
            func_table_["name"].push_back(strings_.index(name));
            func_table_["isJS"].push_back(false);
            func_table_["relevantForJS"].push_back(false);
            func_table_["resource"].push_back(-1);
            func_table_["source"].push_back(file.empty() ? json(nullptr) : json(source(file)));
            func_table_["lineNumber"].push_back(nullptr);
            func_table_["columnNumber"].push_back(nullptr);
            func_table_["originalLocation"].push_back(nullptr);
        }
        return it->second;
    }

    size_t source(const std::string& file)
    {
        auto [it, added] = files_.emplace(file, files_.size());
        if (added) {
            sources_["id"].push_back(nullptr);
            sources_["filename"].push_back(strings_.index(file));
            sources_["startLine"].push_back(1);
            sources_["startColumn"].push_back(1);
            sources_["sourceMapURL"].push_back(nullptr);
            sources_["content"].push_back(nullptr);
        }
        return it->second;
    }

    InternedStrings strings_;
    std::map<std::string, size_t> files_;
    std::map<std::pair<std::string, std::string>, size_t> funcs_;
    std::map<std::tuple<uint32_t, int, size_t, uint32_t>, size_t> frames_;
    std::map<std::pair<std::optional<size_t>, size_t>, size_t> stacks_;
    json stack_table_ = json::object();
    json frame_table_ = json::object();
    json func_table_ = json::object();
    json sources_ = json::object();
};

// Each address's inline chain, looked up once: a profile samples the same few addresses over
// and over, and each lookup reads the DWARF.
class InlineChains {
public:
    explicit InlineChains(const ReportInput& input) : input_(input) {}

    const std::vector<StackFrame>& at(uint32_t address)
    {
        auto it = chains_.find(address);
        if (it == chains_.end())
            it = chains_.emplace(address, frames_at(address, input_.symbols, input_.locator)).first;
        return it->second;
    }

private:
    const ReportInput& input_;
    std::map<uint32_t, std::vector<StackFrame>> chains_;
};

// One profiler thread: its name and its samples in the order taken.
struct FirefoxThread {
    std::string name;
    json stack = json::array();
    json time = json::array();
};

// The samples' threads: one per RTOS task when the samples are tagged (the profiler shows each
// as a track), by exception one per exception (Thread mode, each handler), else one "firmware"
// thread; on a multi-core chip one per core, and per task or exception within it ("core 1:
// motor"). Threads come in the order their first samples do.
class FirefoxThreads {
public:
    explicit FirefoxThreads(const ReportInput& input)
        : input_(input), samples_(input.samples),
          by_exception_(input.profile.by == Grouping::exception && !input.samples.exceptions.empty()),
          by_core_(is_multicore(input.samples))
    {
    }

    FirefoxThread& of_sample(size_t i)
    {
        const uint32_t tag = by_exception_ ? samples_.exceptions[i] : samples_.tags.empty() ? 0 : samples_.tags[i];
        const uint32_t core = samples_.cores.empty() ? 0 : samples_.cores[i];
        auto [it, added] = thread_of_.emplace(std::pair{core, tag}, threads_.size());
        if (added)
            threads_.push_back({by_exception_ ? exception_thread_name(core, tag) : task_thread_name(core, tag)});
        return threads_[it->second];
    }

    std::vector<FirefoxThread>& all() { return threads_; }

private:
    std::string exception_thread_name(uint32_t core, uint32_t exception_number) const
    {
        auto named = input_.profile.exception_rows.find(exception_number);
        const std::string exception =
            named != input_.profile.exception_rows.end() ? named->second : std::to_string(exception_number);
        return by_core_ ? core_name(samples_, core) + ": " + exception : exception;
    }

    // Named as the task rows name it: tag 0 is no task unless the source named it.
    std::string task_thread_name(uint32_t core, uint32_t tag) const
    {
        auto named = samples_.tag_names.find(tag);
        const std::string task = named != samples_.tag_names.end() ? named->second
                                 : tag == 0                        ? std::string(untagged_task_name)
                                                                   : hex32(tag);
        const std::string core_part = by_core_ ? core_name(samples_, core) : "";
        return samples_.tags.empty() ? (by_core_ ? core_part : "firmware")
               : by_core_            ? core_part + ": " + task
                                     : task;
    }

    const ReportInput& input_;
    const SampleSet& samples_;
    const bool by_exception_;
    const bool by_core_;
    std::vector<FirefoxThread> threads_;
    std::map<std::pair<uint32_t, uint32_t>, size_t> thread_of_;   // (core, tag) -> thread
};

// The stack node of one sample's chain. The chains' core and task roots are this format's
// threads; the other roots (truncated, from the secure side) are frames above the addresses'.
std::optional<size_t> sample_stack(FirefoxTables& tables, InlineChains& inline_chains, const AddressChain& chain)
{
    auto root = [&](std::optional<size_t> node, const char* name) {
        StackFrame mark;
        mark.function = name;
        return tables.stack(node, mark, 0);
    };
    std::optional<size_t> node;
    if (chain.truncated)
        node = root(node, truncated_frame_name);
    if (chain.from_secure)
        node = root(node, secure_frame_name);
    for (uint32_t address : chain.addresses) {
        int depth = 0;   // the outermost function at the address is 0, each inlined one deeper
        for (const StackFrame& f : inline_chains.at(address))
            node = tables.stack(node, f, f.inlined ? ++depth : (depth = 0));
    }
    return node;
}

json thread_json(FirefoxThread& thread, size_t tid, double end)
{
    const size_t length = thread.stack.size();
    return {
        {"processType", "default"},
        {"processStartupTime", 0},
        {"processShutdownTime", end},
        {"registerTime", 0},
        {"unregisterTime", nullptr},
        {"pausedRanges", json::array()},
        {"name", thread.name},
        {"isMainThread", tid == 0},
        {"pid", "0"},   // one process: the firmware
        {"tid", tid},
        {"samples", {{"stack", std::move(thread.stack)}, {"time", std::move(thread.time)},
                     {"weight", nullptr}, {"weightType", "samples"}, {"length", length}}},
        {"markers", {{"data", json::array()}, {"name", json::array()}, {"startTime", json::array()},
                     {"endTime", json::array()}, {"phase", json::array()}, {"category", json::array()},
                     {"length", 0}}},
    };
}

json profile_meta(const SampleSet& samples, bool timed, double interval, double end)
{
    json meta = {
        {"interval", interval},
        {"startTime", 0},
        {"profilingStartTime", 0},
        {"profilingEndTime", end},
        {"processType", 0},
        {"product", samples.origin},
        {"importedFrom", "mcuprof"},
        {"stackwalk", samples.stacks.empty() ? 0 : 1},
        {"version", gecko_profile_version},
        {"preprocessedProfileVersion", processed_profile_version},
        {"symbolicated", true},
        {"usesOnlyOneStackType", true},
        {"sourceCodeIsNotOnSearchfox", true},
        {"markerSchema", json::array()},
        {"categories", {{{"name", "Other"}, {"color", "grey"}, {"subcategories", {"Other"}}}}},
    };
    if (!timed)
        meta["extra"] = {{{"label", "mcuprof"},
                          {"entries", {{{"label", "time"}, {"format", "string"},
                                        {"value", "this input has no sample times: one sample per ms"}}}}}};
    return meta;
}

// The note for the samples the format has no place for, or "".
std::string samples_left_out_note(const SampleSet& samples)
{
    uint64_t without_address = samples.outside_buckets;
    for (const auto& [name, count] : samples.without_address)
        without_address += count;
    if (without_address > 0)
        return std::to_string(without_address) +
               " samples without an address (such as SWO sleep packets) have no place in time and are left out";
    return {};
}

} // namespace

std::string write_firefox(const ReportInput& input, std::ostream& out)
{
    const SampleSet& samples = input.samples;
    if (samples.pcs.empty())
        throw Error(samples.origin, "",
                    "--format firefox needs samples in the order they were taken (a recording, an on-chip "
                    "ring dump or an SWO capture); this input has counts or a histogram only");
    const bool timed = samples.times_ns.size() == samples.pcs.size();

    FirefoxTables tables;
    InlineChains inline_chains(input);
    FirefoxThreads threads(input);
    double end = 0;
    const SampleChains chain_of(samples, input.profile);
    for (size_t i = 0; i < samples.pcs.size(); ++i) {
        const std::optional<size_t> node = sample_stack(tables, inline_chains, chain_of(i));
        // Milliseconds from the start; without recorded times, the sample's index.
        end = timed ? double(samples.times_ns[i]) / 1e6 : double(i);
        FirefoxThread& thread = threads.of_sample(i);
        thread.stack.push_back(*node);
        thread.time.push_back(end);
    }
    const double interval = samples.pcs.size() > 1 ? end / double(samples.pcs.size() - 1) : 1.0;

    json thread_list = json::array();
    for (size_t t = 0; t < threads.all().size(); ++t)
        thread_list.push_back(thread_json(threads.all()[t], t, end));
    const json profile = {{"meta", profile_meta(samples, timed, interval, end)}, {"libs", json::array()},
                          {"shared", tables.shared()}, {"threads", thread_list}};
    out << profile.dump() << '\n';
    return samples_left_out_note(samples);
}

} // namespace mcuprof::core
