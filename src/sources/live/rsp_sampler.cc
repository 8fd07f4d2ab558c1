#include "mcuprof/sources/rsp_sampler.h"

#include <cmath>
#include <map>
#include <thread>

#include "mcuprof/sources/error.h"
#include "mcuprof/transport/error.h"
#include "mcuprof/transport/qmp_client.h"

namespace mcuprof::sources {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b)
{
    return std::chrono::duration<double>(b - a).count();
}

// The registers read at every halt. IPSR, bits 8:0 of xPSR, tells a handler (exception
// number) from thread mode (0); LR and SP start the unwinder (ARMv7-M ARM, B1.4.2).
const std::vector<std::string> sampled_registers = {"pc", "lr", "sp", "xpsr"};

std::string describe_stop(const transport::StopReply& s)
{
    switch (s.kind) {
    case transport::StopReply::Kind::exited: return "the target exited with code " + std::to_string(s.value);
    case transport::StopReply::Kind::terminated: return "the target was terminated by signal " + std::to_string(s.value);
    case transport::StopReply::Kind::signal: break;
    }
    return "the target stopped by itself (signal " + std::to_string(s.value) + ")";
}

} // namespace

RspHaltingSampler::RspHaltingSampler(const RspSamplerOptions& options)
    : options_(options), seed_(options.seed != 0 ? options.seed : std::random_device{}())
{
    transport::RspClient::Options rsp;
    rsp.timeout = options.timeout;
    gdb_ = std::make_unique<transport::RspClient>(options.gdb, rsp);
    initial_stop_ = gdb_->handshake();
    if (initial_stop_.kind != transport::StopReply::Kind::signal)
        throw transport::Error(transport::Error::Kind::protocol, gdb_->peer(), "", describe_stop(initial_stop_));
    if (options.qmp) {
        qmp_ = std::make_unique<transport::QmpClient>(*options.qmp, options.timeout);
        const nlohmann::json replay = qmp_->execute("query-replay");
        if (replay.value("mode", "") != "play")
            throw transport::Error(transport::Error::Kind::protocol, "qmp " + options.qmp->text(), "query-replay",
                                   "QEMU is not replaying a recording (mode '" + replay.value("mode", "?") +
                                       "'): pacing by instructions needs -icount shift=0,rr=replay,rrfile=FILE");
    } else if (options.pacing == Pacing::icount) {
        current_icount();   // checks that QEMU replays
    }
}

RspHaltingSampler::~RspHaltingSampler() = default;

nlohmann::json RspHaltingSampler::describe() const
{
    nlohmann::json d = {
        {"source", "gdb"},
        {"method", "halt"},
        {"gdb", options_.gdb.text()},
        {"seed", seed_},
    };
    const char* shape = options_.shape == IntervalGenerator::Shape::exponential ? "exponential"
                        : options_.shape == IntervalGenerator::Shape::uniform   ? "uniform"
                                                                                : "fixed";
    if (options_.pacing == Pacing::icount) {
        d["pacing"] = {{"clock", "icount"}, {"shape", shape}, {"mean_instructions", options_.interval}};
        if (options_.qmp)
            d["qmp"] = options_.qmp->text();
    } else {
        d["pacing"] = {{"clock", "wall"}, {"shape", shape}, {"mean_seconds", options_.interval}};
    }
    if (options_.shape == IntervalGenerator::Shape::uniform)
        d["pacing"]["jitter"] = options_.jitter;
    return d;
}

