#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "mcuprof/profile/cores.h"
#include "mcuprof/image/error.h"
#include "mcuprof/image/firmware.h"
#include "mcuprof/profile/profile.h"
#include "mcuprof/report/report.h"
#include "mcuprof/image/source_locator.h"
#include "mcuprof/image/symbols.h"
#include "mcuprof/image/unwind/thumb_code.h"

using namespace mcuprof::core;

namespace {

const std::string fixture = std::string(FIXTURES_DIR) + "/symbols_fixture.elf";

const Row& row_named(const Profile& p, std::string_view name)   // a view: GCC 14 warns of a temporary string
{
    auto it = std::find_if(p.rows.begin(), p.rows.end(), [&](const Row& r) { return r.name == name; });
    REQUIRE_MESSAGE(it != p.rows.end(), "no row " << name);
    return *it;
}

bool has_warning(const Profile& p, const std::string& kind)
{
    return std::any_of(p.warnings.begin(), p.warnings.end(), [&](const Warning& w) { return w.kind == kind; });
}

} // namespace

TEST_CASE("attribution: raw samples counted per function, sorted, with standard errors")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    // 7 in func_a (two addresses), 2 in local_b, 1 in func_c.
    s.pcs = {0x08000000, 0x08000002, 0x08000000, 0x08000002, 0x08000000, 0x08000000, 0x08000002,
             0x08000010, 0x08000012, 0x08000020};
    const Profile p = attribute(s, symbols, nullptr, {});
    CHECK(p.total == 10);
    CHECK(p.distinct_addresses == 5);
    REQUIRE(p.rows.size() == 3);
    CHECK(p.rows[0].name == "func_a");
    CHECK(p.rows[0].samples == 7);
    CHECK(p.rows[0].share.percent == doctest::Approx(70.0));
    CHECK(p.rows[0].share.stderr_pp == doctest::Approx(14.4914).epsilon(1e-4));   // sqrt(.21/10)
    CHECK(p.rows[0].distinct_addresses == 2);
    CHECK(p.rows[0].address == 0x08000000u);
    CHECK(p.rows[1].name == "local_b");
    CHECK(p.rows[2].name == "func_c");
    CHECK(p.unattributed == 0);
}

TEST_CASE("attribution: a bucket across a function boundary is split by the functions' even addresses")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    // [0x08000008, 0x08000018): 4 even addresses of func_a, 4 of local_b -> 50 / 50.
    s.buckets.push_back({0x08000008, 16, 100});
    // [0x08000018, 0x08000028): local_b 0x18 0x1a 0x1c, filler 0x1e, func_c 0x20..0x26 -> 3 : 4.
    s.buckets.push_back({0x08000018, 16, 70});
    const Profile p = attribute(s, symbols, nullptr, {});
    CHECK(p.total == doctest::Approx(170));
    CHECK(row_named(p, "func_a").samples == doctest::Approx(50));
    CHECK(row_named(p, "local_b").samples == doctest::Approx(50 + 30));
    CHECK(row_named(p, "func_c").samples == doctest::Approx(40));
    CHECK(p.unattributed == 0);   // the filler took nothing
    // Both buckets cover two functions: one warning that names the first and counts both.
    REQUIRE(has_warning(p, "bucket-straddles"));
    const auto straddles = std::find_if(p.warnings.begin(), p.warnings.end(),
                                        [](const Warning& w) { return w.kind == "bucket-straddles"; });
    CHECK(straddles->message.find("2 sampled block(s)") == 0);
    CHECK(straddles->message.find("0x08000008 (16 bytes: func_a, local_b)") != std::string::npos);
}

TEST_CASE("attribution: buckets inside one function, or over filler, straddle nothing")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    s.buckets.push_back({0x08000000, 16, 10});   // func_a exactly
    s.buckets.push_back({0x08000010, 16, 10});   // local_b and the filler after it
    s.buckets.push_back({0x08000018, 16, 0});    // across local_b and func_c, but never sampled
    CHECK_FALSE(has_warning(attribute(s, symbols, nullptr, {}), "bucket-straddles"));
}

TEST_CASE("attribution: a bucket of filler only, and samples outside the histogram")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    s.buckets.push_back({0x0800001e, 2, 5});
    s.buckets.push_back({0x08000000, 2, 95});
    s.outside_buckets = 10;
    const Profile p = attribute(s, symbols, nullptr, {});
    CHECK(p.total == 110);
    CHECK(row_named(p, "?").samples == 5);
    CHECK(row_named(p, "(outside histogram)").samples == 10);
    CHECK(p.unattributed == 15);
    CHECK(has_warning(p, "unattributed"));   // 15 / 110 > 5 %
}

TEST_CASE("attribution: samples without an address (SWO sleep) count in the total, shares add up to 100 %")
{
    // 2 in func_a, 1 in local_b, 1 sleep sample: 4 samples, 50 / 25 / 25 %, by every grouping.
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    s.pcs = {0x08000000, 0x08000002, 0x08000010};
    s.without_address["(sleep)"] = 1;
    for (const Grouping by : {Grouping::function, Grouping::line, Grouping::address, Grouping::task}) {
        AttributionOptions options;
        options.by = by;
        const Profile p = attribute(s, symbols, nullptr, options);
        CHECK(p.total == 4);
        CHECK(row_named(p, "(sleep)").share.percent == doctest::Approx(25.0));
        double sum = 0;
        for (const Row& r : p.rows)
            sum += r.share.percent;
        CHECK(sum == doctest::Approx(100.0));
    }
}

TEST_CASE("attribution: by address, histogram buckets stay whole rows")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    s.buckets.push_back({0x08000008, 16, 100});
    AttributionOptions o;
    o.by = Grouping::address;
    const Profile p = attribute(s, symbols, nullptr, o);
    REQUIRE(p.rows.size() == 1);
    CHECK(p.rows[0].name == "0x08000008-0x08000017");
    CHECK(p.rows[0].function == "func_a, local_b");
}

