// The sampling loop over a scripted target (no link): the plan, task tags, the ends (a lost
// link, a refused command, an exit, a signal), DWT_PCSR batches and their fallback, and that
// the target is always left running; and over OpenOCD's Tcl adapter against a fake server.
#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "../fakes/fake_tcl_server.h"
#include "../inputs/kept_headers.h"
#include "mcuprof/cortex_m.h"
#include "mcuprof/inputs/error.h"
#include "mcuprof/sampler/openocd_sampler.h"
#include "mcuprof/target/openocd_scripts.h"
#include "mcuprof/sampler/sampling_loop.h"
#include "mcuprof/link/error.h"

using namespace mcuprof;
using namespace mcuprof::sources;

namespace {

std::string le_word(uint32_t v)
{
    return std::string{char(v & 0xFF), char(v >> 8 & 0xFF), char(v >> 16 & 0xFF), char(v >> 24 & 0xFF)};
}

// A target whose halts give pc 0x08000100 + 2 * halt number; memory is a map of words.
class ScriptedTarget : public HaltingTarget {
public:
    RunHeader::Link link_header() const override { return {}; }
    std::string server() const override { return "the script"; }
    std::string peer() const override { return "script"; }

    void start(TargetEvents&) override { running = true; ++starts; }
    void resume() override
    {
        CHECK_FALSE(running);   // the loop never resumes a running target
        running = true;
        ++resumes;
    }
    Halt halt_and_read(const HaltRequest& request) override
    {
        CHECK(running);
        if (yields > 0) {   // another program has the probe: nothing halted, nothing read
            --yields;
            ++yielded;
            Halt h;
            h.yielded = "another program has the probe";
            return h;
        }
        ++halts;
        if (on_halt)
            on_halt(halts);
        Halt h;
        h.stopped = h.ran_until = Clock::now();
        if (halt_cost.count() > 0) {   // the halt holds the target this long
            std::this_thread::sleep_for(halt_cost);
            h.stopped = Clock::now();
        }
        if (exit_at == halts) {
            running = false;
            h.ended = TargetEnd{true, "the target exited with code 0"};
            return h;
        }
        running = false;
        h.state = read_halt_state(request);
        if (resume_in_trip && !request.stay_halted) {
            running = true;
            h.running = true;
        }
        return h;
    }
    HaltState read_halt_state(const HaltRequest& request) override
    {
        HaltState s;
        s.registers.r[15] = 0x08000100 + 2 * halts;
        s.registers.r[14] = 0x08000201;
        s.registers.r[13] = 0x20001000;
        s.registers.xpsr = 0x01000000;
        for (const MemoryRange& range : request.memory)
            s.memory.push_back(read_memory(range.first, range.second));
        for (unsigned core = 1; core <= other_cores; ++core) {
            core::CoreRegisters other;
            other.r[15] = 0x09000000 + 0x100 * core + 2 * halts;
            s.other_cores.push_back(other);
        }
        return s;
    }
    std::vector<std::string> unsampled_cores() override { return unsampled; }
    void select_core(size_t core) override { selected = core; }
    unsigned other_cores = 0;   // cores 1.. read at each halt besides core 0
    std::vector<std::string> unsampled;
    size_t selected = 0;
    std::string read_memory(uint32_t address, uint32_t length) override
    {
        ++memory_reads[address];
        auto it = memory.find(address);
        return it == memory.end() ? std::string() : it->second.substr(0, length);
    }
    bool link_survives(const transport::Error& e) const override
    {
        return e.kind() == transport::Error::Kind::protocol;
    }
    bool reaches_target() override { return reaches; }
    void leave_running(TargetEvents&, bool link_lost) override
    {
        left.push_back(link_lost);
        running = true;
    }
    bool enable_pcsr(TargetEvents& sink) override
    {
        if (has_pcsr)
            return true;
        if (!missing)
            return HaltingTarget::enable_pcsr(sink);   // a link that reads none
        sink.no_pcsr(*missing);
        return false;
    }
    void fall_back_to_halts(TargetEvents&) override { ++fallbacks; }
    std::vector<uint32_t> read_pcsr(unsigned count) override
    {
        batches.push_back(count);
        std::vector<uint32_t> pcs;
        for (unsigned i = 0; i < count * cores_read; ++i)
            pcs.push_back(i == 1 ? 0xFFFFFFFF : 0x08000200 + 2 * i);   // the second found the core halted
        return pcs;
    }
    size_t pcsr_cores() const override { return cores_read; }
    unsigned cores_read = 1;       // DWT_PCSR reads a round (one per core)

