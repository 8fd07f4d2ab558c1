#include "mcuprof/sources/openocd_sampler.h"

#include <optional>
#include <sstream>
#include <thread>

#include "mcuprof/sources/pcsr_profile_reader.h"
#include "mcuprof/transport/error.h"

namespace mcuprof::sources {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b)
{
    return std::chrono::duration<double>(b - a).count();
}

constexpr uint32_t demcr = 0xE000EDFC;
constexpr uint32_t trcena = 1u << 24;
constexpr uint32_t dwt_pcsr = 0xE000101C;
constexpr uint32_t pcsr_halted = 0xFFFFFFFF;

// One round trip: halt, read the four registers, resume. The resume runs even when the
// read fails, so an error never leaves the target halted; the read's error is raised after.
const char* const halt_sample_script =
    "halt; set _mcuprof_c [catch {get_reg {pc lr sp xPSR}} _mcuprof_r]; resume; "
    "if {$_mcuprof_c} {error $_mcuprof_r}; set _mcuprof_r";

std::string pcsr_batch_script(unsigned count)
{
    return "set _mcuprof_o {}; for {set _mcuprof_i 0} {$_mcuprof_i < " + std::to_string(count) +
           "} {incr _mcuprof_i} {lappend _mcuprof_o [read_memory " + std::to_string(dwt_pcsr) +
           " 32 1]}; set _mcuprof_o";
}

std::unique_ptr<transport::TclClient> connect(const OpenocdSamplerOptions& options)
{
    transport::TclClient::Options tcl;
    tcl.timeout = options.timeout;
    return std::make_unique<transport::TclClient>(options.tcl, tcl);
}

} // namespace

std::vector<uint32_t> OpenocdSampler::parse_words(const std::string& text, const std::string& peer,
                                                  const std::string& what)
{
    std::vector<uint32_t> words;
    std::istringstream in(text);
    std::string word;
    while (in >> word) {
        try {
            size_t used = 0;
            const unsigned long long v = std::stoull(word, &used, 0);
            if (used != word.size() || v > 0xFFFFFFFFull)
                throw std::invalid_argument(word);
            words.push_back(uint32_t(v));
        } catch (const std::exception&) {
            throw transport::Error(transport::Error::Kind::protocol, peer, what, "not a 32-bit word: '" + word + "'");
        }
    }
    return words;
}

// get_reg's answer: "pc 0x0800033e lr 0x080003bd sp 0x2001ffd8 xPSR 0x01000000".
LiveSample OpenocdSampler::parse_registers(const std::string& text, const std::string& peer)
{
    std::istringstream in(text);
    std::string name, value;
    LiveSample s;
    int seen = 0;
    while (in >> name >> value) {
        uint32_t v = 0;
        try {
            v = uint32_t(std::stoul(value, nullptr, 0));
        } catch (const std::exception&) {
            throw transport::Error(transport::Error::Kind::protocol, peer, "get_reg", "unexpected answer: " + text);
        }
        if (name == "pc") s.pc = v, seen |= 1;
        else if (name == "lr") s.lr = v, seen |= 2;
        else if (name == "sp") s.sp = v, seen |= 4;
        else if (name == "xPSR") s.xpsr = v, seen |= 8;
    }
    if (seen != 15)
        throw transport::Error(transport::Error::Kind::protocol, peer, "get_reg", "unexpected answer: " + text);
    return s;
}

OpenocdSampler::OpenocdSampler(const OpenocdSamplerOptions& options)
    : options_(options), seed_(options.seed != 0 ? options.seed : std::random_device{}())
{
    if (options_.batch == 0)
        options_.batch = 1;
    tcl_ = connect(options_);
    // The commands below act on the current target; with several (`targets`), that one.
    target_ = tcl_->eval("target current");
    std::istringstream names(tcl_->eval("target names"));
    for (std::string name; names >> name;)
        ++target_count_;
    initial_state_ = tcl_->eval("[target current] curstate");
    if (initial_state_ != "running" && initial_state_ != "halted")
        throw transport::Error(transport::Error::Kind::protocol, tcl_->peer(), "curstate",
                               "target " + target_ + " is " + initial_state_ + ", neither running nor halted");
}

OpenocdSampler::~OpenocdSampler() = default;