TEST_CASE("attribution: samples in the code but in no function, and the 5 % warning")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    s.pcs.assign(94, 0x08000000);
    s.pcs.insert(s.pcs.end(), 6, 0x0800001e);   // the filler between local_b and func_c: 6 %
    const Profile p = attribute(s, symbols, nullptr, {});
    CHECK(row_named(p, "?").samples == 6);
    CHECK(has_warning(p, "unattributed"));
    CHECK_FALSE(has_warning(p, "outside-image"));   // inside .text
    s.pcs.resize(96);   // 2 unattributed of 96: 2.1 %
    CHECK_FALSE(has_warning(attribute(s, symbols, nullptr, {}), "unattributed"));
}

TEST_CASE("attribution: samples outside the image's code get one note naming their address ranges")
{
    // 0x08000000-0x0800002f is the fixture's .text. Another image's code: two addresses of an
    // application above it (0x08010000, 0x08010ffe: one range, under 64 KiB apart), and RAM
    // code far from both (a second range); a sample in the filler is the image's own.
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    s.pcs.assign(90, 0x08000000);
    s.pcs.insert(s.pcs.end(), {0x08010000, 0x08010ffe, 0x08010ffe, 0x20000100, 0x0800001e});
    const Profile p = attribute(s, symbols, nullptr, {});
    CHECK(p.unattributed == 5);
    const auto note = std::find_if(p.warnings.begin(), p.warnings.end(),
                                   [](const Warning& w) { return w.kind == "outside-image"; });
    REQUIRE(note != p.warnings.end());
    CHECK(note->message.find("4 of 95 samples (4.2 %) ran outside the code of ") == 0);
    CHECK(note->message.find("at 0x08010000-0x08010ffe (3), 0x20000100 (1): another image's code") != std::string::npos);
    // The one in the filler alone (1 of 95) is under the 5 % of the no-function warning.
    CHECK_FALSE(has_warning(p, "unattributed"));
    // Without code sections (a source that knows its functions only) nothing is outside.
    const SymbolTable bare = SymbolTable::from({{0x08000000, 16, "func_a", {}, "func_a", ""}});
    CHECK_FALSE(has_warning(attribute(s, bare, nullptr, {}), "outside-image"));
}

TEST_CASE("attribution: a sampler that kept the target halted over half the time is warned of, naming --max-halted")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    s.pcs = {0x08000000, 0x08000010};
    s.sampler = SamplerFigures{};
    s.sampler->wall_seconds = 10;
    s.sampler->run_duty = 0.015;   // halted 98.5 % of the time
    const Profile halted = attribute(s, symbols, nullptr, {});
    REQUIRE(has_warning(halted, "intrusion"));
    const auto w = std::find_if(halted.warnings.begin(), halted.warnings.end(),
                                [](const Warning& x) { return x.kind == "intrusion"; });
    CHECK(w->message.find("halted 98.5 % of the time") != std::string::npos);
    CHECK(w->message.find("--max-halted") != std::string::npos);
    s.sampler->run_duty = 0.5;   // half: the bound is "more than half"
    CHECK_FALSE(has_warning(attribute(s, symbols, nullptr, {}), "intrusion"));
    s.sampler.reset();   // an input without a sampler (a dump, a census)
    CHECK_FALSE(has_warning(attribute(s, symbols, nullptr, {}), "intrusion"));
}

TEST_CASE("attribution: by task, with the dump's task table")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    s.pcs = {0x08000000, 0x08000000, 0x08000010, 0x08000020};
    s.tags = {0x20000100, 0x20000100, 0x20000200, 0x20000300};
    s.tag_names = {{0x20000100, "motor"}, {0x20000200, "link"}};
    AttributionOptions o;
    o.by = Grouping::task;
    const Profile p = attribute(s, symbols, nullptr, o);
    CHECK(row_named(p, "motor").samples == 2);
    CHECK(row_named(p, "link").samples == 1);
    CHECK(row_named(p, "0x20000300").samples == 1);   // a tag the table does not name
}

TEST_CASE("attribution: by address names the function and offset")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    s.pcs = {0x08000012, 0x08000012, 0x08000000};
    AttributionOptions o;
    o.by = Grouping::address;
    const Image locator_image = Image::open(fixture);
    SourceLocator locator(locator_image);
    const Profile p = attribute(s, symbols, &locator, o);
    CHECK(p.rows[0].name == "0x08000012");
    CHECK(p.rows[0].function == "local_b+0x2");
    CHECK(p.rows[1].function == "func_a+0x0");
}

TEST_CASE("attribution: inline frames name the inlined function, lines name the source line")
{
    const std::string elf = std::string(FIXTURES_DIR) + "/inline_fixture.elf";
    const SymbolTable symbols = SymbolTable::load(Image::open(elf));
    const Image locator_image = Image::open(elf);
    SourceLocator locator(locator_image);
    // Find the address of the loop's store (line 8) in main, as the locator test does.
    uint32_t hot = 0;
    for (const Function& f : symbols.functions())
        if (f.name == "main")
            for (uint32_t a = f.start; a < f.start + f.size && hot == 0; a += 2)
                if (locator.frames(a).size() == 3 && locator.frames(a)[0].line == 8)
                    hot = a;
    REQUIRE(hot != 0);
    SampleSet s;
    s.pcs.assign(10, hot);

    CHECK(attribute(s, symbols, &locator, {}).rows[0].name == "main");
    AttributionOptions inlined;
    inlined.inline_frames = true;
    CHECK(attribute(s, symbols, &locator, inlined).rows[0].name == "hot_a");
    AttributionOptions lines;
    lines.by = Grouping::line;
    const Profile by_line = attribute(s, symbols, &locator, lines);
    CHECK(by_line.rows[0].name.ends_with("inline_fixture.c:8"));
    CHECK(by_line.rows[0].function == "hot_a");
    AttributionOptions addresses;
    addresses.by = Grouping::address;
    const Profile by_address = attribute(s, symbols, &locator, addresses);
    REQUIRE(by_address.rows[0].inlined_into.size() == 2);
    CHECK(by_address.rows[0].inlined_into[0] == "run");
    CHECK(by_address.rows[0].inlined_into[1] == "main");
}

