#include "mcuprof/sampler/sampling_loop.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <thread>
#include <utility>

#include "mcuprof/inputs/error.h"
#include "mcuprof/inputs/text_file.h"
#include "mcuprof/vprobe_signature.h"
#include "mcuprof/link/error.h"
#include "mcuprof/link/qmp_client.h"
#include "mcuprof/cortex_m.h"
#include "mcuprof/hex.h"

namespace mcuprof::sources {
namespace {

double seconds_between(Clock::time_point a, Clock::time_point b)
{
    return std::chrono::duration<double>(b - a).count();
}

// One run of the loop: the figures, the running-time accounting and the extras' state.
class Loop {
public:
    Loop(HaltingTarget& target, const PacingOptions& pacing, uint64_t seed, const HaltExtras& extras,
         ReplayClock* replay, SampleSink& sink, const SamplingPlan& plan, const std::atomic<bool>& stop)
        : target_(target), pacing_(pacing), intervals_(pacing.interval, pacing.shape, pacing.jitter, seed),
          replay_(replay), sink_(sink), plan_(plan), stop_(stop)
    {
        if (extras.stacks)
            stacks_.emplace(*extras.stacks);
        if (extras.tasks)
            tasks_.emplace(*extras.tasks);
        firmware_check_ = extras.firmware_check;
        variable_ = extras.variable;
    }

    SamplerStats run()
    {
        try {
            say_unsampled_cores();
            if (firmware_check_)
                check_firmware(*firmware_check_);
            switch (pacing_.pacing) {
            case Pacing::wall: by_wall_clock(); break;
            case Pacing::icount: by_instruction_count(); break;
            case Pacing::pcsr:
                if (!pcsr_batches())
                    by_wall_clock();   // no DWT_PCSR, and --mode pcsr,halt: halts instead
                break;
            }
            count_probe_commands();
            if (paused_since_) {
                sink_.event("paused-end", "still paused at the end, for the last " +
                                              std::to_string(int(seconds_between(*paused_since_, Clock::now()))) + " s");
                paused_since_.reset();
            }
            // The target runs while the link checks that it does.
            if (!stats_.target_exited)
                target_.leave_running(sink_, false);
        } catch (const transport::Error& e) {
            // The server refused a command: the link is up, unless the server has lost the target.
            count_probe_commands();
            const bool refused = target_.link_survives(e);
            if (refused && target_.reaches_target()) {
                stats_.end_reason = target_.server() + " reported an error: " + e.what();
                stats_.failed = true;
                sink_.event("error", stats_.end_reason);
            } else {
                stats_.link_lost = true;
                stats_.end_reason = std::string("the link was lost: ") +
                                    (refused ? target_.server() + " no longer reaches the target, after: " : "") +
                                    e.what();
                sink_.event("link-lost", stats_.end_reason);
            }
            target_.leave_running(sink_, stats_.link_lost);
        } catch (const Error&) {
            // A refusal before the first sample (a target that does not run the ELF, a core
            // without DWT_PCSR): the target was left running, nothing was sampled; the error
            // goes on to the CLI edge (exit 2).
            throw;
        } catch (const std::exception& e) {
            // A defect of mcuprof's own (a reply it misread, say): the target is still left
            // running, the samples so far are in the sink, and the error goes on to the CLI
            // edge, which names it as mcuprof's.
            sink_.event("error", std::string("mcuprof's own error: ") + e.what());
            try {
                target_.leave_running(sink_, false);
            } catch (const std::exception&) {
                // the link itself is gone: nothing is halted by a link that cannot reach it
            }
            throw;
        }
        const Clock::time_point end = Clock::now();
        ran_until(end);
        stats_.wall_seconds = seconds_between(start_, end);
        stats_.running_seconds = ran_seconds_;
        if (stats_.pcsr)   // also after an error: the reads made until then
            target_.account_pcsr(*stats_.pcsr);
        if (pacing_.max_halted)
            stats_.halt_budget = core::HaltBudgetFigures{*pacing_.max_halted, longest_halt_, longest_mean_wait_};
        if (stacks_)
            stats_.stacks = core::StackFigures{stats_.samples ? double(frames_) / stats_.samples : 0.0,
                                               stats_.samples ? double(memory_reads_) / stats_.samples : 0.0,
                                               unwind_stops_};
        return stats_;
    }

private:
    // Never silent: the cores the link shows and this run does not sample, named in an event
    // that every report of the recording shows.
    void say_unsampled_cores()
    {
        const std::vector<std::string> others = target_.unsampled_cores();
        if (others.empty())
            return;
        std::string names;
        for (const std::string& name : others)
            names += (names.empty() ? "" : ", ") + name;
        sink_.event("cores-not-sampled", "not sampled: " + names + " (" + target_.server() +
                                             " has more cores than this link samples; docs/live.md, \"Several cores\")");
    }