    bool running = false;
    bool resume_in_trip = false;   // as OpenOCD's halt script does
    bool has_pcsr = false;
    std::optional<NoPcsr> missing;   // without DWT_PCSR: the core set_up_pcsr would name
    unsigned fallbacks = 0;
    bool reaches = true;           // the server still reaches the target after a refused command
    std::chrono::microseconds halt_cost{0};
    unsigned exit_at = 0;
    unsigned yields = 0;           // the next halts give way to another program, this many times
    unsigned yielded = 0;
    std::function<void(unsigned)> on_halt;
    unsigned starts = 0, resumes = 0, halts = 0;
    std::map<uint32_t, std::string> memory;
    std::map<uint32_t, unsigned> memory_reads;
    std::vector<bool> left;        // leave_running's link_lost, per call
    std::vector<unsigned> batches;
};

struct Collect : SampleSink {
    void sample(const LiveSample& s) override { samples.push_back(s); }
    void event(const std::string& kind, const std::string& message) override { events.emplace_back(kind, message); }
    void task(uint32_t tcb, const std::string& name) override { tasks.emplace_back(tcb, name); }
    bool has_event(const std::string& kind) const
    {
        for (const auto& [k, m] : events)
            if (k == kind)
                return true;
        return false;
    }
    std::vector<LiveSample> samples;
    std::vector<std::pair<std::string, std::string>> events;
    std::vector<std::pair<uint32_t, std::string>> tasks;
};

PacingOptions fast(Pacing pacing = Pacing::wall)
{
    PacingOptions p;
    p.pacing = pacing;
    p.interval = 1e-9;   // below a microsecond: no sleep
    p.shape = IntervalGenerator::Shape::fixed;
    return p;
}

SamplerStats run(ScriptedTarget& target, Collect& sink, uint64_t samples, const HaltExtras& extras = {},
                 const PacingOptions& pacing = fast())
{
    const std::atomic<bool> stop{false};
    SamplingPlan plan;
    plan.samples = samples;
    return run_sampling_loop(target, pacing, 1, extras, nullptr, sink, plan, stop);
}

} // namespace

TEST_CASE("sampling loop: the plan's samples, each a halt's registers; the target left running")
{
    for (bool resume_in_trip : {false, true}) {
        ScriptedTarget target;
        target.resume_in_trip = resume_in_trip;
        Collect sink;
        const SamplerStats stats = run(target, sink, 5);
        CHECK(stats.samples == 5);
        CHECK(stats.end_reason == "sample count reached");
        REQUIRE(sink.samples.size() == 5);
        for (unsigned i = 0; i < 5; ++i) {
            CHECK(sink.samples[i].pc == 0x08000100 + 2 * (i + 1));
            CHECK(sink.samples[i].sp == 0x20001000);
            CHECK_FALSE(sink.samples[i].tagged);
        }
        CHECK(stats.halt_latency_us.size() == 5);
        CHECK(target.starts == 1);
        CHECK(target.resumes == (resume_in_trip ? 0u : 5u));   // else the halt's own round trip resumed
        CHECK(target.left == std::vector<bool>{false});
        CHECK(stats.running_seconds <= stats.wall_seconds);
        CHECK(stats.running_seconds >= 0);
    }
}

TEST_CASE("sampling loop: every core at each halt, one sample each at the halt's time; the others named")
{
    ScriptedTarget target;
    target.other_cores = 2;
    target.unsampled = {"chip.cpu3 (cortex_m)"};
    Collect sink;
    const SamplerStats stats = run(target, sink, 3);
    CHECK(stats.samples == 3);   // the plan counts halts
    REQUIRE(sink.samples.size() == 9);
    for (unsigned halt = 0; halt < 3; ++halt)
        for (unsigned core = 0; core < 3; ++core) {
            const LiveSample& s = sink.samples[3 * halt + core];
            CHECK(s.core == core);
            CHECK(s.time_ns == sink.samples[3 * halt].time_ns);
            CHECK(s.pc == (core == 0 ? 0x08000100 : 0x09000000 + 0x100 * core) + 2 * (halt + 1));
        }
    CHECK(target.selected == 0);
    REQUIRE(sink.has_event("cores-not-sampled"));
    for (const auto& [kind, message] : sink.events)
        if (kind == "cores-not-sampled")
            CHECK(message.rfind("not sampled: chip.cpu3 (cortex_m) (the script has more cores", 0) == 0);
}

TEST_CASE("sampling loop: OpenOCD's other targets are the cores not sampled, access ports left out")
{
    const std::map<std::string, std::string> types = {
        {"stm32h7x.ap2", "mem_ap"}, {"stm32h7x.cpu0", "cortex_m"}, {"stm32h7x.cpu1", "cortex_m"}};
    const auto others = other_openocd_cores("stm32h7x.ap2 stm32h7x.cpu0 stm32h7x.cpu1", "stm32h7x.cpu0",
                                            [&](const std::string& name) { return types.at(name); });
    CHECK(others == std::vector<std::string>{"stm32h7x.cpu1 (cortex_m)"});
    CHECK(other_openocd_cores("one.cpu", "one.cpu", [](const std::string&) { return std::string("cortex_m"); })
              .empty());
    CHECK(other_openocd_cores("a b", "a", [](const std::string&) { return std::string(); }) ==
          std::vector<std::string>{"b"});   // a type OpenOCD would not give: the name alone
}

TEST_CASE("sampling loop: DWT_PCSR of two cores, a round one read of each: each sample its core, --samples rounds")
{
    ScriptedTarget target;
    target.has_pcsr = true;
    target.cores_read = 2;
    Collect sink;
    PacingOptions pacing = fast(Pacing::pcsr);
    pacing.batch = 4;
    // Each batch: core 0, core 1, core 0, ...; the second read (core 1 of round 0) found halted.
    const SamplerStats stats = run(target, sink, 6, {}, pacing);
    CHECK(target.batches == std::vector<unsigned>{4, 2});
    CHECK(stats.samples == 6);   // rounds: each gave a sample
    REQUIRE(stats.pcsr);
    CHECK(stats.pcsr->reads == 12);
    CHECK(stats.pcsr->halted_reads == 2);
    REQUIRE(sink.samples.size() == 10);
    const std::vector<uint32_t> first_batch_cores = {0, 0, 1, 0, 1, 0, 1};
    for (size_t i = 0; i < first_batch_cores.size(); ++i)
        CHECK(sink.samples[i].core == first_batch_cores[i]);
    CHECK(sink.samples[0].starts_burst);   // a batch is one burst
    CHECK_FALSE(sink.samples[1].starts_burst);
    CHECK(sink.samples[7].starts_burst);
}

