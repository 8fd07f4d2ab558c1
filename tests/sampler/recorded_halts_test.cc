// The sampling loop, the stack reader, the task reader and the unwinder over halts recorded
// from QEMU runs of three reference images (tests/data/recorded_halts/: the call-tree
// scenario at -O2, the FPU tasks under the FreeRTOS-shaped kernel at -O2, the threads of the
// Zephyr-shaped kernel), replayed through fakes::RecordedTarget. Each chain is checked against
// gdb-multiarch's own backtrace at the same halt, and each task tag against the running task's
// name as gdb evaluated it from the DWARF; both were saved by the recorder, not computed by
// mcuprof.
#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../fakes/recorded_target.h"
#include "mcuprof/image/firmware.h"
#include "mcuprof/image/image_set.h"
#include "mcuprof/profile/profile.h"
#include "mcuprof/image/symbols.h"
#include "mcuprof/image/unwind/unwinder.h"
#include "mcuprof/sampler/rtos_awareness.h"
#include "mcuprof/sampler/sampling_loop.h"
#include "mcuprof/link/error.h"

using namespace mcuprof;
using namespace mcuprof::sources;

namespace {

const std::string recordings = std::string(TEST_SOURCE_DIR) + "/data/recorded_halts";

struct Collect : SampleSink {
    void sample(const LiveSample& s) override { samples.push_back(s); }
    void event(const std::string& kind, const std::string& message) override { events.emplace_back(kind, message); }
    void task(uint32_t tcb, const std::string& name) override { names[tcb] = name; }
    std::vector<LiveSample> samples;
    std::vector<std::pair<std::string, std::string>> events;
    std::map<uint32_t, std::string> names;
};

// What gdb's backtrace says the unwinder must find, in the form CallStack keeps it: for each
// physical frame above the halted one, the call site (gdb's resume address less 2: inside
// the call instruction, as line lookup wants it), or, for code an exception interrupted, the
// interrupted instruction itself (gdb's pc of the frame below "<signal handler called>").
// gdb's inlined calls are frames of their own at their caller's pc, and its exception
// entries frames at the EXC_RETURN value: neither is a caller. The chain ends at the
// outermost function: Reset_Handler, or a task's entry (gdb goes on past it into whatever
// the task's initial stack holds). A frame gdb could not place in a function before that
// means the stack was overwritten: the chain must then end truncated, with the callers
// before it.
struct Expected {
    std::vector<uint32_t> callers;
    bool truncated = false;
    std::string text;   // gdb's frames, for messages
};

Expected expected_from_gdb(const nlohmann::json& frames, const std::set<std::string>& outermost)
{
    struct Frame {
        uint32_t caller;
        std::string function;
    };
    Expected e;
    std::vector<Frame> physical;
    bool interrupted = false;   // the next frame is the code an exception interrupted
    for (const nlohmann::json& f : frames) {
        const std::string function = f.at("function").get<std::string>();
        e.text += function + " ";
        if (f.at("exception").get<bool>()) {
            interrupted = true;
        } else if (!f.at("inline").get<bool>()) {
            const uint32_t pc = f.at("pc").get<uint32_t>();
            physical.push_back({interrupted ? pc : pc - 2, function});
            interrupted = false;
        }
    }
    REQUIRE_FALSE(physical.empty());
    if (outermost.count(physical[0].function) != 0)
        return e;
    for (size_t i = 1; i < physical.size(); ++i) {
        if (physical[i].function == "??") {
            e.truncated = true;
            return e;
        }
        e.callers.push_back(physical[i].caller);
        if (outermost.count(physical[i].function) != 0)
            return e;
    }
    FAIL("gdb's backtrace reached no outermost function: " << e.text);
    return e;
}

std::string hex_list(const std::vector<uint32_t>& values)
{
    std::ostringstream out;
    out << std::hex;
    for (uint32_t v : values)
        out << "0x" << v << " ";
    return out.str();
}

PacingOptions without_waits()
{
    PacingOptions p;
    p.interval = 1e-9;   // below a microsecond: no sleep
    p.shape = IntervalGenerator::Shape::fixed;
    return p;
}

SamplerStats run(fakes::RecordedTarget& target, Collect& sink, uint64_t samples, const HaltExtras& extras,
                 const std::atomic<bool>& stop)
{
    SamplingPlan plan;
    plan.samples = samples;
    return run_sampling_loop(target, without_waits(), 1, extras, nullptr, sink, plan, stop);
}

HaltExtras with_stacks(const std::string& elf)
{
    HaltExtras extras;
    StackSamplingOptions stacks;
    stacks.unwinder = std::make_shared<core::Unwinder>(core::ImageSet::open({elf}));
    extras.stacks = stacks;
    return extras;
}

// Every recorded halt sampled once, with stacks and the kernel's tasks (when the ELF has one).
void sample_every_halt(fakes::RecordedTarget& target, const fakes::RecordedHalts& recording, Collect& sink)
{
    HaltExtras extras = with_stacks(recording.elf);
    extras.tasks = detect_rtos(core::Image::open(recording.elf));
    const std::atomic<bool> stop{false};
    const SamplerStats stats = run(target, sink, recording.halts.size(), extras, stop);
    CHECK(stats.samples == recording.halts.size());
    CHECK(stats.end_reason == "sample count reached");
    CHECK(target.left_running == std::vector<bool>{false});
}

// Every sample is its halt, in order, and its task is the one gdb read (when the kernel runs).
void check_tasks(const fakes::RecordedHalts& recording, const Collect& sink)
{
    REQUIRE(sink.samples.size() == recording.halts.size());
    for (size_t i = 0; i < recording.halts.size(); ++i) {
        CAPTURE(i);
        const nlohmann::json& task = recording.halts[i].oracle.at("task");
        const LiveSample& s = sink.samples[i];
        CHECK(s.tagged == !task.is_null());
        if (s.tagged && !task.is_null())
            CHECK(sink.names.at(s.tag) == task.get<std::string>());
    }
}

// Every sample is its halt, in order, and its chain is gdb's.
void check_chains(const fakes::RecordedHalts& recording, const Collect& sink, const std::set<std::string>& outermost)
{
    REQUIRE(sink.samples.size() == recording.halts.size());
    for (size_t i = 0; i < recording.halts.size(); ++i) {
        const fakes::RecordedHalt& halt = recording.halts[i];
        const LiveSample& s = sink.samples[i];
        CAPTURE(i);
        CAPTURE(halt.icount);
        CHECK(s.pc == halt.registers.r[15]);
        CHECK(s.sp == halt.registers.r[13]);
        REQUIRE(s.stack);
        const Expected e = expected_from_gdb(halt.oracle.at("frames"), outermost);
        CAPTURE(e.text);
        CHECK_MESSAGE(s.stack->callers == e.callers,
                      "unwound " << hex_list(s.stack->callers) << "gdb " << hex_list(e.callers));
        CHECK(s.stack->truncated == e.truncated);
    }
}

} // namespace