    // Before the first sample: the target against the ELF. A mismatch leaves the target
    // running and ends the command (exit 2), unless --no-verify made it a warning.
    void check_firmware(const FirmwareCheck& check)
    {
        const FirmwareCheckResult result = check_target(target_, check);
        if (result.matches) {
            sink_.event("firmware-verified", result.message);
            return;
        }
        if (check.warn_only) {
            sink_.event("firmware-mismatch", "warning: " + result.message + " (--no-verify)");
            return;
        }
        target_.leave_running(sink_, false);
        throw Error(check.elf, "target", result.message + " (--no-verify samples it anyway)");
    }

    // The plan and the stop flag: true (with the end reason) when sampling is over.
    bool done()
    {
        if (stop_.load())
            stats_.end_reason = "interrupted by a signal";
        else if (plan_.samples && stats_.samples >= *plan_.samples)
            stats_.end_reason = "sample count reached";
        else if (plan_.duration && Clock::now() - start_ >= *plan_.duration)
            stats_.end_reason = "duration reached";
        else
            return false;
        return true;
    }

    // The random wait. The socket's own wait cannot serve: epoll rounds sub-millisecond
    // time-outs up to a whole millisecond. Below a microsecond the sleep's own cost (timer
    // slack, ~50 us) would be the interval: go straight on. Returns whether it slept.
    bool sleep()
    {
        const auto wait = std::chrono::duration<double>(intervals_.next());
        if (wait < std::chrono::microseconds(1))
            return false;
        std::this_thread::sleep_until(Clock::now() + std::chrono::duration_cast<Clock::duration>(wait));
        return true;
    }

    // The link's commands from the target's start for sampling to the last sample's resume:
    // the samples' own cost, not the firmware check's or the end's.
    void count_probe_commands()
    {
        if (const auto commands = target_.probe_commands(); commands && probe_commands_before_)
            stats_.probe_commands = *commands - *probe_commands_before_;
    }

    void running_from(Clock::time_point t)
    {
        running_since_ = t;
        running_ = true;
    }
    void resume()
    {
        running_from(Clock::now());
        target_.resume();
    }
    void ran_until(Clock::time_point t)
    {
        if (running_)
            ran_seconds_ += seconds_between(running_since_, t);
        running_ = false;
    }
    void finished(const TargetEnd& end)
    {
        stats_.end_reason = end.description;
        stats_.target_exited = end.exited;
        sink_.event(end.exited ? "target-exit" : "target-stop", end.description);
    }
    void progress(Clock::time_point now)
    {
        stats_.wall_seconds = seconds_between(start_, now);
        stats_.running_seconds = ran_seconds_ + (running_ ? seconds_between(running_since_, now) : 0.0);
        sink_.progress(stats_);
    }

    // What every halt reads: the running task's pointer, the kernel's started flag and the
    // stack window ride along with the registers' round trip.
    HaltRequest request()
    {
        HaltRequest r;
        if (tasks_)
            tasks_->add_to(r);
        if (variable_)
            variable_->add_to(r);
        if (stacks_)
            stacks_->add_to(r);
        return r;
    }

    // A core's sample of a halt: its time, registers, and whether the halt found it asleep.
    LiveSample sample_of(const HaltState& state, Clock::time_point stopped, uint32_t core) const
    {
        const core::CoreRegisters& registers = core == 0 ? state.registers : state.other_cores[core - 1];
        LiveSample s;
        s.found_asleep = core < state.asleep.size() && state.asleep[core];
        s.time_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(stopped - start_).count());
        s.pc = registers.r[cortex_m::core_reg::pc];
        s.lr = registers.r[cortex_m::core_reg::lr];
        s.sp = registers.r[cortex_m::core_reg::sp];
        s.xpsr = registers.xpsr;
        s.core = core;
        if (core > 0 && core <= state.stop_after.size())
            s.stop_after = state.stop_after[core - 1];
        return s;
    }