TEST_CASE("attribution: exact counts are a census with no error, and no lockstep check")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    s.exact = true;
    s.counts = {{0x08000000, 3504}, {0x08000010, 1004}, {0x08000020, 504}, {0x08000028, 10}};
    const Profile p = attribute(s, symbols, nullptr, {});
    CHECK(p.total == 5022);
    CHECK(row_named(p, "func_a").share.percent == doctest::Approx(69.773).epsilon(1e-4));
    CHECK(row_named(p, "asm_tail").share.percent == doctest::Approx(0.19912).epsilon(1e-3));
    CHECK(row_named(p, "func_a").share.stderr_pp == 0.0);
    CHECK(p.warnings.empty());
}

TEST_CASE("attribution: lockstep is checked per sequence and reported as a warning with its numbers")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    // Sequence 1: period 3 over three functions, repeated.
    for (int i = 0; i < 300; ++i)
        s.pcs.push_back(i % 3 == 0 ? 0x08000000 : i % 3 == 1 ? 0x08000010 : 0x08000020);
    s.sequences = {{0, 300}};
    const Profile p = attribute(s, symbols, nullptr, {});
    REQUIRE(p.lockstep.has_value());
    CHECK(p.lockstep->period == 3);
    REQUIRE(has_warning(p, "lockstep"));
    CHECK(p.warnings.back().message.find("repeats every 3 samples") != std::string::npos);
}

TEST_CASE("attribution: unwound stacks give stack rows and inclusive shares, recursion counted once")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    // Call sites are addresses inside the caller. 4 samples:
    //   func_a -> local_b (leaf pc in local_b)                 x2
    //   func_a -> func_c -> func_c (recursion; leaf in func_c)  x1
    //   func_c alone (a root, no callers)                      x1
    s.pcs = {0x08000012, 0x08000012, 0x08000022, 0x08000024};
    s.stacks = {{{0x08000004}, false}, {{0x08000004}, false}, {{0x08000022, 0x08000006}, false}, {{}, true}};
    const Profile p = attribute(s, symbols, nullptr, {});
    CHECK(p.unwound);
    CHECK(p.total == 4);
    // func_a runs no sample itself, yet holds 3 of 4 stacks.
    CHECK(row_named(p, "func_a").samples == 0);
    CHECK(row_named(p, "func_a").inclusive_samples == 3);
    CHECK(row_named(p, "func_a").inclusive.percent == doctest::Approx(75.0));
    CHECK(row_named(p, "func_a").address == 0x08000000u);
    CHECK(row_named(p, "local_b").inclusive_samples == 2);
    // func_c appears twice on one stack: that sample counts once.
    CHECK(row_named(p, "func_c").samples == 2);
    CHECK(row_named(p, "func_c").inclusive_samples == 2);

    REQUIRE(p.stacks.size() == 3);
    CHECK(p.stacks[0].samples == 2);
    REQUIRE(p.stacks[0].frames.size() == 2);
    CHECK(p.stacks[0].frames[0].function == "func_a");   // root first
    CHECK(p.stacks[0].frames[1].function == "local_b");
    CHECK(p.stacks[0].frames[1].address == 0x08000012u);
    const auto truncated = std::find_if(p.stacks.begin(), p.stacks.end(), [](const StackRow& r) { return r.truncated; });
    REQUIRE(truncated != p.stacks.end());
    CHECK(truncated->frames.size() == 1);
}

TEST_CASE("attribution: flat samples give one-frame stacks only when asked, inclusive equal to self")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    s.pcs = {0x08000000, 0x08000002, 0x08000010};
    CHECK(attribute(s, symbols, nullptr, {}).stacks.empty());
    AttributionOptions options;
    options.stacks = true;
    const Profile p = attribute(s, symbols, nullptr, options);
    CHECK_FALSE(p.unwound);
    REQUIRE(p.stacks.size() == 2);
    CHECK(p.stacks[0].frames.size() == 1);
    CHECK(p.stacks[0].frames[0].function == "func_a");
    CHECK(p.stacks[0].samples == 2);
    CHECK(row_named(p, "func_a").inclusive_samples == 2);
    CHECK(row_named(p, "local_b").inclusive.percent == doctest::Approx(100.0 / 3));
}

TEST_CASE("attribution: samples of time just past a WFI are (sleep), the idle task is idle, and the load has its error")
{
    // sleep_m4 has one WFI, in sleep_until_tick (firmware-ref/src/scen_sleep.c).
    const Image image = Image::open(std::string(FIRMWARE_DIR) + "/sleep_m4.elf");
    const SymbolTable& symbols = image.symbols();
    const Function* sleeper = nullptr;
    const Function* worker = nullptr;
    for (const Function& f : symbols.functions()) {
        if (f.name == "sleep_until_tick")
            sleeper = &f;
        if (f.name == "work")
            worker = &f;
    }
    REQUIRE(sleeper != nullptr);
    REQUIRE(worker != nullptr);
    uint32_t after_wfi = 0;
    for (uint32_t a = sleeper->start; a < sleeper->start + sleeper->size; a += 2)
        if (symbols.halfword(a) == uint16_t(0xBF30))
            after_wfi = a + 2;
    REQUIRE(after_wfi != 0);
    CHECK(follows_wait_instruction(symbols, after_wfi));
    CHECK_FALSE(follows_wait_instruction(symbols, after_wfi - 2));   // the WFI itself has not run
    CHECK_FALSE(follows_wait_instruction(symbols, worker->start + 2));

    // 30 asleep (in the idle task), 20 awake in the idle task, 50 in a task that works.
    SampleSet samples;
    samples.measures_time = true;
    samples.tag_names = {{0x20000100, "IDLE"}, {0x20000200, "motor"}};
    for (int i = 0; i < 100; ++i) {
        samples.pcs.push_back(i < 30 ? after_wfi : worker->start + 2);
        samples.tags.push_back(i < 50 ? 0x20000100 : 0x20000200);
    }
    AttributionOptions by_function;
    const Profile profile = attribute(samples, symbols, nullptr, by_function);
    REQUIRE(profile.load);
    CHECK(profile.load->sleep_samples == 30);
    CHECK(profile.load->idle_task_samples == 20);
    CHECK(profile.load->busy.percent == doctest::Approx(50.0));
    CHECK(profile.load->busy.stderr_pp == doctest::Approx(100 * std::sqrt(0.5 * 0.5 / 100)));
    auto row = [](const Profile& p, const std::string& name) {
        auto found = std::find_if(p.rows.begin(), p.rows.end(), [&](const Row& r) { return r.name == name; });
        return found == p.rows.end() ? 0.0 : found->samples;
    };
    CHECK(row(profile, "(sleep)") == 30);
    CHECK(row(profile, "work") == 70);
    // By task, sleep stays with its task; the idle task is shown as idle.
    AttributionOptions by_task;
    by_task.by = Grouping::task;
    const Profile tasks = attribute(samples, symbols, nullptr, by_task);
    CHECK(row(tasks, "IDLE (idle)") == 50);
    CHECK(row(tasks, "motor") == 50);
    // Samples of executed instructions (instruction-count pacing) cannot see sleep.
    samples.measures_time = false;
    const Profile instructions = attribute(samples, symbols, nullptr, by_function);
    CHECK_FALSE(instructions.load);
    CHECK(instructions.sleep_not_counted);
    CHECK(row(instructions, "(sleep)") == 0);
    CHECK(row(instructions, "sleep_until_tick") == 30);

    // DWT_PCSR reads the instruction last executed: asleep, the WFI itself, as well as the one
    // after it. A halt at the WFI has not run it yet: not asleep.
    const uint32_t wfi = after_wfi - 2;
    CHECK(is_wait_instruction(symbols, wfi));
    CHECK_FALSE(is_wait_instruction(symbols, after_wfi));
    CHECK_FALSE(is_wait_instruction(symbols, worker->start));
    SampleSet reads;
    reads.measures_time = true;
    reads.pcs = {wfi, wfi, after_wfi, worker->start + 2};
    CHECK(row(attribute(reads, symbols, nullptr, by_function), "(sleep)") == 1);   // a halt's samples
    reads.reads_pcsr = true;
    const Profile pcsr = attribute(reads, symbols, nullptr, by_function);
    CHECK(row(pcsr, "(sleep)") == 3);
    REQUIRE(pcsr.load);
    CHECK(pcsr.load->sleep_samples == 3);
}

