// mcuprof top: a live view of the hottest functions (or tasks) while a sampler runs, with
// optional exponential forgetting (the host-side analogue of the on-chip sampler's decay).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <unistd.h>

#include <boost/program_options.hpp>

#include "mcuprof/profile/decay.h"
#include "mcuprof/profile/profile.h"
#include "mcuprof/profile/sampler_figures.h"
#include "mcuprof/image/symbols.h"
#include "mcuprof/image/unwind/thumb_code.h"
#include "mcuprof/inputs/error.h"
#include "mcuprof/inputs/recording.h"
#include "mcuprof/sampler/recording_sink.h"
#include "mcuprof/sampler/watched_variable.h"
#include "options.h"
#include "profile_output.h"
#include "sampling.h"

namespace po = boost::program_options;

namespace mcuprof::cli {
namespace {

using Clock = std::chrono::steady_clock;

// --decay: "2s" (a time: weights halve every 2 s of sampling time) or "500" (a count: every
// 500 samples).
struct HalfLife {
    double value = 0;
    bool in_samples = false;
    std::string text;
};

std::optional<HalfLife> parse_half_life(const std::string& text)
{
    if (text.empty())
        return std::nullopt;
    HalfLife h;
    h.text = text;
    const bool is_time = text.back() == 's' || (text.size() > 3 && text.substr(text.size() - 3) == "min");
    if (is_time) {
        h.value = std::chrono::duration<double>(parse_duration(text, "--decay")).count();
    } else {
        h.value = parse_count(text, "--decay");
        h.in_samples = true;
    }
    if (!(h.value > 0))
        throw UsageError("--decay takes a positive half-life, not '" + text + "'");
    return h;
}

// What one refresh shows, copied out under the lock so printing does not hold the sampler up.
struct Frame {
    std::vector<core::DecayingTally::Entry> rows;
    uint64_t samples = 0;
    double effective = 0;
    core::DecayingTally::Errors errors;   // which standard errors the rows give
    double wall_seconds = 0;
    double running_seconds = 0;
    // A multi-core target: each core's rows, shares of its own samples (core 0 first).
    std::vector<std::pair<uint32_t, std::vector<core::DecayingTally::Entry>>> cores;
};

// Takes the samples on the sampling thread: names each by its function, weighs it, keeps it
// in the samples file when one is asked for.
class TopSink : public sources::SampleSink {
public:
    // `header`: the recording header of the source, which says whether its samples are
    // instants of time (and so can find the core asleep) and whether they are DWT_PCSR reads.
    TopSink(const core::SymbolTable& symbols, bool by_task, std::optional<sources::WatchedVariable> variable,
            const std::optional<HalfLife>& half_life, sources::RecordingSink* recording,
            const sources::RunHeader& header)
        : symbols_(symbols), by_task_(by_task), variable_(std::move(variable)),
          measures_time_(header.measures_time()), reads_pcsr_(header.reads_pcsr()),
          half_life_(half_life ? std::optional<double>(half_life->value) : std::nullopt), tally_(half_life_),
          by_samples_(half_life && half_life->in_samples),
          recording_(recording)
    {
    }

    void sample(const sources::LiveSample& s) override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        // A burst of back-to-back DWT_PCSR reads is marked at its first read: the tally then
        // takes the errors from the spread between bursts, as report does.
        tally_.add(key_of(s), by_samples_ ? double(tally_.samples()) : double(s.time_ns) * 1e-9, stack_keys(s),
                   s.starts_burst);
        // Each core's own tally too, shown once a second core is met (a multi-core target).
        core::DecayingTally& own = core_tallies_.try_emplace(s.core, half_life_).first->second;
        own.add(key_of(s), by_samples_ ? double(own.samples()) : double(s.time_ns) * 1e-9, {}, s.starts_burst);
        if (recording_ != nullptr)
            recording_->sample(s);
    }
    void event(const std::string& kind, const std::string& message) override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (recording_ != nullptr)
            recording_->event(kind, message);
        // Said as record says them: --mode pcsr,halt halting instead (before the first frame),
        // a pause while another program has the probe, and what was left to it.
        if (kind == "fallback" || kind == "paused" || kind == "paused-end" || kind == "left-halted" ||
            kind == "shared-unknown")
            std::fprintf(stderr, "mcuprof top: %s\n", message.c_str());
    }
    void task(uint32_t control_block, const std::string& name) override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        tasks_[control_block] = name;
        if (recording_ != nullptr)
            recording_->task(control_block, name);
    }
    void progress(const sources::SamplerStats& so_far) override
    {
        std::lock_guard<std::mutex> lock(mutex_);
        wall_seconds_ = so_far.wall_seconds;
        running_seconds_ = so_far.running_seconds;
    }

    Frame frame() const
    {
        std::lock_guard<std::mutex> lock(mutex_);
        Frame f{tally_.ranked(), tally_.samples(), tally_.effective_samples(), tally_.errors(),
                wall_seconds_, running_seconds_, {}};
        for (const auto& [core, tally] : core_tallies_)
            if (core_tallies_.size() > 1)
                f.cores.emplace_back(core, tally.ranked());
        return f;
    }