    void unwind_into(LiveSample& s, StackReader& reader, HaltState& state)
    {
        const UnwoundHalt halt = reader.unwind(state, target_);
        s.stack = halt.unwound.stack;
        ++unwind_stops_[std::string(core::describe(halt.unwound.stop))];
        memory_reads_ += halt.memory_reads;
        frames_ += halt.unwound.stack.callers.size();
    }

    // A core's running task, from the pointers core 0's state read; none before the scheduler starts.
    void tag(LiveSample& s, const HaltState& state, size_t core)
    {
        if (!tasks_)
            return;
        if (auto task = tasks_->running(state, target_, core)) {
            s.tag = task->control_block;
            s.tagged = true;
            if (task->name_added)
                sink_.task(task->control_block, *task->name);
        }
    }

    // The samples of one halt: one per core, all at the halt's time, core 0's first. Each is
    // unwound by a stack reader of its core's own (its stack window follows that core's SP);
    // each is tagged with its own core's running task where the kernel keeps one per core (an
    // SMP kernel; core 0's pointer read in the halt's round trip gives every core's).
    void take(HaltState& state, Clock::time_point asked, Clock::time_point stopped)
    {
        stats_.halt_latency_us.push_back(1e6 * seconds_between(asked, stopped));
        LiveSample s = sample_of(state, stopped, 0);
        if (stacks_)
            unwind_into(s, *stacks_, state);
        if (variable_)
            s.value = variable_->value_at(state);
        tag(s, state, 0);
        sink_.sample(s);
        for (size_t core = 1; core <= state.other_cores.size(); ++core) {
            LiveSample other = sample_of(state, stopped, uint32_t(core));
            if (stacks_) {
                while (other_stacks_.size() < core)
                    other_stacks_.push_back(stacks_->fresh());
                HaltState alone;
                alone.registers = state.other_cores[core - 1];
                if (core <= state.other_stack_windows.size())
                    alone.stack_window = std::move(state.other_stack_windows[core - 1]);
                target_.select_core(core);
                unwind_into(other, other_stacks_[core - 1], alone);
            }
            other.value = s.value;   // a global variable: one memory, the same value for every core
            tag(other, state, core);
            sink_.sample(other);
        }
        if (!state.other_cores.empty())
            target_.select_core(0);
        ++stats_.samples;
        progress(stopped);
    }

    // Wall-clock pacing: wait, halt, read, resume.
    void by_wall_clock()
    {
        if (!running_) {
            target_.start(sink_);
            probe_commands_before_ = target_.probe_commands();
            running_from(Clock::now());
        }
        while (!done()) {
            if (sleep()) {
                // A stop reply the target sent meanwhile: it exited, or stopped by itself.
                if (auto early = target_.poll_stop()) {
                    ran_until(Clock::now());
                    finished(*early);
                    if (stats_.target_exited)
                        return;
                    resume();
                    continue;
                }
                if (done())
                    return;
            }
            const Clock::time_point asked = Clock::now();
            Halt halt = target_.halt_and_read(request());
            if (halt.yielded) {
                paused(*halt.yielded);
                continue;
            }
            if (paused_since_)
                pause_over();
            ran_until(halt.ran_until);
            if (halt.ended) {
                finished(*halt.ended);
                return;
            }
            if (halt.running)
                running_from(halt.stopped);
            take(halt.state, asked, halt.stopped);
            if (!running_)
                resume();
            longest_halt_ = std::max(longest_halt_, seconds_between(halt.ran_until, running_since_));
            budget_next_wait();
        }
    }

    // The core is another program's (a debugger on the same probe): no halts until it is
    // ours again, asked at most every 50 ms however short --interval is. The sampler's clock
    // counts the pause as running: run_duty is the share of the time the sampler did not
    // hold the core halted.
    void paused(const std::string& why)
    {
        const Clock::time_point now = Clock::now();
        if (!paused_since_) {
            paused_since_ = now;
            sink_.event("paused", why + "; sampling paused until it closes the probe");
        }
        progress(now);
        std::this_thread::sleep_until(now + std::chrono::milliseconds(50));
    }
    void pause_over()
    {
        char text[160];
        std::snprintf(text, sizeof text, "the probe is this sampler's alone again after %.1f s: sampling again",
                      seconds_between(*paused_since_, Clock::now()));
        sink_.event("paused-end", text);
        paused_since_.reset();
    }