TEST_CASE("recorded halts: the call-tree chains at -O2 are gdb's backtraces, the overwritten stack truncated")
{
    const fakes::RecordedHalts recording = fakes::load_recorded_halts(recordings, "calltree_o2_m4");
    REQUIRE(recording.halts.size() >= 40);
    REQUIRE_FALSE(detect_rtos(core::Image::open(recording.elf)));
    fakes::RecordedTarget target(recording);
    Collect sink;
    sample_every_halt(target, recording, sink);
    check_chains(recording, sink, {"Reset_Handler"});
    // The recording has both kinds: chains to Reset_Handler, and smash's overwritten frame.
    size_t truncated = 0;
    for (const LiveSample& s : sink.samples)
        truncated += s.stack->truncated;
    CHECK(truncated > 0);
    CHECK(truncated < sink.samples.size());
}

TEST_CASE("recorded halts: FPU tasks at -O2, chains through SysTick's FP frame on PSP and task tags are gdb's")
{
    const fakes::RecordedHalts recording = fakes::load_recorded_halts(recordings, "fpu_o2_m4");
    REQUIRE(detect_rtos(core::Image::open(recording.elf)));
    size_t handler_halts = 0;
    for (const fakes::RecordedHalt& h : recording.halts)
        handler_halts += (h.registers.xpsr & 0x1FF) != 0;
    REQUIRE(handler_halts > 0);
    // PSP read when a handler's chain needs it (QEMU 7.2), or given with the halt (OpenOCD).
    for (bool banked_in_halt : {false, true}) {
        CAPTURE(banked_in_halt);
        fakes::RecordedTarget target(recording);
        target.banked_in_halt = banked_in_halt;
        Collect sink;
        sample_every_halt(target, recording, sink);
        check_chains(recording, sink, {"Reset_Handler", "task_fir", "task_iir"});
        CHECK(target.stack_pointer_reads == (banked_in_halt ? 0u : handler_halts));
        check_tasks(recording, sink);
    }
}