private:
    // The row a sample counts in: its function, or "(sleep)" for a sample that caught the core
    // asleep (as report counts it), with --by task its task (as report names them: "(no task)"
    // before the scheduler starts), with --by var:NAME the variable's value named as report
    // names it (its enumerator, else the number).
    std::string key_of(const sources::LiveSample& s) const
    {
        if (variable_)
            return s.value ? variable_->name_of(*s.value) : "(not read)";
        if (by_task_) {
            auto it = s.tagged ? tasks_.find(s.tag) : tasks_.end();
            return it != tasks_.end() ? it->second : "(no task)";
        }
        if (s.found_asleep || (measures_time_ && core::pc_shows_sleep(symbols_, s.pc, reads_pcsr_)))
            return core::sleep_row_name;
        const core::Function* f = symbols_.find(s.pc);
        return f != nullptr ? f->name : "?";
    }

    // The distinct functions of an unwound sample's chain, the leaf's among them, for the
    // inclusive column; none for a flat sample or --by task.
    std::vector<std::string> stack_keys(const sources::LiveSample& s) const
    {
        std::vector<std::string> keys;
        if (by_task_ || variable_ || !s.stack)
            return keys;
        keys.push_back(key_of(s));
        for (uint32_t caller : s.stack->callers) {
            const core::Function* f = symbols_.find(caller);
            std::string name = f != nullptr ? f->name : "?";
            if (std::find(keys.begin(), keys.end(), name) == keys.end())
                keys.push_back(std::move(name));
        }
        return keys;
    }

    const core::SymbolTable& symbols_;
    bool by_task_;
    std::optional<sources::WatchedVariable> variable_;   // --by var:NAME
    bool measures_time_;
    bool reads_pcsr_;
    std::optional<double> half_life_;
    std::map<uint32_t, std::string> tasks_;   // control block -> name, as the sampler met them
    mutable std::mutex mutex_;
    core::DecayingTally tally_;
    std::map<uint32_t, core::DecayingTally> core_tallies_;   // a multi-core target's, by core
    bool by_samples_;
    sources::RecordingSink* recording_;   // the samples file's, when one is asked for
    double wall_seconds_ = 0;
    double running_seconds_ = 0;
};

class IgnoreBrokenPipe {
public:
    IgnoreBrokenPipe() : previous_(std::signal(SIGPIPE, SIG_IGN)) {}
    ~IgnoreBrokenPipe() { std::signal(SIGPIPE, previous_); }
    IgnoreBrokenPipe(const IgnoreBrokenPipe&) = delete;
    IgnoreBrokenPipe& operator=(const IgnoreBrokenPipe&) = delete;

private:
    void (*previous_)(int);
};

void print_rows(std::FILE* out, const std::vector<core::DecayingTally::Entry>& entries, size_t rows,
                const std::string& heading)
{
    std::fprintf(out, "\n       %%    +-se      weight  %s\n", heading.c_str());
    for (size_t i = 0; i < entries.size() && (rows == 0 || i < rows); ++i) {
        const auto& r = entries[i];
        std::fprintf(out, "%8.2f %7.2f %11.1f  %s\n", r.share.percent, r.share.stderr_pp, r.weight, r.key.c_str());
    }
}

// Which standard errors the rows give (the header line's end): report's two kinds, and with
// decay the effective number of bursts, the k of the bursts' variance (core/decay.h).
std::string errors_text(const core::DecayingTally::Errors& errors, bool decayed)
{
    if (errors.bursts == 0)
        return ", errors binomial";
    if (errors.effective_bursts < 2)   // decay forgets all but the newest burst or two
        return ", errors binomial: under 2 effective bursts of " + std::to_string(errors.bursts) +
               ", too few for their spread (a longer --decay)";
    std::string text = ", errors from the spread between " + std::to_string(errors.bursts) + " bursts";
    if (decayed)
        text += " (effective " + std::to_string(std::lround(errors.effective_bursts)) + ")";
    if (errors.effective_bursts < 20)
        text += ", rough: fewer than 20";
    return text;
}