    // --max-halted B: the mean of the next wait. With D the halted and R the running time so
    // far and d the mean halt, the wait is to bring R to (D + d)(1 - B) / B, the running time
    // that keeps D + d under B of the wall time: it makes up what the last wait fell short
    // and budgets the next halt. Never below the --interval mean. Only the mean changes: each
    // wait is still drawn at random from it (docs/live.md, "A budget for the halted share").
    void budget_next_wait()
    {
        if (!pacing_.max_halted)
            return;
        const double budget = *pacing_.max_halted;
        const Clock::time_point now = Clock::now();
        const double ran = ran_seconds_ + (running_ ? seconds_between(running_since_, now) : 0.0);
        const double halted = seconds_between(start_, now) - ran;
        const double next_halt = halted / double(std::max<uint64_t>(1, stats_.samples));
        const double mean = std::max(pacing_.interval, (halted + next_halt) * (1 - budget) / budget - ran);
        intervals_.set_mean(mean);
        longest_mean_wait_ = std::max(longest_mean_wait_, mean);
    }

    // Instruction-count pacing: the guest is stopped here: set the break, then let it run
    // into it. The stop lands exactly on the instruction count, whatever QEMU's host timing.
    // The break goes through the GDB connection (qRcmd, HMP replay_break): on QEMU 7.2 the
    // first QMP command after a stop waits about 44 ms (measured), the monitor command
    // 0.1 ms. The count is tracked here, not asked for.
    void by_instruction_count()
    {
        uint64_t icount = replay_->now();
        while (!done()) {
            const uint64_t next = icount + std::max<uint64_t>(1, uint64_t(std::llround(intervals_.next())));
            // The guest's count: the interval plus the instructions the debugger itself
            // stepped at the halts (the stack-pointer stub).
            const uint64_t guest_next = next + target_.instructions_stepped();
            if (plan_.instructions && guest_next >= *plan_.instructions) {
                stats_.end_reason = "the end of the recorded run (" + std::to_string(*plan_.instructions) +
                                    " instructions)";
                break;
            }
            icount = next;
            target_.monitor("replay_break " + std::to_string(guest_next));
            resume();
            const Clock::time_point asked = Clock::now();
            const std::optional<TargetEnd> end = target_.wait_stop(std::chrono::seconds(60));
            const Clock::time_point stopped = Clock::now();
            ran_until(stopped);
            if (end) {
                finished(*end);
                return;
            }
            HaltState state = target_.read_halt_state(request());
            take(state, asked, stopped);
        }
        if (stats_.samples > 0) {
            const uint64_t reported = replay_->now();
            icount += target_.instructions_stepped();
            if (reported != icount)
                sink_.event("pacing", "replay stops did not land where they were set: expected instruction " +
                                          std::to_string(icount) + ", QEMU reports " + std::to_string(reported));
        }
    }

    // DWT_PCSR batches while the core runs; false when a core has none and the pacing falls
    // back to halts. Without the fallback such a core is refused before the first sample.
    bool pcsr_batches()
    {
        target_.start(sink_);
        running_from(Clock::now());
        PcsrSetUp set_up(sink_);
        const bool enabled = target_.enable_pcsr(set_up);
        if (!enabled) {
            const std::string why = no_pcsr_text(set_up.missing.value_or(NoPcsr{}));
            if (!pacing_.pcsr_fallback) {
                target_.leave_running(sink_, false);
                throw Error(target_.peer(), "--mode pcsr",
                            why + ": --mode halt samples it by halting, --mode pcsr,halt falls back by itself");
            }
            sink_.event("fallback", why + ": sampling in halt mode instead (--mode pcsr,halt)");
            target_.fall_back_to_halts(sink_);
        }
        probe_commands_before_ = target_.probe_commands();   // the batches' own (or the fallback's halts)
        if (!enabled)
            return false;
        const unsigned batch = std::max(1u, pacing_.batch);
        stats_.pcsr = PcsrStats{batch, 0, 0, {}, std::nullopt};
        auto time_of = [&](Clock::time_point t) {
            return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(t - start_).count());
        };
        while (!done()) {
            sleep();
            if (done())
                break;
            const uint64_t wanted = plan_.samples ? *plan_.samples - stats_.samples : batch;
            const unsigned count = unsigned(std::min<uint64_t>(batch, wanted));
            const Clock::time_point asked = Clock::now();
            // Several cores: `count` rounds of one read per core, core 0's first (--samples
            // counts rounds, as it counts halts).
            const size_t cores = std::max<size_t>(1, target_.pcsr_cores());
            const std::vector<uint32_t> pcs = target_.read_pcsr(count);
            const Clock::time_point answered = Clock::now();
            stats_.pcsr->round_trip_us.push_back(1e6 * seconds_between(asked, answered));
            stats_.pcsr->reads += pcs.size();
            bool first = true;   // of this batch's samples: the batch is one burst (split per core by the reports)
            bool round_sampled = false;   // a round counts when it gave a sample
            for (size_t i = 0; i < pcs.size(); ++i) {
                const bool round_ends = i % cores == cores - 1 || i + 1 == pcs.size();
                if (pcs[i] == 0xFFFFFFFF) {   // the core was halted (by someone else)
                    ++stats_.pcsr->halted_reads;
                } else {
                    round_sampled = true;
                    LiveSample s;
                    s.pc = pcs[i];
                    s.core = uint32_t(i % cores);
                    s.starts_burst = std::exchange(first, false);
                    // Spread over the round trip: the reads follow one another evenly.
                    s.time_ns = time_of(asked) + uint64_t(double(time_of(answered) - time_of(asked)) *
                                                          (double(i) + 0.5) / double(pcs.size()));
                    sink_.sample(s);
                }
                if (round_ends && std::exchange(round_sampled, false))
                    ++stats_.samples;
            }
            progress(answered);
        }
        if (stats_.pcsr->halted_reads > 0)
            sink_.event("pcsr", std::to_string(stats_.pcsr->reads) + " DWT_PCSR reads, " +
                                    std::to_string(stats_.pcsr->halted_reads) +
                                    " of them 0xFFFFFFFF (core halted) dropped");
        return true;
    }