TEST_CASE("attribution: halts that found DHCSR.S_SLEEP set are (sleep) whatever their PC, by task the task's")
{
    const Image image = Image::open(std::string(FIRMWARE_DIR) + "/sleep_m4.elf");
    const SymbolTable& symbols = image.symbols();
    auto work = std::find_if(symbols.functions().begin(), symbols.functions().end(),
                             [](const Function& f) { return f.name == "work"; });
    REQUIRE(work != symbols.functions().end());
    // Ten halts at one PC inside work() (sleep-on-exit leaves no WFI to see), four of them found
    // asleep by DHCSR: 0, 1 and 2 in the idle task, 7 in motor; 3 and 4 awake in the idle task.
    SampleSet samples;
    samples.measures_time = true;
    samples.tag_names = {{0x20000100, "IDLE"}, {0x20000200, "motor"}};
    for (int i = 0; i < 10; ++i) {
        samples.pcs.push_back(work->start + 2);
        samples.tags.push_back(i < 5 ? 0x20000100 : 0x20000200);
        samples.exceptions.push_back(0);
    }
    samples.found_asleep = {0, 1, 2, 7};
    auto row = [](const Profile& p, const std::string& name) -> const Row* {
        auto found = std::find_if(p.rows.begin(), p.rows.end(), [&](const Row& r) { return r.name == name; });
        return found == p.rows.end() ? nullptr : &*found;
    };
    const Profile flat = attribute(samples, symbols, nullptr, {});
    REQUIRE(row(flat, "(sleep)") != nullptr);
    CHECK(row(flat, "(sleep)")->samples == 4);
    CHECK(row(flat, "work")->samples == 6);
    CHECK(flat.unattributed == 0);
    REQUIRE(flat.load);
    CHECK(flat.load->sleep_samples == 4);
    CHECK(flat.load->idle_task_samples == 2);
    CHECK(flat.load->busy.percent == doctest::Approx(40.0));
    AttributionOptions by_task;
    by_task.by = Grouping::task;
    const Profile tasks = attribute(samples, symbols, nullptr, by_task);
    CHECK(row(tasks, "IDLE (idle)")->samples == 5);
    CHECK(row(tasks, "motor")->samples == 5);
    AttributionOptions by_exception;
    by_exception.by = Grouping::exception;
    const Profile exceptions = attribute(samples, symbols, nullptr, by_exception);
    CHECK(row(exceptions, "(sleep)")->samples == 4);
    CHECK(row(exceptions, "Thread mode")->samples == 6);

    // Two bursts of five (PCSR-style correlated reads): the sleep row's error from their spread,
    // 3 and 1 asleep of 5, p = 0.4: var = 2/1 * ((3 - 2)^2 + (1 - 2)^2) / 10^2 = 0.04, 20 points.
    samples.bursts = {0, 5};
    const Profile bursts = attribute(samples, symbols, nullptr, {});
    CHECK(bursts.errors.bursts == 2);
    CHECK(row(bursts, "(sleep)")->share.stderr_pp == doctest::Approx(20.0));
    CHECK(row(bursts, "work")->share.stderr_pp == doctest::Approx(20.0));
    samples.bursts.clear();

    // Two cores, alternating: core 1 holds samples 1, 3, 5, 7, 9, of which 1 and 7 were asleep.
    samples.core_names = {{0, "core 0"}, {1, "core 1"}};
    for (int i = 0; i < 10; ++i)
        samples.cores.push_back(uint32_t(i % 2));
    const Profile cores = attribute(samples, symbols, nullptr, {});
    REQUIRE(cores.cores.size() == 2);
    auto core_row = [](const CoreProfile& c, const std::string& name) {
        auto found = std::find_if(c.rows.begin(), c.rows.end(), [&](const Row& r) { return r.name == name; });
        return found == c.rows.end() ? 0.0 : found->samples;
    };
    CHECK(core_row(cores.cores[0], "(sleep)") == 2);   // samples 0 and 2
    CHECK(core_row(cores.cores[1], "(sleep)") == 2);   // samples 1 and 7
    CHECK(core_row(cores.cores[1], "work") == 3);
}