nlohmann::json OpenocdSampler::describe() const
{
    const char* shape = options_.shape == IntervalGenerator::Shape::exponential ? "exponential"
                        : options_.shape == IntervalGenerator::Shape::uniform   ? "uniform"
                                                                                : "fixed";
    nlohmann::json d = {
        {"source", "openocd"},
        {"method", options_.mode == OpenocdMode::halt ? "halt" : "pcsr"},
        {"openocd", options_.tcl.text()},
        {"target", target_},
        {"targets", target_count_},
        {"target_selection", "the current target (OpenOCD's `target current`)"},
        {"seed", seed_},
    };
    if (options_.mode == OpenocdMode::halt) {
        d["pacing"] = {{"clock", "wall"}, {"shape", shape}, {"mean_seconds", options_.interval},
                       {"between", "samples"}};
        d["round_trip"] = "one Tcl eval per sample: halt, get_reg {pc lr sp xPSR}, resume";
    } else {
        d["pacing"] = {{"clock", "wall"}, {"shape", shape}, {"mean_seconds", options_.interval},
                       {"between", "batches"}, {"batch", options_.batch},
                       {"note", "DWT_PCSR is read " + std::to_string(options_.batch) +
                                    " times back to back by a loop in OpenOCD's Tcl, which cannot randomize; "
                                    "only the host-side waits between batches are random"}};
        d["round_trip"] = "one Tcl eval per batch of DWT_PCSR reads, the core running";
    }
    if (options_.shape == IntervalGenerator::Shape::uniform)
        d["pacing"]["jitter"] = options_.jitter;
    return d;
}

bool OpenocdSampler::halted()
{
    return tcl_->eval("[target current] curstate") == "halted";
}

void OpenocdSampler::leave_running(SampleSink& sink, bool link_lost)
{
    try {
        if (link_lost) {
            // The link dropped, perhaps not OpenOCD: ask over a new connection.
            tcl_.reset();
            tcl_ = connect(options_);
        }
        if (halted()) {
            tcl_->eval("resume");
            sink.event("resume", "the target " + target_ + " was halted at the end; resumed");
        }
    } catch (const transport::Error& e) {
        sink.event("resume-failed", std::string("could not make sure the target runs: ") + e.what());
    }
}