    // What enable_pcsr announces, passed on to the sink, and the core it found without DWT_PCSR.
    struct PcsrSetUp : TargetEvents {
        explicit PcsrSetUp(TargetEvents& sink) : sink(sink) {}
        void event(const std::string& kind, const std::string& message) override { sink.event(kind, message); }
        void no_pcsr(const NoPcsr& core) override { missing = core; }
        TargetEvents& sink;
        std::optional<NoPcsr> missing;
    };

    // Why there are no DWT_PCSR reads: the core, and its part where CPUID names one.
    std::string no_pcsr_text(const NoPcsr& missing) const
    {
        if (missing.core.empty())
            return "DWT_PCSR is not read over " + target_.server();
        std::string part;
        if (missing.cpuid) {
            const std::string name = cortex_m_name(*missing.cpuid);
            part = (name.empty() ? "" : name + ", ") + "CPUID " + hex32(*missing.cpuid) + "; ";
        }
        return "DWT_PCSR reads 0 on " + missing.core + " (" + part +
               "no PC sampling register: a part built without the DWT)";
    }

    HaltingTarget& target_;
    const PacingOptions& pacing_;
    IntervalGenerator intervals_;
    ReplayClock* replay_;
    SampleSink& sink_;
    const SamplingPlan& plan_;
    const std::atomic<bool>& stop_;
    std::optional<StackReader> stacks_;
    std::vector<StackReader> other_stacks_;   // cores 1, 2, ... of a multi-core target
    std::optional<TaskNames> tasks_;
    std::optional<WatchedVariable> variable_;
    std::optional<FirmwareCheck> firmware_check_;

    SamplerStats stats_;
    const Clock::time_point start_ = Clock::now();
    bool running_ = false;   // the target runs, since running_since_
    Clock::time_point running_since_;
    double ran_seconds_ = 0;
    std::map<std::string, uint64_t> unwind_stops_;   // how each chain ended
    std::optional<Clock::time_point> paused_since_;   // the core is another program's (paused())
    uint64_t memory_reads_ = 0;
    uint64_t frames_ = 0;
    double longest_halt_ = 0;        // seconds, --max-halted's figures
    std::optional<uint64_t> probe_commands_before_;   // the link's count when sampling began
    double longest_mean_wait_ = 0;
};

} // namespace

uint64_t PacingOptions::resolved_seed() const
{
    return seed != 0 ? seed : std::random_device{}();
}

RunHeader::Pacing PacingOptions::header() const
{
    RunHeader::Pacing p;
    p.clock = pacing == Pacing::icount ? PacingClock::icount : PacingClock::wall;
    p.shape = shape;
    if (pacing == Pacing::icount) {
        p.mean_instructions = interval;
    } else {
        p.mean_seconds = interval;
        p.between = pacing == Pacing::pcsr ? PacedBetween::batches : PacedBetween::samples;
    }
    if (pacing == Pacing::pcsr) {
        p.batch = batch;
        p.note = "DWT_PCSR is read " + std::to_string(batch) +
                 " times back to back by a loop in OpenOCD's Tcl, which cannot randomize; "
                 "only the host-side waits between batches are random";
    }
    if (shape == IntervalGenerator::Shape::uniform)
        p.jitter = jitter;
    p.max_halted = max_halted;
    return p;
}