TEST_CASE("recorded halts: by exception, each handler halt is its vector-table handler's row and preempted what gdb shows")
{
    // fpu_o2_m4's halts in SysTick and PendSV: the row is the IPSR's exception, named by the
    // vector table's handler; what it preempted is gdb's frame below its innermost
    // "<signal handler called>" (the interrupted code), counted per row.
    const fakes::RecordedHalts recording = fakes::load_recorded_halts(recordings, "fpu_o2_m4");
    fakes::RecordedTarget target(recording);
    Collect sink;
    sample_every_halt(target, recording, sink);
    REQUIRE(sink.samples.size() == recording.halts.size());
    const core::Image image = core::Image::open(recording.elf);
    core::SampleSet samples;
    std::map<std::string, std::map<std::string, double>> expected;   // row -> gdb's preempted function -> halts
    core::AttributionOptions options;
    options.by = core::Grouping::exception;
    options.vector_table = core::vector_handlers(image.vector_table());
    size_t in_handlers = 0;
    for (size_t i = 0; i < sink.samples.size(); ++i) {
        const LiveSample& s = sink.samples[i];
        samples.pcs.push_back(s.pc);
        samples.exceptions.push_back(s.xpsr & 0x1FF);
        samples.stacks.push_back(s.stack.value_or(core::CallStack{{}, true}));
        if ((s.xpsr & 0x1FF) == 0)
            continue;
        ++in_handlers;
        const nlohmann::json& frames = recording.halts[i].oracle.at("frames");
        std::string handler, preempted;
        for (size_t k = 0; k < frames.size(); ++k)
            if (frames[k].at("exception").get<bool>()) {
                preempted = frames.at(k + 1).at("function").get<std::string>();
                break;
            } else if (!frames[k].at("inline").get<bool>()) {
                handler = frames[k].at("function").get<std::string>();
            }
        const std::string row = core::exception_row_name(s.xpsr & 0x1FF, options.vector_table, image.symbols());
        CAPTURE(row);
        CHECK(row.ends_with(" " + handler));   // the outermost frame above the exception entry
        expected[row][preempted] += 1;
    }
    REQUIRE(in_handlers > 0);
    const core::Profile profile = core::attribute(samples, image.symbols(), nullptr, options);
    double thread = 0;
    for (const core::Row& row : profile.rows)
        if (row.name == "Thread mode")
            thread = row.samples;
    CHECK(thread == double(sink.samples.size() - in_handlers));
    REQUIRE(profile.preempted.size() == expected.size());
    for (const auto& [row, by_function] : expected) {
        CAPTURE(row);
        REQUIRE(profile.preempted.count(row) == 1);
        const auto& found = profile.preempted.at(row);
        CHECK(std::map<std::string, double>(found.begin(), found.end()) == by_function);
    }
}