TEST_CASE("OpenOCD's other cores through its GDB port: the script's answer, a core found halted, a short answer")
{
    const std::string script = other_cores_halt_script({"h7.cpu1"}, false);
    CHECK(script.find("clock") == std::string::npos);
    CHECK(script.rfind("apply {{} {capture {", 0) == 0);   // its own scope; OpenOCD's polls held off
    CHECK(script.find("{h7.cpu1} write_memory") != std::string::npos);
    const OtherCoresRead read = parse_other_cores("0x08000101 0x08000011 0x20001000 0x61000000\n", 1, "gdb x");
    REQUIRE(read.registers.size() == 1);
    CHECK(read.registers[0].r[15] == 0x08000101);
    CHECK(read.registers[0].r[14] == 0x08000011);
    CHECK(read.registers[0].r[13] == 0x20001000);
    CHECK(read.registers[0].xpsr == 0x61000000);
    CHECK_FALSE(read.found_halted);
    const OtherCoresRead halted = parse_other_cores("halted 16842753 196611\n", 2, "gdb x");   // the second with S_HALT (bit 17)
    REQUIRE(halted.found_halted);
    CHECK(*halted.found_halted == 1);
    CHECK(halted.found_dhcsr == 196611);
    CHECK_THROWS_AS(parse_other_cores("0x1 0x2 0x3 0x4\n", 2, "gdb x"), transport::Error);
    CHECK_THROWS_AS(parse_other_cores("0x1 0x2\n", 1, "gdb x"), transport::Error);
}