SamplerStats OpenocdSampler::run(SampleSink& sink, const SamplingPlan& plan, const std::atomic<bool>& stop)
{
    SamplerStats stats;
    IntervalGenerator intervals(options_.interval, options_.shape, options_.jitter, seed_);
    const Clock::time_point start = Clock::now();
    OpenocdMode mode = options_.mode;

    auto done = [&]() -> bool {
        if (stop.load()) {
            stats.end_reason = "interrupted by a signal";
            return true;
        }
        if (plan.samples && stats.samples >= *plan.samples) {
            stats.end_reason = "sample count reached";
            return true;
        }
        if (plan.duration && Clock::now() - start >= *plan.duration) {
            stats.end_reason = "duration reached";
            return true;
        }
        return false;
    };
    auto wait = [&] {
        const auto w = std::chrono::duration<double>(intervals.next());
        if (w >= std::chrono::microseconds(1))
            std::this_thread::sleep_until(Clock::now() + std::chrono::duration_cast<Clock::duration>(w));
    };
    auto time_of = [&](Clock::time_point t) {
        return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(t - start).count());
    };

    try {
        if (initial_state_ == "halted") {
            tcl_->eval("resume");
            sink.event("resume", "the target " + target_ + " was halted; resumed to sample it running");
        }
        if (mode == OpenocdMode::pcsr) {
            // DEMCR.TRCENA enables the DWT (ARMv7-M ARM, C1.6.5), read-modify-write.
            const std::vector<uint32_t> words =
                parse_words(tcl_->eval("read_memory " + std::to_string(demcr) + " 32 1"), tcl_->peer(), "DEMCR");
            if (words.size() != 1)
                throw transport::Error(transport::Error::Kind::protocol, tcl_->peer(), "DEMCR",
                                       "read_memory gave " + std::to_string(words.size()) + " words, not 1");
            const uint32_t value = words[0];
            if (!(value & trcena))
                tcl_->eval("write_memory " + std::to_string(demcr) + " 32 " + std::to_string(value | trcena));
            const std::vector<uint32_t> probe =
                parse_words(tcl_->eval(pcsr_batch_script(1)), tcl_->peer(), "DWT_PCSR");
            if (probe.empty() || probe[0] == 0) {
                // A core without a DWT_PCSR (Cortex-M0/M0+, ARMv6-M) reads 0 there (RAZ).
                mode = OpenocdMode::halt;
                sink.event("fallback", "DWT_PCSR reads 0 on target " + target_ +
                                           " (not implemented): sampling in halt mode instead");
            } else {
                stats.pcsr = PcsrStats{options_.batch, 0, 0, {}};
            }
        }
        const std::string batch_script = pcsr_batch_script(options_.batch);
        std::optional<PcsrProfileReader> profile_reader;
        if (!options_.pcsr_profile_gmon.empty())
            profile_reader.emplace(options_.pcsr_profile_gmon, seed_);
        // Halt mode: the target is halted only inside each round trip, for part of it.
        double halted_seconds = 0;
        auto report_progress = [&](Clock::time_point now) {
            stats.wall_seconds = seconds_between(start, now);
            stats.running_seconds = stats.wall_seconds - halted_seconds;
            sink.progress(stats);
        };
        while (!done()) {
            wait();
            if (done())
                break;
            if (mode == OpenocdMode::halt) {
                const Clock::time_point asked = Clock::now();
                const std::string answer = tcl_->eval(halt_sample_script);
                const Clock::time_point answered = Clock::now();
                stats.halt_latency_us.push_back(1e6 * seconds_between(asked, answered));
                LiveSample s = parse_registers(answer, tcl_->peer());
                s.time_ns = time_of(answered);
                sink.sample(s);
                ++stats.samples;
                halted_seconds += seconds_between(asked, answered);
                report_progress(answered);
            } else {
                const uint64_t wanted = plan.samples ? *plan.samples - stats.samples : options_.batch;
                const unsigned count = unsigned(std::min<uint64_t>(options_.batch, wanted));
                const Clock::time_point asked = Clock::now();
                const std::vector<uint32_t> pcs =
                    profile_reader ? profile_reader->read(*tcl_, plan.samples ? wanted : UINT64_MAX)
                                   : parse_words(tcl_->eval(count == options_.batch ? batch_script
                                                                                    : pcsr_batch_script(count)),
                                                 tcl_->peer(), "DWT_PCSR");
                const Clock::time_point answered = Clock::now();
                stats.pcsr->round_trip_us.push_back(1e6 * seconds_between(asked, answered));
                stats.pcsr->reads += pcs.size();
                for (size_t i = 0; i < pcs.size(); ++i) {
                    if (pcs[i] == pcsr_halted) {   // the core was halted (by someone else)
                        ++stats.pcsr->halted_reads;
                        continue;
                    }
                    LiveSample s;
                    s.pc = pcs[i];
                    // Spread over the round trip: the reads follow one another evenly.
                    s.time_ns = time_of(asked) + uint64_t(double(time_of(answered) - time_of(asked)) *
                                                          (double(i) + 0.5) / double(pcs.size()));
                    sink.sample(s);
                    ++stats.samples;
                }
                report_progress(answered);
            }
        }
        if (profile_reader)
            sink.event("pcsr", "OpenOCD's profile read DWT_PCSR " + std::to_string(profile_reader->reads()) +
                                   " times: " + std::to_string(profile_reader->outside()) +
                                   " outside the 256 KiB window (or halted), " +
                                   std::to_string(profile_reader->unused()) + " placing it or past the count");
        if (stats.pcsr && stats.pcsr->halted_reads > 0)
            sink.event("pcsr", std::to_string(stats.pcsr->reads) + " DWT_PCSR reads, " +
                                   std::to_string(stats.pcsr->halted_reads) + " of them 0xFFFFFFFF (core halted) dropped");
    } catch (const transport::Error& e) {
        // A failing command (protocol: OpenOCD answered with an error) leaves the link up.
        if (e.kind() == transport::Error::Kind::protocol) {
            stats.end_reason = std::string("OpenOCD reported an error: ") + e.what();
            sink.event("error", stats.end_reason);
        } else {
            stats.link_lost = true;
            stats.end_reason = std::string("the link was lost: ") + e.what();
            sink.event("link-lost", stats.end_reason);
        }
    }
    // Never leave the target halted: the halt script resumes in the same round trip, and this
    // checks once more (an error, a signal between halt and resume, someone else's halt).
    leave_running(sink, stats.link_lost);
    stats.wall_seconds = seconds_between(start, Clock::now());
    // Halt mode: the target is halted only inside each round trip, for part of it.
    stats.running_seconds = stats.wall_seconds;
    if (mode == OpenocdMode::halt)
        for (double us : stats.halt_latency_us)
            stats.running_seconds -= us * 1e-6;
    return stats;
}

} // namespace mcuprof::sources