TEST_CASE("attribution: bursts of correlated reads get their standard errors from the spread between bursts")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    // Three bursts: 4 reads all in func_a, 4 all in local_b, 2 in func_a. p(func_a) = 6/10.
    s.pcs = {0x08000000, 0x08000002, 0x08000000, 0x08000000, 0x08000010, 0x08000012, 0x08000010, 0x08000010,
             0x08000002, 0x08000000};
    s.bursts = {0, 4, 8};
    const Profile p = attribute(s, symbols, nullptr, {});
    CHECK(p.errors.bursts == 3);
    // By hand: y = (4, 0, 2), m = (4, 4, 2), p = 0.6; residuals y - p m = (1.6, -2.4, 0.8);
    // squares 2.56 + 5.76 + 0.64 = 8.96; var = 3/2 * 8.96 / 100 = 0.1344; se = 36.66 pp.
    const Row& a = row_named(p, "func_a");
    CHECK(a.share.percent == doctest::Approx(60.0));
    CHECK(a.share.stderr_pp == doctest::Approx(100 * std::sqrt(0.1344)).epsilon(1e-9));
    // local_b: y = (0, 4, 0), p = 0.4; residuals (-1.6, 2.4, -0.8): the same spread.
    CHECK(row_named(p, "local_b").share.stderr_pp == doctest::Approx(100 * std::sqrt(0.1344)).epsilon(1e-9));
    // The binomial figure would be sqrt(.24 / 10) = 15.49 pp: 2.37 times smaller.
    CHECK(p.errors.largest_ratio == doctest::Approx(std::sqrt(0.1344 / 0.024)).epsilon(1e-9));
    CHECK(a.share.low < 60.0);
    CHECK(a.share.high > 60.0);

    // Bursts that do not fit the samples (out of order, past the end) are not trusted: binomial.
    s.bursts = {0, 8, 4};
    CHECK(attribute(s, symbols, nullptr, {}).errors.bursts == 0);
    s.bursts = {0, 4, 10};
    CHECK(attribute(s, symbols, nullptr, {}).errors.bursts == 0);

    // Without bursts, the same samples are binomial.
    s.bursts.clear();
    const Profile binomial = attribute(s, symbols, nullptr, {});
    CHECK(binomial.errors.bursts == 0);
    CHECK(row_named(binomial, "func_a").share.stderr_pp == doctest::Approx(100 * std::sqrt(0.024)).epsilon(1e-9));
    CHECK_FALSE(binomial.errors.lower_bounds);   // halts, each after its own wait: binomial holds
}

TEST_CASE("attribution: PCSR reads with no bursts to take errors from get binomial errors marked lower bounds")
{
    // OpenOCD's gmon.out (reads back to back, no order kept) or a PCSR recording from before
    // burst marks: nothing tells how correlated the reads were, and the binomial figure is
    // too small. With bursts the spread gives the errors and they are no lower bounds.
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    s.pcs = {0x08000000, 0x08000002, 0x08000010, 0x08000010};
    s.reads_pcsr = true;
    const Profile gmon_like = attribute(s, symbols, nullptr, {});
    CHECK(gmon_like.errors.bursts == 0);
    CHECK(gmon_like.errors.lower_bounds);
    CHECK(row_named(gmon_like, "func_a").share.stderr_pp == doctest::Approx(100 * std::sqrt(0.25 / 4)));
    std::ostringstream text;
    write_text(gmon_like, text);
    CHECK(text.str().find("standard errors binomial, as if each read were taken on its own") != std::string::npos);
    CHECK(text.str().find("lower bounds") != std::string::npos);
    CHECK(to_json(gmon_like)["errors"]["lower_bounds"] == true);
    s.bursts = {0, 2};
    const Profile bursts = attribute(s, symbols, nullptr, {});
    CHECK(bursts.errors.bursts == 2);
    CHECK_FALSE(bursts.errors.lower_bounds);
    CHECK(to_json(bursts)["errors"]["lower_bounds"] == false);
}

// A sampled core whose truth is known by construction: each sample finds the function of the
// sample before with probability 0.9, else a fresh draw from the true shares (60, 30, 10 %),
// which keeps them the chain's stationary shares.
struct StickyCore {
    static constexpr uint32_t pcs[3] = {0x08000000, 0x08000010, 0x08000020};
    static constexpr double truth[3] = {60.0, 30.0, 10.0};
    static constexpr const char* names[3] = {"func_a", "local_b", "func_c"};
    std::mt19937 random;
    int state = 0;

    explicit StickyCore(uint32_t seed) : random(seed) {}
    double uniform() { return double(random()) / 4294967296.0; }   // portable, unlike std's distributions
    int draw()
    {
        const double u = uniform();
        return u < 0.6 ? 0 : u < 0.9 ? 1 : 2;
    }
    // The next sample's PC; `fresh` draws it anew (the first sample after a random wait).
    uint32_t next(bool fresh)
    {
        if (fresh || uniform() >= 0.9)
            state = draw();
        return pcs[state];
    }
    // How many of the three rows' 95 % intervals hold their true share.
    static int covered(const Profile& profile)
    {
        int n = 0;
        for (int f = 0; f < 3; ++f) {
            auto it = std::find_if(profile.rows.begin(), profile.rows.end(),
                                   [&](const Row& r) { return r.name == names[f]; });
            n += it != profile.rows.end() && it->share.low <= truth[f] && truth[f] <= it->share.high;
        }
        return n;
    }
};

TEST_CASE("attribution: the 95 % interval of burst errors covers the truth about 95 % of the time")
{
    // A sampled core that stays in its function for a while: each read is the function of the
    // read before with probability 0.9, else a fresh draw from the true shares (60, 30, 10 %),
    // which keeps them the chain's stationary shares. A burst is 16 back-to-back reads; the
    // bursts are independent (a random wait between them). 400 profiles of 40 bursts, every
    // row's 95 % interval checked against its true share: 1200 intervals, so a coverage of
    // 95 % gives 1140 +- 7.5, one of 80 % 960 +- 14. The binomial intervals of the same
    // samples are checked to fail, or the test would prove nothing.
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    StickyCore core(20261201);
    int covered = 0, covered_binomial = 0;
    const int intervals = 400 * 3;
    for (int run = 0; run < 400; ++run) {
        SampleSet s;
        for (int burst = 0; burst < 40; ++burst) {
            s.bursts.push_back(s.pcs.size());
            for (int read = 0; read < 16; ++read)
                s.pcs.push_back(core.next(read == 0));
        }
        covered += StickyCore::covered(attribute(s, symbols, nullptr, {}));
        s.bursts.clear();
        covered_binomial += StickyCore::covered(attribute(s, symbols, nullptr, {}));
    }
    MESSAGE("burst intervals covered " << covered << " of " << intervals << ", binomial " << covered_binomial);
    CHECK(covered >= 1100);            // 95 % less 5 standard errors
    CHECK(covered <= 1170);            // and not so wide that it covers everything
    CHECK(covered_binomial < 960);     // the binomial intervals are far too narrow here
}