TEST_CASE("OpenOCD's other cores through its GDB port, timed: each core's stop after core 0's, bracketed")
{
    CHECK(other_cores_halt_script({"h7.cpu1"}, true).find("clock microseconds") != std::string::npos);
    // Script start 1000, end 1900 (OpenOCD's clock, us); before core 1's request 1100, after it 1150,
    // after core 2's 1300.
    const OtherCoresRead read = parse_other_cores(
        "t 1000 1900 1100 1150 1300\n0x1 0x2 0x3 0x4\n0x5 0x6 0x7 0x8\n", 2, "gdb x");
    REQUIRE(read.registers.size() == 2);
    CHECK(read.registers[1].r[15] == 0x5);
    CHECK(read.clock_us == std::vector<int64_t>{1000, 1900, 1100, 1150, 1300});
    // mcuprof's clock: interrupt sent at 0, stop reply at 5 ms, monitor sent at 5.2 ms, answered at 6.5 ms.
    const Clock::time_point t0{};
    using us = std::chrono::microseconds;
    const std::vector<mcuprof::core::StopBounds> bounds =
        other_cores_stop_after(read, t0, t0 + us(5000), t0 + us(5200), t0 + us(6500));
    REQUIRE(bounds.size() == 2);
    // Core 1: at least 5200 - 5000 + (1100 - 1000) = 300 us, at most 6500 - 0 - (1900 - 1150) = 5750 us,
    // each widened by the clock's 1 us.
    CHECK(bounds[0].at_least_ns == 299'000);
    CHECK(bounds[0].at_most_ns == 5'751'000);
    // Core 2: at least 200 + 150 = 350 us, at most 6500 - (1900 - 1300) = 5900 us.
    CHECK(bounds[1].at_least_ns == 349'000);
    CHECK(bounds[1].at_most_ns == 5'901'000);
    // An untimed script's answer gives no bounds; a short clock line is an error.
    CHECK(other_cores_stop_after(parse_other_cores("0x1 0x2 0x3 0x4\n", 1, "gdb x"), t0, t0, t0, t0).empty());
    CHECK_THROWS_AS(parse_other_cores("t 1 2 3\n0x1 0x2 0x3 0x4\n", 1, "gdb x"), transport::Error);
}

TEST_CASE("sampling loop: the running task tags each sample; its name is read once")
{
    ScriptedTarget target;
    const uint32_t current = 0x20000010, motor = 0x20000100, link = 0x20000200;
    target.memory[motor + 8] = std::string("motor\0\0\0", 8);
    target.memory[link + 8] = std::string("link\0\0\0\0", 8);
    // The scheduler starts at the second halt and switches task at every halt after.
    target.on_halt = [&](unsigned halt) {
        target.memory[current] = le_word(halt == 1 ? 0 : (halt % 2 ? motor : link));
    };
    Collect sink;
    HaltExtras extras;
    extras.tasks = TaskLayout{current, 8, 8};
    const SamplerStats stats = run(target, sink, 6, extras);
    REQUIRE(stats.samples == 6);
    CHECK_FALSE(sink.samples[0].tagged);   // pxCurrentTCB was 0
    for (unsigned i = 1; i < 6; ++i) {
        CHECK(sink.samples[i].tagged);
        CHECK(sink.samples[i].tag == ((i + 1) % 2 ? motor : link));
    }
    CHECK(sink.tasks == std::vector<std::pair<uint32_t, std::string>>{{link, "link"}, {motor, "motor"}});
    CHECK(target.memory_reads[motor + 8] == 1);
    CHECK(target.memory_reads[link + 8] == 1);
}

TEST_CASE("sampling loop: a lost link, or a command the server refuses, ends the run with its samples")
{
    for (const auto kind : {transport::Error::Kind::closed, transport::Error::Kind::protocol}) {
        const bool lost = kind == transport::Error::Kind::closed;
        ScriptedTarget target;
        target.on_halt = [kind](unsigned halt) {
            if (halt == 3)
                throw transport::Error(kind, "script", "halt", "the failure");
        };
        Collect sink;
        const SamplerStats stats = run(target, sink, 10);
        CHECK(stats.samples == 2);
        CHECK(stats.link_lost == lost);
        CHECK(stats.failed == !lost);   // record and top exit 3 or 2 on these
        // A lost link: a try over a new one to leave the target running; a refused command:
        // the link is kept and used for that.
        CHECK(stats.end_reason.rfind(lost ? "the link was lost: " : "the script reported an error: ", 0) == 0);
        CHECK(sink.has_event(lost ? "link-lost" : "error"));
        CHECK(target.left == std::vector<bool>{lost});
    }
}

TEST_CASE("sampling loop: a server that refuses because it lost the target is a lost link")
{
    ScriptedTarget target;
    target.reaches = false;
    target.on_halt = [](unsigned halt) {
        if (halt == 3)
            throw transport::Error(transport::Error::Kind::protocol, "script", "halt", "the failure");
    };
    Collect sink;
    const SamplerStats stats = run(target, sink, 10);
    CHECK(stats.samples == 2);
    CHECK(stats.link_lost);
    CHECK(stats.end_reason == "the link was lost: the script no longer reaches the target, after: " +
                                  std::string(transport::Error(transport::Error::Kind::protocol, "script", "halt",
                                                               "the failure").what()));
    CHECK(sink.has_event("link-lost"));
    CHECK(target.left == std::vector<bool>{true});
}

// --max-halted B: with D the halted time, W the wall time, the loop brings the running time
// after each wait to at least what keeps D + (the mean halt) under B of W, less what that
// wait falls short (at most its mean). So at the end D - B W <= (1 - B) x (the longest halt)
// + B x (the largest mean wait): the last halt above the mean, the last wait short.
TEST_CASE("sampling loop: --max-halted keeps the halted share under its budget; the waits stay random")
{
    for (bool resume_in_trip : {false, true}) {
        ScriptedTarget target;
        target.resume_in_trip = resume_in_trip;
        target.halt_cost = std::chrono::milliseconds(2);
        Collect sink;
        PacingOptions pacing = fast();
        pacing.shape = IntervalGenerator::Shape::exponential;
        const double budget = 0.2;
        pacing.max_halted = budget;
        const SamplerStats stats = run(target, sink, 40, {}, pacing);
        CHECK(stats.samples == 40);
        REQUIRE(stats.halt_budget);
        const core::HaltBudgetFigures& b = *stats.halt_budget;
        CHECK(b.max_halted == budget);
        CHECK(b.longest_halt_seconds >= 0.002);
        // After the first halt (2 ms at least) the mean wait is at least 2 halts x (1 - B) / B:
        // the budget, not the 1 ns interval, set the waits.
        CHECK(b.longest_mean_wait_seconds >= 2 * 0.002 * (1 - budget) / budget);
        const double halted = stats.wall_seconds - stats.running_seconds;
        CHECK(halted <= budget * stats.wall_seconds + (1 - budget) * b.longest_halt_seconds +
                            budget * b.longest_mean_wait_seconds);
        CHECK(stats.figures().halt_budget.has_value());
    }
}

TEST_CASE("sampling loop: a core another program holds pauses the halts, said once as it starts and once as it ends")
{
    ScriptedTarget target;
    target.on_halt = [&](unsigned halt) {
        if (halt == 2)
            target.yields = 3;   // a debugger opens the probe after the second sample and stays for 3 asks
    };
    Collect sink;
    const auto started = Clock::now();
    const SamplerStats stats = run(target, sink, 4);
    CHECK(stats.samples == 4);
    CHECK(target.yielded == 3);
    CHECK(target.halts == 4);   // no halt while paused
    CHECK(target.resumes == 4);
    // Asked again at most every 50 ms, whatever the interval: three asks, 150 ms at least.
    CHECK(Clock::now() - started >= std::chrono::milliseconds(150));
    std::vector<std::string> kinds;
    for (const auto& [kind, message] : sink.events)
        kinds.push_back(kind);
    CHECK(kinds == std::vector<std::string>{"paused", "paused-end"});
    CHECK(sink.events[0].second == "another program has the probe; sampling paused until it closes the probe");
    CHECK(sink.events[1].second.find("sampling again") != std::string::npos);
    REQUIRE(sink.samples.size() == 4);
    CHECK(sink.samples[2].pc == 0x08000100 + 2 * 3);   // the halts go on where they were

    // Still paused when the plan ends it (a stop request): said with the pause's length.
    ScriptedTarget held;
    held.yields = 1000;
    Collect paused_sink;
    SamplingPlan plan;
    plan.duration = std::chrono::milliseconds(120);
    const std::atomic<bool> stop{false};
    const SamplerStats still = run_sampling_loop(held, fast(), 1, {}, nullptr, paused_sink, plan, stop);
    CHECK(still.samples == 0);
    CHECK(held.halts == 0);
    REQUIRE(paused_sink.events.size() == 2);
    CHECK(paused_sink.events[1].first == "paused-end");
    CHECK(paused_sink.events[1].second.rfind("still paused at the end", 0) == 0);
}

TEST_CASE("sampling loop: a target that exits ends the run and is not touched after")
{
    ScriptedTarget target;
    target.exit_at = 4;
    Collect sink;
    const SamplerStats stats = run(target, sink, 10);
    CHECK(stats.samples == 3);
    CHECK(stats.target_exited);
    CHECK(stats.end_reason == "the target exited with code 0");
    CHECK(sink.has_event("target-exit"));
    CHECK(target.left.empty());
}

TEST_CASE("sampling loop: a stop request ends the run at once")
{
    ScriptedTarget target;
    Collect sink;
    const std::atomic<bool> stop{true};
    const SamplerStats stats = run_sampling_loop(target, fast(), 1, {}, nullptr, sink, {}, stop);
    CHECK(stats.samples == 0);
    CHECK(stats.end_reason == "interrupted by a signal");
    CHECK(target.halts == 0);
    CHECK(target.left == std::vector<bool>{false});
}

TEST_CASE("sampling loop: DWT_PCSR batches up to the plan, halted reads dropped")
{
    ScriptedTarget target;
    target.has_pcsr = true;
    Collect sink;
    PacingOptions pacing = fast(Pacing::pcsr);
    pacing.batch = 16;
    // The second read of a batch finds the core halted: 15 + 15 + 2 + 1 samples, each batch no
    // longer than the plan still needs.
    const SamplerStats stats = run(target, sink, 33, {}, pacing);
    CHECK(target.batches == std::vector<unsigned>{16, 16, 3, 1});
    CHECK(stats.samples == 33);
    REQUIRE(stats.pcsr);
    CHECK(stats.pcsr->reads == 36);
    CHECK(stats.pcsr->halted_reads == 3);
    CHECK(stats.pcsr->round_trip_us.size() == 4);
    CHECK(stats.halt_latency_us.empty());
    CHECK(target.halts == 0);
    CHECK(sink.has_event("pcsr"));
    CHECK(stats.running_seconds <= stats.wall_seconds);
    CHECK_FALSE(sink.has_event("fallback"));
    CHECK(target.fallbacks == 0);
}

TEST_CASE("sampling loop: no DWT_PCSR: --mode pcsr refused before the first sample, pcsr,halt halts instead")
{
    const std::string m0 = "DWT_PCSR reads 0 on target nrf51.cpu (Cortex-M0, CPUID 0x410cc200; no PC sampling "
                           "register: a part built without the DWT)";
    struct Case {
        std::optional<NoPcsr> missing;
        std::string why;
    };
    const Case cases[] = {
        {NoPcsr{"target nrf51.cpu", 0x410CC200}, m0},
        {NoPcsr{"target x.cpu", 0x410FFFF0}, "DWT_PCSR reads 0 on target x.cpu (CPUID 0x410ffff0; no PC sampling "
                                             "register: a part built without the DWT)"},   // a part of no name
        {NoPcsr{"the ST-Link's core", std::nullopt}, "DWT_PCSR reads 0 on the ST-Link's core (no PC sampling "
                                                     "register: a part built without the DWT)"},
        {std::nullopt, "DWT_PCSR is not read over the script"},   // the link reads none
    };
    for (const Case& c : cases) {
        CAPTURE(c.why);
        PacingOptions pacing = fast(Pacing::pcsr);
        ScriptedTarget refused;
        refused.missing = c.missing;
        Collect sink;
        std::string error;
        try {
            run(refused, sink, 4, {}, pacing);
        } catch (const mcuprof::sources::Error& e) {   // the CLI edge's exit 2
            error = e.what();
        }
        CHECK(error == "script, --mode pcsr: " + c.why +
                           ": --mode halt samples it by halting, --mode pcsr,halt falls back by itself");
        CHECK(sink.samples.empty());
        CHECK(sink.events.empty());   // no fallback, and no error of mcuprof's own
        CHECK(refused.halts == 0);
        CHECK(refused.batches.empty());
        CHECK(refused.fallbacks == 0);
        CHECK(refused.left == std::vector<bool>{false});   // running, as found
        CHECK(refused.running);

        pacing.pcsr_fallback = true;
        ScriptedTarget halting;
        halting.missing = c.missing;
        Collect fallback;
        const SamplerStats halted = run(halting, fallback, 4, {}, pacing);
        REQUIRE(fallback.events.size() == 1);
        CHECK(fallback.events[0] ==
              std::pair<std::string, std::string>{"fallback", c.why + ": sampling in halt mode instead (--mode "
                                                                      "pcsr,halt)"});
        CHECK_FALSE(halted.pcsr);
        CHECK(halted.samples == 4);
        CHECK(halting.halts == 4);
        CHECK(halting.fallbacks == 1);
        CHECK(halting.batches.empty());
        CHECK(halting.left == std::vector<bool>{false});
    }

    // A core with DWT_PCSR is never refused, nor halted, whatever the fallback.
    for (bool fallback : {false, true}) {
        PacingOptions pacing = fast(Pacing::pcsr);
        pacing.pcsr_fallback = fallback;
        ScriptedTarget with;
        with.has_pcsr = true;
        Collect sink;
        const SamplerStats stats = run(with, sink, 4, {}, pacing);
        CHECK(stats.samples == 4);
        REQUIRE(stats.pcsr);
        CHECK(with.halts == 0);
        CHECK_FALSE(sink.has_event("fallback"));
    }
}

namespace {
// One core's DEMCR, CPUID and DWT_PCSR for set_up_pcsr, and the writes it made.
struct DebugWords {
    std::map<uint32_t, uint32_t> words;
    std::vector<std::pair<uint32_t, uint32_t>> writes;
    DebugWordAccess access(const std::string& name)
    {
        return {name, [this](uint32_t a) { return words[a]; },
                [this](uint32_t a, uint32_t v) {
                    writes.emplace_back(a, v);
                    words[a] = v;
                }};
    }
};
struct Announced : TargetEvents {
    void event(const std::string& kind, const std::string& message) override { events.emplace_back(kind, message); }
    void no_pcsr(const NoPcsr& core) override { missing.push_back(core); }
    std::vector<std::pair<std::string, std::string>> events;
    std::vector<NoPcsr> missing;
};
} // namespace

TEST_CASE("set_up_pcsr: TRCENA set where clear; a core reading 0 named with its CPUID, each DEMCR as found")
{
    using namespace mcuprof::cortex_m;
    const uint32_t found = vc_corereset;   // DEMCR as found on core 1: TRCENA clear
    DebugWords a, b;
    a.words = {{demcr, trcena}, {cpuid, 0x410FC241}, {dwt_pcsr, 0x08000200}};
    b.words = {{demcr, found}, {cpuid, 0x410CC601}, {dwt_pcsr, 0x08000300}};
    auto round = [&] { return std::vector<uint32_t>{a.words[dwt_pcsr], b.words[dwt_pcsr]}; };
    {
        Announced events;
        const auto first = set_up_pcsr(events, {a.access("target a"), b.access("target b")}, round);
        REQUIRE(first);
        CHECK(*first == std::vector<uint32_t>{0x08000200, 0x08000300});
        CHECK(a.writes.empty());   // TRCENA was set
        CHECK(b.writes == std::vector<std::pair<uint32_t, uint32_t>>{{demcr, found | trcena}});
        CHECK(events.missing.empty());
        CHECK(events.events.empty());
    }
    // Core b without DWT_PCSR: named with its CPUID (a Cortex-M0+), its DEMCR put back; core a's
    // TRCENA was set already and stays.
    a.writes.clear();
    b.writes.clear();
    b.words[demcr] = found;
    b.words[dwt_pcsr] = 0;
    Announced events;
    CHECK_FALSE(set_up_pcsr(events, {a.access("target a"), b.access("target b")}, round));
    REQUIRE(events.missing.size() == 1);
    CHECK(events.missing[0].core == "target b");
    CHECK(events.missing[0].cpuid == std::optional<uint32_t>(0x410CC601));
    CHECK(events.events.empty());
    CHECK(a.writes.empty());
    CHECK(b.writes == std::vector<std::pair<uint32_t, uint32_t>>{{demcr, found | trcena}, {demcr, found}});
    CHECK(b.words[demcr] == found);
}

namespace {
// The halt-mode sampler over a fake OpenOCD's Tcl port, run for `samples` halts; its run header
// after (kept for the schema test).
SamplerStats run_halt_mode(uint16_t port, std::optional<TaskLayout> tasks, Collect& sink, uint64_t samples,
                           RunHeader& described)
{
    OpenocdSamplerOptions options;
    options.tcl = transport::Endpoint{"127.0.0.1", port};
    options.pacing = fast();
    options.timeout = std::chrono::seconds(2);
    options.extras.tasks = tasks;
    OpenocdSampler sampler(options);
    const std::atomic<bool> stop{false};
    SamplingPlan plan;
    plan.samples = samples;
    SamplerStats stats = sampler.run(sink, plan, stop);
    described = tests::kept(sampler.run_header());
    return stats;
}

// OpenOCD's Tcl port as the halt mode sees it, by what each script asks (the scripts arrive
// quoted, inside catch): the halt script answers DHCSR as found (`found`: 0x01000001,
// C_DEBUGEN with S_RETIRE_ST, a running core; or S_HALT set, someone else's halt), then the
// registers pc lr sp xPSR, then the pxCurrentTCB word; the task's name; DFSR; poll; curstate.
struct HaltModeOpenocd {
    static bool has(const std::string& message, const char* word) { return message.find(word) != std::string::npos; }
    std::string found = "16777217";
    bool vprobe = false;       // answer the virtual probe's two words (mcuprof/vprobe_signature.h)
    RunHeader described;  // the sampler's run header, after the run
    bool polled_once = true;   // false: "unknown" until a poll, as OpenOCD says right after init
    fakes::FakeTclServer server{[this](const std::string& m) -> std::optional<std::vector<std::string>> {
        if (has(m, "set\\ dhcsr0")) {
            if (std::stoul(found, nullptr, 0) & cortex_m::s_halt)
                return std::vector<std::string>{"0 halted " + found};
            return std::vector<std::string>{"0 " + found + "\n0x08000102 0x08000201 0x20001000 0x01000000\n",
                                            "0x20000100"};
        }
        if (has(m, "read_memory\\ 536871176\\ 32\\ 2"))   // the name at 0x20000108: "moto", "r"
            return std::vector<std::string>{"0 0x6f746f6d 0x00000072"};
        if (vprobe && has(m, "read_memory\\ 3759142912\\ 32\\ 2"))   // 0xE00FF800: "mcup", "vprb"
            return std::vector<std::string>{"0 0x7063756d 0x62727076"};
        if (has(m, "read_memory\\ 3758157104\\ 32\\ 1"))   // DFSR: nothing set
            return std::vector<std::string>{"0 0x00000000"};
        if (has(m, "write_memory\\ 3758157104") || has(m, "poll\\ off") || has(m, "poll\\ on"))
            return std::vector<std::string>{"0 "};
        if (has(m, "poll")) {
            polled_once = true;
            return std::vector<std::string>{"0 background polling: on\nTAP: stm32f4x.cpu (enabled)\n"};
        }
        if (has(m, "curstate"))
            return std::vector<std::string>{polled_once ? "0 running" : "0 unknown"};
        if (has(m, "target\\ current") || has(m, "target\\ names"))
            return std::vector<std::string>{"0 stm32f4x.cpu"};
        return std::vector<std::string>{"1 unexpected"};
    }};
    SamplerStats run(Collect& sink, uint64_t samples)
    {
        SamplerStats stats = run_halt_mode(server.port(), TaskLayout{0x20000010, 8, 8}, sink, samples, described);
        CHECK(described.link.source == LinkKind::openocd);
        return stats;
    }
    size_t count(const char* word)
    {
        size_t n = 0;
        for (const std::string& m : server.received())
            n += has(m, word);
        return n;
    }
};
} // namespace

TEST_CASE("sampling loop over OpenOCD's Tcl port: a target OpenOCD has not polled yet is polled once, then sampled")
{
    HaltModeOpenocd openocd;
    openocd.polled_once = false;   // curstate says "unknown" until a poll
    Collect sink;
    CHECK(openocd.run(sink, 2).samples == 2);
    CHECK(openocd.count("curstate") >= 2);
}

TEST_CASE("sampling loop over OpenOCD's Tcl port: one script per halt through DHCSR and DCRSR, the name read once")
{
    HaltModeOpenocd openocd;
    Collect sink;
    const SamplerStats stats = openocd.run(sink, 3);
    CHECK(stats.samples == 3);
    REQUIRE(sink.samples.size() == 3);
    for (const LiveSample& s : sink.samples) {
        CHECK(s.pc == 0x08000102);
        CHECK(s.xpsr == 0x01000000);
        CHECK(s.tagged);
        CHECK(s.tag == 0x20000100);
    }
    CHECK(sink.tasks == std::vector<std::pair<uint32_t, std::string>>{{0x20000100, "motor"}});
    unsigned halts = 0;
    for (const std::string& m : openocd.server.received()) {
        if (!HaltModeOpenocd::has(m, "set\\ dhcsr0"))
            continue;
        ++halts;
        // DHCSR written with the key, C_HALT and C_DEBUGEN kept with the bits found, together
        // with DCRSR's first REGSEL (15, the PC); then DCRSR 14, 13, 16 (lr, sp, xPSR); DHCSR as
        // found to resume in the same script; never OpenOCD's own halt or resume.
        CHECK(HaltModeOpenocd::has(m, "write_memory\\ 3758157296\\ 32\\ \\[list\\ \\[expr\\ \\{\\$key0\\ |\\ 3\\}\\]\\ 15\\]"));
        CHECK(HaltModeOpenocd::has(m, "\\{14\\ 13\\ 16\\ -1\\}"));
        CHECK(HaltModeOpenocd::has(m, "write_memory\\ 3758157296\\ 32\\ \\$key0"));
        CHECK(HaltModeOpenocd::has(m, "536870928\\ 1"));   // pxCurrentTCB (0x20000010), one word
        CHECK_FALSE(HaltModeOpenocd::has(m, "halt\\;"));
        CHECK_FALSE(HaltModeOpenocd::has(m, "resume"));
    }
    CHECK(halts == 3);
    CHECK(openocd.count("read_memory\\ 536871176\\ 32\\ 2") == 1);   // the task's name, once
    // Polling off before the first halt and on again at the end; DFSR.HALTED, which the halts
    // set and which was clear, cleared.
    CHECK(openocd.count("poll\\ off") == 1);
    CHECK(openocd.count("poll\\ on") == 1);
    CHECK(openocd.count("write_memory\\ 3758157104\\ 32\\ 1") == 1);
}

TEST_CASE("sampling loop over OpenOCD's Tcl port: a core found asleep (DHCSR.S_SLEEP before the halt) is said so")
{
    HaltModeOpenocd running;   // 0x01000001: S_SLEEP clear
    Collect awake;
    running.run(awake, 2);
    REQUIRE(awake.samples.size() == 2);
    CHECK_FALSE(awake.samples[0].found_asleep);

    HaltModeOpenocd sleeping;
    sleeping.found = std::to_string(0x01000001u | cortex_m::s_sleep);   // C_DEBUGEN, S_SLEEP, S_RETIRE_ST
    Collect asleep;
    sleeping.run(asleep, 2);
    REQUIRE(asleep.samples.size() == 2);
    for (const LiveSample& s : asleep.samples) {
        CHECK(s.found_asleep);
        CHECK(s.pc == 0x08000102);   // the PC is kept as read: the report's row is "(sleep)"
    }
}

TEST_CASE("sampling loop over OpenOCD: mcuprof's virtual probe is known by its two words, and its bias said")
{
    HaltModeOpenocd chip;   // a real chip: the words are not there (here OpenOCD refuses the read)
    Collect sink;
    chip.run(sink, 1);
    CHECK_FALSE(chip.described.probe);
    CHECK_FALSE(chip.described.bias);
    CHECK(chip.count("read_memory\\ 3759142912\\ 32\\ 2") == 1);

    HaltModeOpenocd vprobe;
    vprobe.vprobe = true;
    Collect vsink;
    vprobe.run(vsink, 1);
    CHECK(vprobe.described.probe == "mcuprof vprobe");
    CHECK(vprobe.described.bias.value_or("").find("behind OpenOCD is mcuprof's virtual probe, whose target is QEMU") == 0);
}

TEST_CASE("sampling loop over OpenOCD's Tcl port: a core someone else halted is left halted and ends the recording")
{
    HaltModeOpenocd openocd;
    openocd.found = "0x00030003";   // S_HALT, S_REGRDY, C_HALT, C_DEBUGEN: a breakpoint, another debugger
    Collect sink;
    const SamplerStats stats = openocd.run(sink, 3);
    CHECK(stats.samples == 0);
    CHECK(sink.has_event("target-stop"));
    CHECK(sink.has_event("left-halted"));
    CHECK(stats.end_reason.find("halted by someone else (DHCSR 0x00030003") != std::string::npos);
    CHECK(openocd.count("resume") == 0);
    CHECK(openocd.count("curstate") == 1);   // at the start only: not asked to resume at the end
    CHECK(openocd.count("write_memory\\ 3758157104") == 0);   // DFSR: the other's halt reason kept
    CHECK(openocd.count("poll\\ on") == 1);
}

namespace {
// OpenOCD with two examined cortex_m targets, a.cpu (current) and b.cpu: every halt script halts
// both and answers DHCSR as found (core 0 running, core 1 asleep: S_SLEEP, 0x01040001), core 0's
// registers, then core 1's.
struct TwoCoreOpenocd {
    static bool has(const std::string& message, const char* word) { return message.find(word) != std::string::npos; }
    std::string examined = "1";   // b.cpu's was_examined
    fakes::FakeTclServer server{[this](const std::string& m) -> std::optional<std::vector<std::string>> {
        if (has(m, "set\\ dhcsr0"))
            return std::vector<std::string>{"0 16777217 17039361\n0x08000102 0x08000201 0x20001000 0x01000000\n"
                                            "0x08000302 0x08000401 0x20002000 0x21000000"};
        if (has(m, "curstate"))   // first: "[target current] curstate"
            return std::vector<std::string>{"0 running"};
        if (has(m, "target\\ names"))
            return std::vector<std::string>{"0 a.cpu b.cpu"};
        if (has(m, "target\\ current"))
            return std::vector<std::string>{"0 a.cpu"};
        if (has(m, "cget\\ -type"))
            return std::vector<std::string>{"0 cortex_m"};
        if (has(m, "was_examined"))
            return std::vector<std::string>{"0 " + examined};
        if (has(m, "read_memory\\ 3758157104\\ 32\\ 1"))   // DFSR of either core: nothing set
            return std::vector<std::string>{"0 0x00000000"};
        if (has(m, "write_memory\\ 3758157104") || has(m, "poll\\ off") || has(m, "poll\\ on"))
            return std::vector<std::string>{"0 "};
        if (has(m, "poll"))
            return std::vector<std::string>{"0 background polling: on\n"};
        if (has(m, "catch") && has(m, "clock"))   // an OpenOCD whose Jim Tcl has no clock: no skew timing
            return std::vector<std::string>{"0 0"};
        return std::vector<std::string>{"1 unexpected"};
    }};
    RunHeader described;
    SamplerStats run(Collect& sink, uint64_t samples)
    {
        return run_halt_mode(server.port(), std::nullopt, sink, samples, described);
    }
};
} // namespace

TEST_CASE("sampling loop over OpenOCD's Tcl port: every examined cortex_m target halted in one script, a sample each")
{
    TwoCoreOpenocd openocd;
    Collect sink;
    CHECK(openocd.run(sink, 2).samples == 2);
    REQUIRE(sink.samples.size() == 4);   // two halts, two cores each, core 0 first
    for (size_t i = 0; i < 4; i += 2) {
        CHECK(sink.samples[i].core == 0);
        CHECK(sink.samples[i].pc == 0x08000102);
        CHECK(sink.samples[i + 1].core == 1);
        CHECK(sink.samples[i + 1].pc == 0x08000302);
        CHECK(sink.samples[i + 1].sp == 0x20002000);
        CHECK(sink.samples[i + 1].xpsr == 0x21000000);
        CHECK_FALSE(sink.samples[i].found_asleep);
        CHECK(sink.samples[i + 1].found_asleep);   // DHCSR.S_SLEEP of b.cpu, read before the halt
    }
    CHECK_FALSE(sink.has_event("cores-not-sampled"));
    REQUIRE(openocd.described.link.cores.size() == 2);
    CHECK(openocd.described.link.cores[1].target == "b.cpu");
    CHECK(openocd.described.link.cores[1].name == "core 1 (b.cpu)");
    for (const std::string& m : openocd.server.received()) {
        if (!TwoCoreOpenocd::has(m, "set\\ dhcsr0"))
            continue;
        // Both halt requests (DHCSR with C_HALT and C_DEBUGEN, then DCRSR 15), core 0's first, before
        // any register is read; b.cpu's registers by DCRSR through its own target command; both
        // resumed as found.
        const size_t halt0 = m.find("write_memory\\ 3758157296\\ 32\\ \\[list\\ \\[expr\\ \\{\\$key0\\ |\\ 3\\}\\]\\ 15\\]");
        const size_t halt1 = m.find("\\{b.cpu\\}\\ write_memory\\ 3758157296\\ 32\\ \\[list\\ \\[expr\\ \\{\\$key1\\ |\\ 3\\}\\]\\ 15\\]");
        const size_t first_read = m.find("read_memory\\ 3758157296\\ 32\\ 3");
        REQUIRE(halt0 != std::string::npos);
        REQUIRE(halt1 != std::string::npos);
        CHECK(halt0 < halt1);
        CHECK(halt1 < first_read);
        CHECK(TwoCoreOpenocd::has(m, "\\{b.cpu\\}\\ read_memory\\ 3758157296\\ 32\\ 3"));
        CHECK(TwoCoreOpenocd::has(m, "\\{b.cpu\\}\\ write_memory\\ 3758157296\\ 32\\ \\$key1"));
    }
}

TEST_CASE("sampling loop over OpenOCD's Tcl port: a cortex_m target OpenOCD has not examined is named, not sampled")
{
    TwoCoreOpenocd openocd;
    openocd.examined = "0";
    Collect sink;
    openocd.run(sink, 1);
    CHECK(sink.has_event("cores-not-sampled"));
    CHECK(openocd.described.link.cores.empty());
}