// The link dropped, perhaps not the server (a proxy, a network, a stub that closed one
// client): the target may be halted by our last interrupt. A new connection stops it (if
// it ran) and detaching resumes it; a server that is gone refuses at once.
void RspHaltingSampler::resume_over_a_new_link(SampleSink& sink)
{
    gdb_.reset();   // close the broken connection first: QEMU's gdbstub serves one client
    // A server may not have noticed the old client leave yet and drop the new one (QEMU
    // does, measured through the fault proxy): a few tries, 0.1 s apart.
    constexpr int attempts = 3;
    for (int attempt = 1;; ++attempt) {
        try {
            transport::RspClient::Options rsp;
            rsp.timeout = options_.timeout;
            transport::RspClient fresh(options_.gdb, rsp);
            fresh.handshake();
            fresh.detach();
            sink.event("resume", "reconnected to " + options_.gdb.text() + " and detached: the target runs");
            return;
        } catch (const transport::Error& e) {
            if (attempt == attempts || e.kind() == transport::Error::Kind::connect) {
                sink.event("resume-failed", std::string("could not reconnect to leave the target running: ") + e.what());
                return;
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

uint64_t RspHaltingSampler::current_icount()
{
    if (qmp_)
        return qmp_->execute("query-replay").value("icount", uint64_t(0));
    // Without QMP, QEMU's monitor through the GDB connection (HMP "info replay") says
    // "Replaying execution 'FILE': instruction count = N".
    const std::string text = gdb_->monitor("info replay");
    const size_t at = text.find("instruction count = ");
    if (text.rfind("Replaying", 0) != 0 || at == std::string::npos)
        throw transport::Error(transport::Error::Kind::protocol, gdb_->peer(), "info replay",
                               "QEMU is not replaying a recording ('" + text.substr(0, 60) +
                                   "'): pacing by instructions needs -icount shift=0,rr=replay,rrfile=FILE");
    return std::stoull(text.substr(at + 20));
}

SamplerStats RspHaltingSampler::run(SampleSink& sink, const SamplingPlan& plan, const std::atomic<bool>& stop)
{
    SamplerStats stats;
    IntervalGenerator intervals(options_.interval, options_.shape, options_.jitter, seed_);
    const Clock::time_point start = Clock::now();
    bool running = false;   // the target is running on our 'c'
    Clock::time_point resumed_at = start;

    auto resume = [&] {
        resumed_at = Clock::now();
        gdb_->resume();
        running = true;
    };
    auto halted = [&] {
        if (running)
            stats.running_seconds += seconds_between(resumed_at, Clock::now());
        running = false;
    };
    auto finished = [&](const transport::StopReply& s) {
        halted();
        stats.end_reason = describe_stop(s);
        stats.target_exited = s.kind != transport::StopReply::Kind::signal;
        sink.event(stats.target_exited ? "target-exit" : "target-stop", stats.end_reason);
    };

    std::optional<RspStackReader> stack_reader;
    std::map<std::string, uint64_t> unwind_stops;   // how each chain ended
    uint64_t memory_reads = 0;
    uint64_t frames = 0;
    if (options_.stacks)
        stack_reader.emplace(*gdb_, *options_.stacks);
    std::optional<TaskNames> task_names;
    if (options_.tasks)
        task_names.emplace(*options_.tasks);

    const bool icount_pacing = options_.pacing == Pacing::icount;
    uint64_t icount = 0;   // icount pacing: where the guest stands
    try {
        if (icount_pacing)
            icount = current_icount();
        else
            resume();   // icount pacing resumes only once its break is set
        for (;;) {
            if (stop.load()) {
                stats.end_reason = "interrupted by a signal";
                break;
            }
            if (plan.samples && stats.samples >= *plan.samples) {
                stats.end_reason = "sample count reached";
                break;
            }
            if (plan.duration && Clock::now() - start >= *plan.duration) {
                stats.end_reason = "duration reached";
                break;
            }

            transport::StopReply reply;
            Clock::time_point asked;
            if (icount_pacing) {
                // The guest is stopped here: set the break, then let it run into it. The
                // stop lands exactly on the instruction count, whatever QEMU's host timing.
                // The break goes through the GDB connection (qRcmd, HMP replay_break): on
                // QEMU 7.2 the first QMP command after a stop waits about 44 ms (measured),
                // the monitor command 0.1 ms. The count is tracked here, not asked for.
                const uint64_t step = std::max<uint64_t>(1, uint64_t(std::llround(intervals.next())));
                icount += step;
                gdb_->monitor("replay_break " + std::to_string(icount));
                resume();
                asked = Clock::now();
                reply = gdb_->wait_stop(std::chrono::seconds(60));
            } else {
                // Sleep, then look for a stop reply the target sent meanwhile (it exited).
                // The socket's own wait cannot serve: epoll rounds sub-millisecond
                // time-outs up to a whole millisecond.
                // Below a microsecond the sleep's own cost (timer slack, ~50 us) would be the
                // interval: go straight on; a target that exited answers the interrupt with W.
                const auto wait = std::chrono::duration<double>(intervals.next());
                if (wait >= std::chrono::microseconds(1)) {
                    std::this_thread::sleep_until(Clock::now() + std::chrono::duration_cast<Clock::duration>(wait));
                    if (auto early = gdb_->poll_stop(transport::Duration::zero())) {
                        finished(*early);
                        if (stats.target_exited)
                            break;
                        resume();
                        continue;
                    }
                }
                asked = Clock::now();
                reply = gdb_->interrupt();
            }
            const Clock::time_point stopped = Clock::now();
            if (reply.kind != transport::StopReply::Kind::signal) {
                finished(reply);
                break;
            }
            halted();
            stats.halt_latency_us.push_back(1e6 * seconds_between(asked, stopped));
            LiveSample s;
            s.time_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(stopped - start).count());
            // The running task's control block rides along with the registers' round trip.
            std::vector<std::pair<uint32_t, uint32_t>> reads;
            if (task_names)
                reads.emplace_back(task_names->layout().current_task, 4);
            std::vector<std::string> memory;
            if (stack_reader) {
                const HaltState halt = stack_reader->read(reads, memory);
                s.pc = halt.registers.r[15];
                s.lr = halt.registers.r[14];
                s.sp = halt.registers.r[13];
                s.xpsr = halt.registers.xpsr;
                s.stack = halt.unwound.stack;
                ++unwind_stops[std::string(core::describe(halt.unwound.stop))];
                memory_reads += halt.memory_reads;
                frames += halt.unwound.stack.callers.size();
            } else {
                const std::vector<uint32_t> regs = gdb_->read_registers(sampled_registers, reads, memory);
                s.pc = regs[0];
                s.lr = regs[1];
                s.sp = regs[2];
                s.xpsr = regs[3];
            }
            if (task_names && memory.size() == 1 && memory[0].size() == 4) {
                const auto* b = reinterpret_cast<const uint8_t*>(memory[0].data());
                const uint32_t tcb = uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24;
                if (tcb != 0) {   // 0: the scheduler has not started
                    s.tag = tcb;
                    s.tagged = true;
                    bool added = false;
                    const std::string& name = task_names->name_of(*gdb_, tcb, added);
                    if (added)
                        sink.task(tcb, name);
                }
            }
            sink.sample(s);
            ++stats.samples;
            stats.wall_seconds = seconds_between(start, stopped);
            sink.progress(stats);
            if (!icount_pacing)
                resume();
        }
        if (icount_pacing && !stats.target_exited && stats.samples > 0) {
            const uint64_t reported = current_icount();
            if (reported != icount)
                sink.event("pacing", "replay stops did not land where they were set: expected instruction " +
                                         std::to_string(icount) + ", QEMU reports " + std::to_string(reported));
        }
        // Leave the target as it was found: running. 'D' resumes a halted target; a
        // running one is halted first, since a byte sent to a running QEMU stops it anyway.
        if (!stats.target_exited) {
            if (running)
                gdb_->interrupt();
            gdb_->detach();
            running = false;
        }
    } catch (const transport::Error& e) {
        if (running)
            stats.running_seconds += seconds_between(resumed_at, Clock::now());
        stats.link_lost = true;
        stats.end_reason = std::string("the link was lost: ") + e.what();
        sink.event("link-lost", stats.end_reason);
        resume_over_a_new_link(sink);
    }
    stats.wall_seconds = seconds_between(start, Clock::now());
    if (stack_reader)
        stats.details["stacks"] = {{"mean_depth", stats.samples ? double(frames) / stats.samples : 0.0},
                                   {"extra_round_trips_per_sample", stats.samples ? double(memory_reads) / stats.samples : 0.0},
                                   {"ends", unwind_stops}};
    return stats;
}

} // namespace mcuprof::sources