TEST_CASE("attribution: wall-clock halts get their standard errors from the spread between batches of consecutive halts")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    // 18 halts: min(30, floor(sqrt(18))) = 4 batches of 18 / 4 = 4, the last taking the rest
    // (starts 0, 4, 8, 12). func_a in 4, 0, 4 and 2 of 6: y = (4, 0, 4, 2), m = (4, 4, 4, 6),
    // p = 10/18.
    s.pcs = {0x08000000, 0x08000000, 0x08000002, 0x08000000,    // func_a x4
             0x08000010, 0x08000010, 0x08000012, 0x08000010,    // local_b x4
             0x08000000, 0x08000002, 0x08000000, 0x08000000,    // func_a x4
             0x08000000, 0x08000010, 0x08000002, 0x08000010, 0x08000010, 0x08000010};
    s.wall_clock_halts = true;
    s.measures_time = true;
    const Profile p = attribute(s, symbols, nullptr, {});
    CHECK(p.errors.bursts == 4);
    CHECK(p.errors.batches);
    // By hand: residuals y - p m = 4 - 40/18, -40/18, 4 - 40/18, 2 - 60/18 = 16/9, -20/9, 16/9, -12/9;
    // squares (256 + 400 + 256 + 144) / 81 = 1056 / 81; var = 4/3 * (1056 / 81) / 324.
    const double variance = 4.0 / 3.0 * (1056.0 / 81.0) / 324.0;
    const Row& a = row_named(p, "func_a");
    CHECK(a.share.percent == doctest::Approx(100.0 * 10 / 18));
    CHECK(a.share.stderr_pp == doctest::Approx(100 * std::sqrt(variance)).epsilon(1e-9));
    CHECK(to_json(p)["errors"]["method"] == "batches");
    CHECK(to_json(p)["errors"]["batches"] == 4);
    CHECK(to_json(p)["errors"]["bursts"] == 0);
    std::ostringstream text;
    write_text(p, text);
    CHECK(text.str().find("standard errors from the spread between 4 batches of consecutive wall-clock halts") !=
          std::string::npos);

    // Too few halts for two batches (3: floor(sqrt(3)) = 1): binomial.
    SampleSet few;
    few.pcs = {0x08000000, 0x08000010, 0x08000000};
    few.wall_clock_halts = true;
    CHECK(attribute(few, symbols, nullptr, {}).errors.bursts == 0);
    // Halts paced by instruction counts (not wall-clock ones) stay binomial.
    s.wall_clock_halts = false;
    CHECK(attribute(s, symbols, nullptr, {}).errors.bursts == 0);
    // Marked bursts win over batches: a recording's back-to-back reads.
    s.wall_clock_halts = true;
    s.bursts = {0, 9};
    const Profile bursts = attribute(s, symbols, nullptr, {});
    CHECK(bursts.errors.bursts == 2);
    CHECK_FALSE(bursts.errors.batches);
}

TEST_CASE("attribution: the 95 % interval of batch errors covers the truth about 95 % of the time")
{
    // A core halted by wall clock that ran little between halts: each halt finds the function
    // of the halt before with probability 0.9, else a fresh draw from the true shares (60, 30,
    // 10 %), one long chain with no independent bursts at all. 400 profiles of 3000 halts (30
    // batches of 100), every row's 95 % interval against its true share: 1200 intervals, so a
    // coverage of 95 % gives 1140 +- 7.5, one of 80 % 960 +- 14. Batch means is right only as
    // batches outgrow the correlation (an integrated autocorrelation time of about 19 halts
    // here): with batches of 30 (900 halts) the intervals covered 1061 (88.4 %), so a little
    // under 95 % is expected; the binomial intervals of the same samples must fail.
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    StickyCore core(20261202);
    int covered = 0, covered_binomial = 0;
    const int intervals = 400 * 3;
    for (int run = 0; run < 400; ++run) {
        SampleSet s;
        for (int halt = 0; halt < 3000; ++halt)
            s.pcs.push_back(core.next(halt == 0));
        s.wall_clock_halts = true;
        covered += StickyCore::covered(attribute(s, symbols, nullptr, {}));
        s.wall_clock_halts = false;
        covered_binomial += StickyCore::covered(attribute(s, symbols, nullptr, {}));
    }
    MESSAGE("batch intervals covered " << covered << " of " << intervals << ", binomial " << covered_binomial);
    CHECK(covered >= 1080);            // at most 5 points under 95 %: 1140 less 4 standard errors of 80 %'s
    CHECK(covered <= 1170);            // and not so wide that it covers everything
    CHECK(covered_binomial < 960);     // the binomial intervals are far too narrow here
}

TEST_CASE("attribution: an empty sample set is an empty profile under every grouping")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    for (Grouping by : {Grouping::function, Grouping::line, Grouping::address, Grouping::task, Grouping::stack,
                        Grouping::core, Grouping::value, Grouping::exception}) {
        CAPTURE(name_of(by));
        SampleSet empty;
        empty.measures_time = true;   // the CPU load of no samples is none, not 0 / 0
        AttributionOptions options;
        options.by = by;
        options.stacks = true;
        Profile p;
        REQUIRE_NOTHROW(p = attribute(empty, symbols, nullptr, options));
        CHECK(p.total == 0);
        CHECK(p.stacks.empty());
        CHECK(p.cores.empty());
        CHECK_FALSE(p.load);
        // By core the one core is listed, as a core named and never sampled is; with no samples.
        CHECK(p.rows.size() == (by == Grouping::core ? 1u : 0u));
        for (const Row& row : p.rows) {
            CHECK(row.samples == 0);
            CHECK(row.share.percent == 0);
        }
    }
}