// One table: a header line with the rate and duty since the previous frame, then the rows.
void print_frame(std::FILE* out, const Frame& now, const Frame& before, double elapsed, const std::string& ended,
                 const std::optional<HalfLife>& half_life, size_t rows, const std::string& heading, bool stacks)
{
    const double wall = now.wall_seconds - before.wall_seconds;
    const double rate = wall > 0 ? double(now.samples - before.samples) / wall : 0;
    const double duty = wall > 0 ? (now.running_seconds - before.running_seconds) / wall : 0;
    std::fprintf(out, "top %.2f s%s: %llu samples, %.0f samples/s, target running %.1f %%, effective samples %.0f",
                 elapsed, ended.empty() ? "" : (" (end: " + ended + ")").c_str(),
                 static_cast<unsigned long long>(now.samples), rate, 100.0 * duty, now.effective);
    if (half_life)
        std::fprintf(out, ", half-life %s%s", half_life->text.c_str(), half_life->in_samples ? " samples" : "");
    std::fputs(errors_text(now.errors, half_life.has_value()).c_str(), out);
    if (stacks) {   // the inclusive share beside the self share, as report --stacks shows it
        std::fprintf(out, "\n       %%    +-se  incl %%    +-se      weight  function\n");
        for (size_t i = 0; i < now.rows.size() && (rows == 0 || i < rows); ++i) {
            const auto& r = now.rows[i];
            std::fprintf(out, "%8.2f %7.2f %7.2f %7.2f %11.1f  %s\n", r.share.percent, r.share.stderr_pp,
                         r.inclusive.percent, r.inclusive.stderr_pp, r.weight, r.key.c_str());
        }
        return;
    }
    print_rows(out, now.rows, rows, heading);
    for (const auto& [core, core_rows] : now.cores) {
        std::fprintf(out, "core %u:", core);
        print_rows(out, core_rows, rows, heading);
    }
}

// Runs the sampler on a thread of its own and calls `refresh` every `period` until it ends;
// returns its figures, or throws what it threw.
sources::SamplerStats sample_while_refreshing(sources::SampleSource& source, sources::SampleSink& sink,
                                             const sources::SamplingPlan& plan, std::chrono::nanoseconds period,
                                             const std::function<void()>& refresh)
{
    std::mutex done_mutex;
    std::condition_variable done_changed;
    bool done = false;
    sources::SamplerStats stats;
    std::exception_ptr failure;
    std::thread sampling_thread([&] {
        try {
            stats = source.run(sink, plan, StopOnSignal::requested);
        } catch (...) {
            failure = std::current_exception();
        }
        std::lock_guard<std::mutex> lock(done_mutex);
        done = true;
        done_changed.notify_all();
    });
    {
        std::unique_lock<std::mutex> lock(done_mutex);
        Clock::time_point next = Clock::now() + period;
        while (!done_changed.wait_until(lock, next, [&] { return done; })) {
            lock.unlock();
            refresh();
            lock.lock();
            next += period;
        }
    }
    sampling_thread.join();
    if (failure)
        std::rethrow_exception(failure);
    return stats;
}

struct TopOptions {
    SamplingOptions sampling;   // as given
    LiveSampling live;          // typed and checked, before the ELF is opened
    std::vector<std::string> elves;   // --elf: the main image first
    std::optional<HalfLife> half_life;
    std::chrono::nanoseconds refresh{};
    std::string samples_file;
    std::string by = "function";   // function, task or var:NAME
    size_t rows = 20;
    bool by_task() const { return by == "task"; }
    // The rows' heading: function, task, or the variable's name.
    std::string heading() const
    {
        const std::string_view variable = core::variable_of_grouping(by);
        return variable.empty() ? by : std::string(variable);
    }
};

const char* const top_usage =
    "usage: mcuprof top --gdb HOST:PORT|DEVICE --elf ELF [--decay HALF_LIFE]\n"
    "       mcuprof top --openocd HOST[:PORT] --mode halt|pcsr|pcsr,halt\n"
    "                   --elf ELF [options]\n"
    "       mcuprof top --qemu MACHINE --elf ELF [--qemu-arg ARG ...] [options]\n\n"
    "Samples running firmware as record does and shows the hottest functions live,\n"
    "with their shares, standard errors, the sampling rate and the share of time the\n"
    "target ran. On a terminal the view is redrawn in place; otherwise one table is\n"
    "printed per refresh. Runs until --samples or --duration, the target's exit, or\n"
    "Ctrl-C; the target is always left running.";