TEST_CASE("recorded halts: Zephyr-shaped threads, chains to z_thread_entry and thread names are gdb's")
{
    const fakes::RecordedHalts recording = fakes::load_recorded_halts(recordings, "zephyr_m4");
    const std::optional<TaskLayout> threads = detect_rtos(core::Image::open(recording.elf));
    REQUIRE(threads);
    CHECK(threads->kernel == "Zephyr");
    fakes::RecordedTarget target(recording);
    Collect sink;
    sample_every_halt(target, recording, sink);
    // A thread starts in z_thread_entry, which calls its entry function.
    check_chains(recording, sink, {"Reset_Handler", "z_thread_entry"});
    check_tasks(recording, sink);
    std::set<std::string> named;
    for (const auto& [tcb, name] : sink.names)
        named.insert(name);
    CHECK(named.size() >= 2);   // more than one thread among the halts
}

TEST_CASE("recorded halts: the loop takes the plan's halts in order, ends on a lost link or a stop, leaves it running")
{
    const fakes::RecordedHalts recording = fakes::load_recorded_halts(recordings, "calltree_o2_m4");
    const HaltExtras extras = with_stacks(recording.elf);
    const std::atomic<bool> go{false};

    SUBCASE("a plan shorter than the recording: its first halts, in order")
    {
        fakes::RecordedTarget target(recording);
        Collect sink;
        const SamplerStats stats = run(target, sink, 7, extras, go);
        CHECK(stats.samples == 7);
        CHECK(target.halts_served == 7);
        REQUIRE(sink.samples.size() == 7);
        for (size_t i = 0; i < 7; ++i)
            CHECK(sink.samples[i].pc == recording.halts[i].registers.r[15]);
        for (size_t i = 1; i < 7; ++i)
            CHECK(sink.samples[i].time_ns >= sink.samples[i - 1].time_ns);
        CHECK(target.left_running == std::vector<bool>{false});
    }
    SUBCASE("the link lost at the fifth halt: the four before it, then a try to leave the target running")
    {
        fakes::RecordedTarget target(recording);
        target.on_halt = [](size_t halt) {
            if (halt == 5)
                throw transport::Error(transport::Error::Kind::closed, "recording", "halt", "the link went away");
        };
        Collect sink;
        const SamplerStats stats = run(target, sink, 20, extras, go);
        CHECK(stats.samples == 4);
        CHECK(stats.link_lost);
        CHECK(stats.end_reason.rfind("the link was lost: ", 0) == 0);
        CHECK(target.left_running == std::vector<bool>{true});
        REQUIRE(sink.samples.size() == 4);
        CHECK(sink.samples[3].pc == recording.halts[3].registers.r[15]);
    }
    SUBCASE("a stop request (what SIGINT sets) during the sixth halt: that halt's sample is the last")
    {
        fakes::RecordedTarget target(recording);
        std::atomic<bool> stop{false};
        target.on_halt = [&stop](size_t halt) {
            if (halt == 6)
                stop = true;
        };
        Collect sink;
        const SamplerStats stats = run(target, sink, 20, extras, stop);
        CHECK(stats.end_reason == "interrupted by a signal");
        CHECK(stats.samples == 6);
        CHECK(target.halts_served == 6);
        CHECK(target.left_running == std::vector<bool>{false});
    }
    SUBCASE("the recording used up: the target stopped by itself, every halt sampled")
    {
        fakes::RecordedTarget target(recording);
        Collect sink;
        const SamplerStats stats = run(target, sink, recording.halts.size() + 5, extras, go);
        CHECK(stats.samples == recording.halts.size());
        CHECK_FALSE(stats.target_exited);
        CHECK(stats.end_reason.find("the recorded halts ran out") != std::string::npos);
    }
}