TEST_CASE("attribution: a multi-core sample set has each core's profile, with shares of its own samples")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    // Core 0: 3 in func_a, 1 in func_c; core 1: 2 in local_b, 2 in func_c; core 2 named, never sampled.
    s.pcs = {0x08000000, 0x08000010, 0x08000000, 0x08000012, 0x08000002, 0x08000020, 0x08000020, 0x08000020};
    s.cores = {0, 1, 0, 1, 0, 1, 0, 1};
    s.core_names = {{0, "core 0"}, {1, "core 1"}, {2, "core 2"}};
    const Profile p = attribute(s, symbols, nullptr, {});
    CHECK(p.total == 8);
    REQUIRE(p.cores.size() == 3);
    CHECK(p.cores[0].total == 4);
    CHECK(p.cores[0].rows[0].name == "func_a");
    CHECK(p.cores[0].rows[0].samples == 3);
    CHECK(p.cores[0].rows[0].share.percent == doctest::Approx(75.0));
    // The binomial standard error of 3 of 4: sqrt(0.75 * 0.25 / 4) = 21.65 percentage points.
    CHECK(p.cores[0].rows[0].share.stderr_pp == doctest::Approx(21.65).epsilon(0.001));
    CHECK(p.cores[1].rows[0].samples == 2);
    CHECK(p.cores[1].rows[0].share.percent == doctest::Approx(50.0));
    CHECK(p.cores[2].total == 0);
    CHECK(p.cores[2].rows.empty());

    AttributionOptions by_core;
    by_core.by = Grouping::core;
    const Profile c = attribute(s, symbols, nullptr, by_core);
    REQUIRE(c.rows.size() == 3);
    CHECK(c.rows[0].name == "core 0");
    CHECK(c.rows[0].samples == 4);
    CHECK(c.rows[0].share.percent == doctest::Approx(50.0));
    CHECK(c.rows[2].name == "core 2");
    CHECK(c.rows[2].samples == 0);
    CHECK(c.cores[1].rows[0].name == "func_c");   // each core's own table stays by function

    // How the halts stopped the cores: each halt's spread bounds, in percentiles, in every report.
    // Five halts' upper bounds 100..500 us: the median (nearest rank of 5) is 300, p99 500.
    s.core_stops = CoreStops{"back to back", false, {10, 20, 30, 40, 50}, {500, 100, 300, 200, 400}};
    const Profile timed = attribute(s, symbols, nullptr, {});
    REQUIRE(timed.core_stops);
    CHECK(timed.core_stops->halts == 5);
    CHECK(timed.core_stops->at_most_us.p50 == 300);
    CHECK(timed.core_stops->at_most_us.p99 == 500);
    CHECK(timed.core_stops->at_least_us.p50 == 30);
    CHECK(describe_core_stops(timed) ==
          "cores stopped within 300 us of each other (median of 5 halts), p99 500 us, max 500 us; at least 30 us "
          "apart (median): back to back");
    const nlohmann::json doc = to_json(timed);
    CHECK(doc["core_stops"]["at_most_us"]["p50"] == 300);
    CHECK(doc["core_stops"]["halts"] == 5);
    std::ostringstream text;
    write_text(timed, text);
    CHECK(text.str().find("cores stopped within 300 us") != std::string::npos);
    std::ostringstream html;
    write_html(HtmlReport{timed}, html);
    CHECK(html.str().find("</dt><dd>cores stopped within 300 us") != std::string::npos);
    s.core_stops = CoreStops{"all-stop", true, {}, {}};
    CHECK(describe_core_stops(attribute(s, symbols, nullptr, {})) ==
          "cores stopped at one instant at every halt, no skew: all-stop");
    CHECK(to_json(attribute(s, symbols, nullptr, {}))["core_stops"]["simultaneous"] == true);
    s.core_stops = CoreStops{"no clock", false, {}, {}};
    CHECK(describe_core_stops(attribute(s, symbols, nullptr, {})) ==
          "the skew between the cores' stops was not measured: no clock");
    s.core_stops.reset();

    // One core: no per-core profiles.
    s.cores.clear();
    s.core_names.clear();
    CHECK(attribute(s, symbols, nullptr, {}).cores.empty());
}

TEST_CASE("attribution: each core keeps its own bursts of correlated reads, and its errors come from their spread")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    // Three bursts of the whole set (indices 0, 4, 8), the two cores' reads interleaved:
    //   burst 0: core 0 func_a, core 1 func_a, core 0 func_a, core 1 func_a
    //   burst 1: core 0 only (local_b x 4)
    //   burst 2: core 1 local_b, core 1 local_b, core 0 func_a, core 1 func_a
    s.pcs = {0x08000000, 0x08000000, 0x08000002, 0x08000002, 0x08000010, 0x08000012, 0x08000010, 0x08000012,
             0x08000010, 0x08000012, 0x08000000, 0x08000002};
    s.cores = {0, 1, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1};
    s.bursts = {0, 4, 8};
    // Core 0's samples are the whole set's 0, 2, 4-7 and 10: its bursts begin at its 0th, 2nd
    // and 6th sample. Core 1's are 1, 3, 8, 9, 11: burst 1 has none of them, so {0, 2}.
    CHECK(samples_of_core(s, 0).bursts == std::vector<size_t>{0, 2, 6});
    CHECK(samples_of_core(s, 1).bursts == std::vector<size_t>{0, 2});
    CHECK(samples_of_core(s, 2).bursts.empty());   // no samples, no bursts

    const Profile p = attribute(s, symbols, nullptr, {});
    REQUIRE(p.cores.size() == 2);
    // Core 1 by hand: bursts of m = (2, 3) reads with y = (2, 1) in func_a, p = 3/5; residuals
    // y - p m = (0.8, -0.8); var = k / (k - 1) * sum / M^2 = 2 * 1.28 / 25 = 0.1024; se = 32 pp
    // (the binomial one would be sqrt(.24 / 5) = 21.9 pp).
    const Row& a1 = p.cores[1].rows[0];
    CHECK(a1.name == "func_a");
    CHECK(a1.share.percent == doctest::Approx(60.0));
    CHECK(a1.share.stderr_pp == doctest::Approx(32.0).epsilon(1e-9));
    // Core 0: m = (2, 4, 1), func_a's y = (2, 0, 1), p = 3/7; residuals (2 - 6/7, -12/7, 1 - 3/7)
    // = (8/7, -12/7, 4/7); squares 224/49; var = 3/2 * 224/49 / 49 = 0.13994; se = 37.41 pp.
    const auto a0 = std::find_if(p.cores[0].rows.begin(), p.cores[0].rows.end(),
                                 [](const Row& r) { return r.name == "func_a"; });
    REQUIRE(a0 != p.cores[0].rows.end());
    CHECK(a0->share.stderr_pp == doctest::Approx(100 * std::sqrt(1.5 * 224.0 / 49 / 49)).epsilon(1e-9));

    // Each core's table says how its errors were computed: from its own bursts (3 and 2).
    CHECK(p.cores[0].errors.bursts == 3);
    CHECK(p.cores[1].errors.bursts == 2);
    CHECK_FALSE(p.cores[1].errors.batches);
    CHECK(p.cores[1].errors.largest_ratio == doctest::Approx(32.0 / (100 * std::sqrt(0.24 / 5))).epsilon(1e-6));
    const nlohmann::json doc = to_json(p);
    CHECK(doc["cores"][1]["errors"]["method"] == "bursts");
    CHECK(doc["cores"][1]["errors"]["bursts"] == 2);
    std::ostringstream text;
    write_text(p, text);
    CHECK(text.str().find("core 1: samples 5\nstandard errors from the spread between 2 bursts") != std::string::npos);
    const std::optional<Profile> one = core_profile(p, 1);   // what diff --core compares
    REQUIRE(one);
    CHECK(one->errors.bursts == 2);

    // Bursts out of order are no bursts of any core, as they are none of the whole set.
    s.bursts = {0, 8, 4};
    CHECK(samples_of_core(s, 0).bursts.empty());
}