// Parses and checks every option, the ELF and the samples file, before the link is
// touched. False when --help was shown.
bool parse_top_options(const Arguments& args, TopOptions& o)
{
    CommandLine line("top", top_usage);
    std::string decay, refresh = "1s";
    add_sampling_options(line.description(), o.sampling);
    add_elf_option(line, o.elves, "firmware ELF that runs (required)");
    line.options()
        ("decay", po::value(&decay)->value_name("HALF_LIFE"),
         "forget old samples: each one's weight halves every HALF_LIFE, a time (2s, 500ms: sampling time) or a "
         "count (500: samples); error bars from the effective sample count")
        ("refresh", po::value(&refresh)->value_name("TIME")->default_value("1s"), "redraw this often")
        ("by", po::value(&o.by)->value_name("KEY")->default_value("function"),
         "rank functions, tasks (the running task of an RTOS the ELF's DWARF shows, e.g. FreeRTOS), or var:NAME "
         "(the value of the global NAME at each halt, named by its enumerators)")
        ("rows", whole_number(o.rows, "rows")->value_name("N"), "show the N hottest functions (0: all; default 20)")
        ("output,o", po::value(&o.samples_file)->value_name("FILE"),
         "also keep the samples in FILE (a samples file, as record writes)");
    if (!line.parse(args))
        return false;
    line.require("elf", "the ELF of the firmware that runs");
    if (o.by != "function" && o.by != "task" && core::variable_of_grouping(o.by).empty())
        throw UsageError("--by takes function, task or var:NAME, not '" + o.by + "'");
    o.live = check_sampling_options(line, o.sampling, o.by);
    o.half_life = parse_half_life(decay);
    o.refresh = parse_duration(refresh, "--refresh");
    if (!o.samples_file.empty())
        check_writable(o.samples_file);
    return true;
}

} // namespace

int top_command(const Arguments& args)
{
    TopOptions o;
    if (!parse_top_options(args, o))
        return 0;
    const core::ImageSet images = core::ImageSet::open(o.elves);   // a wrong ELF before the link
    for (const std::string& note : images.notes())
        std::fprintf(stderr, "mcuprof top: warning: %s\n", note.c_str());
    const core::SymbolTable& symbols = images.symbols();
    // Read at each halt, as record does.
    const std::optional<sources::WatchedVariable> variable = check_live_grouping(images.main(), o.by);
    const std::unique_ptr<sources::SampleSource> source = make_sample_source(o.live, variable, images);
    const sources::SamplingPlan plan = o.live.plan(0);

    const sources::RunHeader header = sources::recording_header(*source, images);
    std::unique_ptr<sources::RecordingWriter> writer;
    if (!o.samples_file.empty())
        writer = std::make_unique<sources::RecordingWriter>(o.samples_file, header);
    std::optional<sources::RecordingSink> recording;
    if (writer)
        recording.emplace(*writer);
    TopSink sink(symbols, o.by_task(), variable, o.half_life, recording ? &*recording : nullptr, header);
    const bool terminal = ::isatty(STDOUT_FILENO) != 0;
    if (header.bias && !header.bias->empty())
        std::fprintf(stderr, "mcuprof top: warning: %s\n", header.bias->c_str());

    const StopOnSignal stop;
    // A reader that goes away (top | head) must end the sampling cleanly, with the target
    // running, rather than kill the process by SIGPIPE between a halt and its resume.
    const IgnoreBrokenPipe ignore_broken_pipe;
    const Clock::time_point start = Clock::now();
    Frame before;
    auto show = [&](const std::string& ended) {
        const Frame now = sink.frame();
        const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        if (terminal)
            std::fputs("\x1b[H\x1b[2J", stdout);   // cursor home, clear screen (ECMA-48 CUP, ED)
        print_frame(stdout, now, before, elapsed, ended, o.half_life, o.rows, o.heading(),
                    o.live.stack_window.has_value() && o.by == "function");
        if (!terminal)
            std::fputc('\n', stdout);
        if (std::fflush(stdout) != 0 || std::ferror(stdout))
            StopOnSignal::requested.store(true);   // nobody reads any more
        before = now;
    };
    const sources::SamplerStats stats = sample_while_refreshing(*source, sink, plan, o.refresh, [&] { show(""); });
    if (writer) {
        writer->summary(stats.figures());
        writer->flush();
    }
    before = Frame{};   // the last table's rate and duty are over the whole run
    show(stats.end_reason);
    if (auto intrusion = core::intrusion_warning(stats.figures()))
        std::fprintf(stderr, "mcuprof top: warning: %s\n", intrusion->c_str());
    if (stats.samples == 0)
        throw sources::Error(!o.sampling.qemu.machine.empty() ? "qemu " + o.sampling.qemu.machine
                             : !o.sampling.stlink.empty() ? "--stlink " + o.sampling.stlink
                             : !o.sampling.chip.empty()   ? "--chip " + o.sampling.chip
                             : o.sampling.gdb.empty()     ? o.sampling.openocd
                                                          : o.sampling.gdb,
                             "",
                             "no samples were taken: " + stats.end_reason);
    if (stats.link_lost || stats.failed) {
        // As record: a run cut short says so last and in the exit code.
        std::fprintf(stderr, "mcuprof top: stopped early, %s\n", stats.end_reason.c_str());
        return stats.link_lost ? exit_link_lost : exit_runtime_error;
    }
    return 0;
}

} // namespace mcuprof::cli