ReplayClock::ReplayClock(HaltingTarget& target, const std::optional<transport::Endpoint>& qmp,
                         transport::Duration timeout)
    : target_(target)
{
    if (qmp) {
        qmp_ = std::make_unique<transport::QmpClient>(*qmp, timeout);
        const nlohmann::json replay = qmp_->execute("query-replay");
        if (replay.value("mode", "") != "play")
            throw transport::Error(transport::Error::Kind::protocol, "qmp " + qmp->text(), "query-replay",
                                   "QEMU is not replaying a recording (mode '" + replay.value("mode", "?") +
                                       "'): pacing by instructions needs -icount shift=0,rr=replay,rrfile=FILE");
    } else {
        now();   // checks that QEMU replays
    }
}

ReplayClock::~ReplayClock() = default;

uint64_t ReplayClock::now()
{
    if (qmp_)
        return qmp_->execute("query-replay").value("icount", uint64_t(0));
    // Without QMP, QEMU's monitor through the GDB connection (HMP "info replay") says
    // "Replaying execution 'FILE': instruction count = N".
    const std::string text = target_.monitor("info replay");
    const std::optional<uint64_t> count = decimal_after(text, "instruction count = ");
    if (text.rfind("Replaying", 0) != 0 || !count)
        throw transport::Error(transport::Error::Kind::protocol, target_.peer(), "info replay",
                               "QEMU is not replaying a recording ('" + text.substr(0, 60) +
                                   "'): pacing by instructions needs -icount shift=0,rr=replay,rrfile=FILE");
    return *count;
}

SamplerStats run_sampling_loop(HaltingTarget& target, const PacingOptions& pacing, uint64_t seed,
                               const HaltExtras& extras, ReplayClock* replay, SampleSink& sink,
                               const SamplingPlan& plan, const std::atomic<bool>& stop)
{
    return Loop(target, pacing, seed, extras, replay, sink, plan, stop).run();
}

LiveSampler::LiveSampler(std::unique_ptr<HaltingTarget> target, const PacingOptions& pacing,
                         const HaltExtras& extras, transport::Duration timeout)
    : target_(std::move(target)), pacing_(pacing), seed_(pacing.resolved_seed()), extras_(extras)
{
    if (pacing_.pacing == Pacing::icount)
        replay_ = std::make_unique<ReplayClock>(*target_, pacing_.qmp, timeout);
    // Which probe: two words a real chip reads as zero (an empty string: unreadable).
    if (!target_->link_header().server_is_qemu) {
        const std::string mark = target_->read_memory(vprobe_signature::address, sizeof vprobe_signature::words);
        behind_vprobe_ = mark.size() == sizeof vprobe_signature::words &&
                         std::memcmp(mark.data(), vprobe_signature::words, mark.size()) == 0;
    }
}

LiveSampler::~LiveSampler() = default;

RunHeader LiveSampler::run_header() const
{
    RunHeader h;
    h.link = target_->link_header();
    h.method = pacing_.pacing == Pacing::pcsr ? SampleMethod::pcsr : SampleMethod::halt;
    h.seed = seed_;
    h.pacing = pacing_.header();
    if (pacing_.pacing == Pacing::icount && pacing_.qmp)
        h.qmp = pacing_.qmp->text();
    if (h.link.server_is_qemu && pacing_.pacing == Pacing::wall)
        h.bias = emulator_bias_warning;
    if (behind_vprobe_) {
        h.probe = "mcuprof vprobe";
        if (pacing_.pacing != Pacing::icount)
            h.bias = std::string(h.link.source == LinkKind::stlink ? vprobe_stlink_bias_prefix : vprobe_bias_prefix) +
                     emulator_bias_warning;
    }
    if (extras_.variable)
        h.variable = *extras_.variable;
    return h;
}

SamplerStats LiveSampler::run(SampleSink& sink, const SamplingPlan& plan, const std::atomic<bool>& stop)
{
    return run_sampling_loop(*target_, pacing_, seed_, extras_, replay_.get(), sink, plan, stop);
}

} // namespace mcuprof::sources