TEST_CASE("attribution: each core keeps its part of every sequence, and the run's instruction count")
{
    SampleSet s;
    s.pcs = {0x08000000, 0x08000000, 0x08000002, 0x08000002, 0x08000010, 0x08000012, 0x08000010, 0x08000012,
             0x08000010, 0x08000012, 0x08000000, 0x08000002};
    s.cores = {0, 1, 0, 1, 0, 0, 0, 0, 1, 1, 0, 1};
    s.sequences = {{0, 4}, {4, 8}, {8, 12}};
    s.run_instructions = 123456;
    using Spans = std::vector<std::pair<size_t, size_t>>;
    auto spans = [&](uint32_t core) {
        Spans out;
        for (const Sequence& q : samples_of_core(s, core).sequences)
            out.emplace_back(q.begin, q.end);
        return out;
    };
    // Core 0's samples: 0, 2 | 4, 5, 6, 7 | 10, at its own indices 0-1 | 2-5 | 6.
    CHECK(spans(0) == Spans{{0, 2}, {2, 6}, {6, 7}});
    // Core 1's: 1, 3 | none | 8, 9, 11: the middle sequence is none of its.
    CHECK(spans(1) == Spans{{0, 2}, {2, 5}});
    CHECK(spans(2).empty());
    CHECK(samples_of_core(s, 1).run_instructions == 123456u);
}

TEST_CASE("attribution: each core's table groups by exception and by value, and counts sleep, as the whole set does")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    s.pcs = {0x08000000, 0x08000010, 0x08000002, 0x08000012};
    s.cores = {0, 1, 0, 1};
    s.exceptions = {0, 15, 15, 0};   // Thread mode and SysTick on each core
    s.variable = "app_state";
    s.values = {0, 1, 1, 1};
    s.value_names = {{0, "IDLE"}, {1, "RUN"}};
    s.measures_time = true;
    s.reads_pcsr = true;
    s.core_names = {{0, "core 0"}, {1, "core 1"}, {2, "core 2"}};   // core 2 never sampled
    const SampleSet one = samples_of_core(s, 1);
    CHECK(one.exceptions == std::vector<uint32_t>{15, 0});
    CHECK(one.values == std::vector<uint32_t>{1, 1});
    CHECK(one.variable == "app_state");
    CHECK(one.value_names.at(1) == "RUN");
    CHECK(one.measures_time);
    CHECK(one.reads_pcsr);

    AttributionOptions by_value;
    by_value.by = Grouping::value;
    const Profile v = attribute(s, symbols, nullptr, by_value);   // each core's own table: no throw
    REQUIRE(v.cores.size() == 3);
    CHECK(v.cores[2].total == 0);
    CHECK(v.cores[2].rows.empty());
    REQUIRE(v.cores[1].rows.size() == 1);
    CHECK(v.cores[1].rows[0].name == "RUN");
    CHECK(v.cores[1].rows[0].samples == 2);
    AttributionOptions by_exception;
    by_exception.by = Grouping::exception;
    const Profile e = attribute(s, symbols, nullptr, by_exception);
    REQUIRE(e.cores.size() == 3);
    CHECK(e.cores[0].rows.size() == 2);   // Thread mode and SysTick, one sample each
}

TEST_CASE("attribution by value: one row per value of the watched variable, named as the source named it")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    s.pcs = {0x08000000, 0x08000002, 0x08000000, 0x08000002, 0x08000000};
    s.variable = "app_state";
    s.values = {0, 0, 1, 0, 5};
    s.value_names = {{0, "IDLE"}, {1, "RUN"}};
    AttributionOptions by_value;
    by_value.by = Grouping::value;
    const Profile p = attribute(s, symbols, nullptr, by_value);
    CHECK(grouping_name(p) == "var:app_state");
    REQUIRE(p.rows.size() == 3);
    CHECK(row_named(p, "IDLE").samples == 3);
    CHECK(row_named(p, "RUN").samples == 1);
    CHECK(row_named(p, "5").samples == 1);   // a value the source did not name: its number
    CHECK(p.rows.front().name == "IDLE");

    CHECK(parse_grouping("var:app_state") == Grouping::value);
    CHECK(variable_of_grouping("var:app_state") == "app_state");
    CHECK_FALSE(parse_grouping("var:").has_value());
    s.values.clear();   // samples without the variable's values cannot be grouped by it
    CHECK_THROWS_AS(attribute(s, symbols, nullptr, by_value), Error);
}
