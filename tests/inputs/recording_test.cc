#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <boost/crc.hpp>

#include "mcuprof/report/report.h"
#include "mcuprof/inputs/error.h"
#include "mcuprof/sampler/live.h"
#include "mcuprof/inputs/recording.h"
#include "mcuprof/sampler/recording_sink.h"
#include "mcuprof/sampler/watched_variable.h"
#include "kept_headers.h"

using namespace mcuprof::sources;
using tests::kept;

namespace {

struct TempFile {
    std::string path = std::filesystem::temp_directory_path() / ("mcuprof-rec-" + std::to_string(::getpid()) + ".bin");
    ~TempFile() { std::remove(path.c_str()); }
};

// A header of the link kind alone.
RunHeader header_of(LinkKind source)
{
    RunHeader header;
    header.link.source = source;
    return header;
}

void write_three(const std::string& path)
{
    RunHeader header = header_of(LinkKind::gdb);
    header.tasks = {{0x20000100, "motor"}};   // as recordings before task events had them
    RecordingWriter w(path, kept(header));
    for (uint32_t i = 0; i < 3; ++i) {
        LiveSample s;
        s.time_ns = 1000u * i + (uint64_t(1) << 33);   // a time past 32 bits
        s.pc = 0x08000100 + 2 * i;
        s.lr = 0x08000201;
        s.sp = 0x20001000;
        s.xpsr = 0x01000000 | (i == 2 ? 15u : 0u);      // the last in SysTick (exception 15)
        s.tag = 0x20000100;
        s.tagged = true;
        s.starts_burst = i != 1;   // bursts of two reads and of one
        w.sample(s);
    }
    w.event({{"kind", "target-exit"}, {"message", "the target exited with code 0"}});
    SamplerStats stats;
    stats.samples = 3;
    stats.wall_seconds = 0.5;
    stats.halt_latency_us = {100, 200, 300};
    stats.end_reason = "sample count reached";
    w.summary(stats.figures());
}

// A record as a writer of another version (or a damaged one) may leave it: type, length,
// CRC-32 of the payload, the payload (docs/formats.md, "Recording").
constexpr uint16_t summary_type = 3;
void append_record(const std::string& path, uint16_t type, const std::string& payload)
{
    boost::crc_32_type crc;
    crc.process_bytes(payload.data(), payload.size());
    const uint32_t checksum = crc.checksum();
    std::ofstream out(path, std::ios::binary | std::ios::app);
    const char head[8] = {char(type), char(type >> 8), char(payload.size()), char(payload.size() >> 8),
                          char(checksum), char(checksum >> 8), char(checksum >> 16), char(checksum >> 24)};
    out.write(head, sizeof head);
    out << payload;
}

size_t file_size(const std::string& path)
{
    return std::filesystem::file_size(path);
}

std::string file_bytes(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The length of the recording's header JSON (docs/formats.md: u32 at offset 12).
uint32_t header_length(const std::string& bytes)
{
    uint32_t length = 0;
    for (int i = 3; i >= 0; --i)
        length = length << 8 | uint8_t(bytes[12 + i]);
    return length;
}

// The recording at `path` with `text` for its header's JSON, as a damaged file or another
// writer may have it.
void replace_header(const std::string& path, const std::string& text)
{
    const std::string bytes = file_bytes(path);
    std::string out = bytes.substr(0, 12);
    for (int i = 0; i < 4; ++i)
        out.push_back(char(text.size() >> (8 * i)));
    out += text + bytes.substr(16 + header_length(bytes));
    std::ofstream(path, std::ios::binary | std::ios::trunc) << out;
}

} // namespace

TEST_CASE("recording: what is written is read back, field for field")
{
    TempFile f;
    write_three(f.path);
    const Recording r = read_recording(f.path);
    CHECK(r.header.link.source == LinkKind::gdb);
    REQUIRE(r.samples.size() == 3);
    CHECK(r.samples[2].pc == 0x08000104);
    CHECK(r.samples[2].time_ns == 2000u + (uint64_t(1) << 33));
    CHECK((r.samples[2].xpsr & 0x1FF) == 15);
    CHECK(r.samples[0].tagged);
    CHECK(r.samples[0].starts_burst);
    CHECK_FALSE(r.samples[1].starts_burst);
    REQUIRE(r.events.size() == 1);
    CHECK(r.summary.value().samples == 3);
    CHECK_FALSE(r.torn_tail);

    const auto samples = to_samples(r, std::nullopt);
    CHECK(samples.pcs == std::vector<uint32_t>{0x08000100, 0x08000102, 0x08000104});
    CHECK(samples.tags.size() == 3);
    CHECK(samples.bursts == std::vector<size_t>{0, 2});
    CHECK(to_samples(r, 2).bursts == std::vector<size_t>{0});
    CHECK(samples.tag_names.at(0x20000100) == "motor");
    REQUIRE(samples.sampler);
    CHECK(samples.sampler->samples == 3);
    CHECK(samples.sampler->samples_per_second == 6.0);
    CHECK(samples.sampler->halt_latency_us.value().p50 == 200.0);
    CHECK(to_samples(r, 2).pcs.size() == 2);
}

TEST_CASE("recording: the core of each sample, the cores the header names, and the halts that found a core asleep")
{
    TempFile f;
    {
        RunHeader header = header_of(LinkKind::gdb);
        header.link.cores = {{0, "core 0 (thread p01.01)", "p01.01", std::nullopt},
                             {1, "core 1 (thread p02.02)", "p02.02", std::nullopt}};
        RecordingWriter w(f.path, kept(header));
        int n = 0;
        for (uint32_t core : {0u, 1u, 0u, 1u}) {
            LiveSample s;
            s.pc = 0x10000100 + 0x100 * core;
            s.core = core;
            s.tagged = core == 0;
            s.found_asleep = core == 1 && n++ == 1;   // the second halt found core 1 asleep
            w.sample(s);
        }
    }
    const Recording r = read_recording(f.path);
    REQUIRE(r.samples.size() == 4);
    CHECK(r.samples[1].core == 1);
    CHECK(r.samples[1].tagged == false);
    CHECK(r.samples[2].core == 0);
    CHECK(r.samples[2].tagged);
    CHECK_FALSE(r.samples[1].found_asleep);
    CHECK(r.samples[3].found_asleep);
    CHECK(r.samples[3].core == 1);   // flag bit 2 beside the core's bits 8-15
    const auto samples = to_samples(r, std::nullopt);
    CHECK(samples.cores == std::vector<uint32_t>{0, 1, 0, 1});
    CHECK(samples.found_asleep == std::vector<size_t>{3});
    CHECK(samples.core_names.at(1) == "core 1 (thread p02.02)");

    // A recording of one core (and every recording made before cores were recorded: their
    // flags' bits 8-15 are 0) has no cores in its samples.
    TempFile g;
    write_three(g.path);
    CHECK(to_samples(read_recording(g.path), std::nullopt).cores.empty());
}

TEST_CASE("recording: each halt's spread of the cores' stops, from the samples that carry their bounds")
{
    TempFile f;
    // Three cores, three halts; the bounds (ns) by hand: the spread of a halt is its latest core's.
    const std::vector<std::vector<std::pair<uint64_t, uint64_t>>> halts = {
        {{100'000, 300'000}, {200'000, 500'000}},   // spread 200..500 us
        {{50'000, 90'000}, {10'000, 80'000}},       // spread 50..90 us
        {{1'000, 2'000}, {3'000, 4'000}},           // spread 3..4 us
    };
    {
        RunHeader header = header_of(LinkKind::openocd);
        header.link.core_stops = RunHeader::CoreStops{CoreSkew::measured, "back to back"};
        header.link.cores = {{0, "core 0 (a)", std::nullopt, "a"},
                             {1, "core 1 (b)", std::nullopt, "b"},
                             {2, "core 2 (c)", std::nullopt, "c"}};
        RecordingWriter w(f.path, kept(header));
        for (const auto& halt : halts)
            for (uint32_t core = 0; core < 3; ++core) {
                LiveSample s;
                s.pc = 0x10000100 + 0x100 * core;
                s.core = core;
                if (core > 0)
                    s.stop_after = mcuprof::core::StopBounds{halt[core - 1].first, halt[core - 1].second};
                w.sample(s);
            }
    }
    const Recording r = read_recording(f.path);
    REQUIRE(r.samples.size() == 9);
    CHECK_FALSE(r.samples[0].stop_after);
    REQUIRE(r.samples[4].stop_after);
    CHECK(r.samples[4].stop_after->at_least_ns == 50'000);
    CHECK(r.samples[4].stop_after->at_most_ns == 90'000);
    const auto samples = to_samples(r, std::nullopt);
    REQUIRE(samples.core_stops);
    CHECK_FALSE(samples.core_stops->simultaneous);
    CHECK(samples.core_stops->how == "back to back");
    CHECK(samples.core_stops->at_least_us == std::vector<double>{200, 50, 3});
    CHECK(samples.core_stops->at_most_us == std::vector<double>{500, 90, 4});

    // QEMU's gdbstub: no skew, no bounds in the samples.
    TempFile g;
    {
        RunHeader header = header_of(LinkKind::gdb);
        header.link.core_stops = RunHeader::CoreStops{CoreSkew::none, "all-stop"};
        RecordingWriter w(g.path, kept(header));
        for (uint32_t core : {0u, 1u}) {
            LiveSample s;
            s.core = core;
            w.sample(s);
        }
    }
    const auto none = to_samples(read_recording(g.path), std::nullopt);
    REQUIRE(none.core_stops);
    CHECK(none.core_stops->simultaneous);
    CHECK(none.core_stops->at_most_us.empty());
}

TEST_CASE("recording: a torn last record is dropped and said so; the rest is kept")
{
    TempFile f;
    write_three(f.path);
    // Cut into the summary record (the last): 3 bytes short.
    std::filesystem::resize_file(f.path, file_size(f.path) - 3);
    const Recording r = read_recording(f.path);
    CHECK(r.torn_tail);
    CHECK(r.samples.size() == 3);
    CHECK_FALSE(r.summary.has_value());
    CHECK(to_samples(r, std::nullopt).notes.front().find("cut short") != std::string::npos);
}

TEST_CASE("recording: damage inside the file is an error naming the offset")
{
    TempFile f;
    write_three(f.path);
    // The header is 16 bytes plus its JSON; the first record's payload starts 8 bytes later.
    const size_t header = 16 + header_length(file_bytes(f.path));
    {
        std::fstream io(f.path, std::ios::in | std::ios::out | std::ios::binary);
        io.seekp(std::streamoff(header + 8 + 9));   // a byte of the first sample's pc
        io.put('\x55');
    }
    const std::string where = "offset " + std::to_string(header);
    CHECK_THROWS_WITH_AS(read_recording(f.path), doctest::Contains(where.c_str()), Error);
}

TEST_CASE("recording: a newer format version is refused with the versions named")
{
    TempFile f;
    write_three(f.path);
    {
        std::fstream io(f.path, std::ios::in | std::ios::out | std::ios::binary);
        io.seekp(8);
        io.put('\x02');
    }
    CHECK_THROWS_WITH_AS(read_recording(f.path), doctest::Contains("version 2 is newer than this mcuprof reads (1)"),
                         Error);
}

TEST_CASE("recording: not a recording, and one without samples")
{
    TempFile f;
    { std::ofstream(f.path) << "prof raw n=1\n"; }
    CHECK_THROWS_WITH_AS(read_recording(f.path), doctest::Contains("not an mcuprof recording"), Error);
    { RecordingWriter w(f.path, kept(header_of(LinkKind::gdb))); }
    CHECK_THROWS_WITH_AS(to_samples(read_recording(f.path), std::nullopt), doctest::Contains("no samples"), Error);
}

TEST_CASE("recording: JSON parts of the wrong shape are left out with a note, never a crash")
{
    TempFile f;
    {
        RecordingWriter w(f.path, header_of(LinkKind::gdb));
        LiveSample s;
        s.pc = 0x08000100;
        w.sample(s);
        w.event({{"kind", 1}, {"message", {1, 2}}});
    }
    replace_header(f.path, R"({"source": 7, "tasks": {"nothex": "a", "0x20000100": 5}})");
    append_record(f.path, summary_type, R"({"samples_per_second": "fast"})");
    const auto samples = to_samples(read_recording(f.path), std::nullopt);
    CHECK(samples.origin.find("recording (live)") == 0);
    CHECK(samples.tag_names.empty());
    CHECK_FALSE(samples.sampler.has_value());
    CHECK(std::find(samples.notes.begin(), samples.notes.end(),
                    "the recording's summary is unreadable and was left out") != samples.notes.end());
}

TEST_CASE("recording: a DWT_PCSR summary has batch figures and no halt latency; the report says them")
{
    SamplerStats stats;
    stats.samples = 30;
    stats.wall_seconds = 1.0;
    stats.running_seconds = 1.0;
    stats.end_reason = "sample count reached";
    stats.pcsr = PcsrStats{16, 32, 2, {900, 1100}, std::nullopt};
    const nlohmann::json summary = mcuprof::core::to_json(stats.figures());
    CHECK_FALSE(summary.contains("halt_latency_us"));
    CHECK(summary["pcsr"]["batch"] == 16);
    CHECK(summary["pcsr"]["halted_share"] == 2.0 / 32.0);
    CHECK(summary["pcsr"]["batches"] == 2);
    // Two values: the rounded index of p50 is (2 - 1) * 0.5 + 0.5 -> 1, the larger.
    CHECK(summary["pcsr"]["round_trip_us"]["p50"] == 1100.0);
    CHECK(mcuprof::core::describe_sampler(stats.figures()) ==
          "target running 100.0 % of the time, DWT_PCSR read 16 times per round trip (p50 1100 us, p99 1100 us), "
          "2 of 32 reads 0xFFFFFFFF (core halted, dropped)");

    TempFile f;
    {
        RecordingWriter w(f.path, kept(header_of(LinkKind::openocd)));
        LiveSample s;
        s.pc = 0x08000100;
        w.sample(s);
        w.summary(stats.figures());
    }
    CHECK(to_samples(read_recording(f.path), std::nullopt).sampler.value().pcsr.value().reads == 32);
}

TEST_CASE("recording: a pcsr,halt recording that fell back to halts reads as halts, not as PCSR reads")
{
    for (const bool fell_back : {false, true}) {
        TempFile f;
        {
            RunHeader h = kept(header_of(LinkKind::openocd));
            h.method = SampleMethod::pcsr;
            RecordingWriter w(f.path, h);
            if (fell_back)
                w.notice("fallback", "DWT_PCSR reads 0 on target x: sampling in halt mode instead (--mode pcsr,halt)");
            LiveSample s;
            s.pc = 0x08000100;
            s.xpsr = 0x01000000;
            w.sample(s);
        }
        const auto samples = to_samples(read_recording(f.path), std::nullopt);
        CHECK(samples.reads_pcsr == !fell_back);   // else its binomial errors would be called lower bounds
    }
}

TEST_CASE("recording: every sampler figure is read back as written")
{
    mcuprof::core::SamplerFigures f;
    f.samples = 7;
    f.wall_seconds = 2.5;
    f.samples_per_second = 2.8;
    f.run_duty = 0.75;
    f.end = "sample count reached";
    f.link_lost = true;
    f.halt_latency_us = mcuprof::core::Percentiles{10, 20, 30, 40};
    f.pcsr = mcuprof::core::PcsrFigures{1024, 2049, 0, 2, {5, 6, 7, 8}, 1};
    const std::map<std::string, uint64_t> ends = {
        {std::string(mcuprof::core::describe(mcuprof::core::UnwindStop::root)), 6},
        {std::string(mcuprof::core::describe(mcuprof::core::UnwindStop::depth)), 1}};
    f.stacks = mcuprof::core::StackFigures{2.5, 0.5, ends};
    f.halt_budget = mcuprof::core::HaltBudgetFigures{0.25, 0.2, 0.6};
    TempFile file;
    {
        RunHeader header = header_of(LinkKind::gdb);
        header.method = SampleMethod::halt;
        header.pacing = RunHeader::Pacing{};
        header.pacing->mean_seconds = 0.001;
        header.pacing->between = PacedBetween::samples;
        RecordingWriter w(file.path, kept(header));
        LiveSample s;
        s.pc = 0x08000100;
        w.sample(s);
        w.summary(f);
    }
    const auto samples = to_samples(read_recording(file.path), std::nullopt);
    REQUIRE(samples.sampler);
    const mcuprof::core::SamplerFigures& r = *samples.sampler;
    CHECK(r.samples == 7);
    CHECK(r.wall_seconds == 2.5);
    CHECK(r.samples_per_second == 2.8);
    CHECK(r.run_duty == 0.75);
    CHECK(r.end == "sample count reached");
    CHECK(r.link_lost);
    CHECK_FALSE(r.target_exited);
    CHECK(r.halt_latency_us.value().p90 == 20);
    CHECK(r.halt_latency_us.value().max == 40);
    CHECK(r.pcsr.value().batch == 1024);
    CHECK(r.pcsr.value().reads == 2049);
    CHECK(r.pcsr.value().batches == 2);
    CHECK(r.pcsr.value().round_trip_us.p99 == 7);
    CHECK(r.pcsr.value().unused_reads == 1u);
    CHECK(r.stacks.value().ends == ends);
    CHECK(r.stacks.value().extra_round_trips_per_sample == 0.5);
    CHECK(r.halt_budget.value().max_halted == 0.25);
    CHECK(r.halt_budget.value().longest_halt_seconds == 0.2);
    CHECK(r.halt_budget.value().longest_mean_wait_seconds == 0.6);
    // How the samples were taken comes from the header.
    CHECK(r.method == "halt");
    CHECK(nlohmann::json::parse(r.pacing) == nlohmann::json{{"clock", "wall"},
                                                            {"shape", "exponential"},
                                                            {"mean_seconds", 0.001},
                                                            {"between", "samples"}});
    CHECK(mcuprof::core::describe_sampler(r) ==
          "target running 75.0 % of the time (halted 25.0 %, budget 25.0 %), halt latency p50 10 us p99 30 us, "
          "DWT_PCSR read 1024 times per round trip (p50 5 us, p99 7 us), 1 of 2049 reads unused (outside the profile "
          "window or halted, placing it, past the count); stacks: 1 of 7 chains truncated (14.29 % of the samples): "
          "depth limit: 1; inclusive shares are lower bounds");
}

TEST_CASE("recording: a halting summary still describes its halt latency")
{
    SamplerStats stats;
    stats.wall_seconds = 2.0;
    stats.running_seconds = 1.0;
    stats.halt_latency_us = {100, 300};
    CHECK(mcuprof::core::describe_sampler(stats.figures()) ==
          "target running 50.0 % of the time, halt latency p50 300 us p99 300 us");
}

TEST_CASE("recording: stacks keep why their chain ended; a truncated stack of an older version reads as not recorded")
{
    TempFile f;
    {
        RecordingWriter w(f.path, kept(header_of(LinkKind::gdb)));
        const std::vector<mcuprof::core::CallStack> stacks = {
            {{0x08000104, 0x08000200}, false, mcuprof::core::UnwindStop::root},
            {{0x08000104}, true, mcuprof::core::UnwindStop::handler_only},
            {{}, true, mcuprof::core::UnwindStop::root},   // flags 1 alone: what versions before the reasons wrote
        };
        for (const auto& stack : stacks) {
            LiveSample s;
            s.pc = 0x08000100;
            s.stack = stack;
            w.sample(s);
        }
    }
    const Recording r = read_recording(f.path);
    REQUIRE(r.samples.size() == 3);
    REQUIRE(r.samples[0].stack);
    CHECK(r.samples[0].stack->callers == std::vector<uint32_t>{0x08000104, 0x08000200});
    CHECK_FALSE(r.samples[0].stack->truncated);
    CHECK(r.samples[0].stack->stop == mcuprof::core::UnwindStop::root);
    CHECK(r.samples[1].stack->truncated);
    CHECK(r.samples[1].stack->stop == mcuprof::core::UnwindStop::handler_only);
    CHECK(r.samples[2].stack->truncated);
    CHECK(r.samples[2].stack->stop == mcuprof::core::UnwindStop::not_recorded);
}

TEST_CASE("recording: a bias in the header is a warning of its kind with every reading")
{
    TempFile f;
    {
        RunHeader header = header_of(LinkKind::gdb);
        header.link.server_is_qemu = true;
        header.bias = "halted by wall clock";
        RecordingWriter w(f.path, kept(header));
        LiveSample s;
        s.pc = 0x08000100;
        w.sample(s);
    }
    const auto samples = to_samples(read_recording(f.path), std::nullopt);
    REQUIRE(samples.warnings.size() == 1);
    CHECK(samples.warnings[0].kind == "emulator-bias");
    CHECK(samples.warnings[0].message == "halted by wall clock");

    write_three(f.path);   // no bias in its header
    CHECK(to_samples(read_recording(f.path), std::nullopt).warnings.empty());
}

TEST_CASE("recording: a --qemu run to the firmware's exit knows its instructions; one cut by the budget does not")
{
    TempFile f;
    auto write = [&](uint64_t instructions, bool exited) {
        RunHeader header = header_of(LinkKind::qemu);
        header.qemu = RunHeader::QemuRun{"netduinoplus2", "qemu-system-arm -icount shift=0,rr=record",
                                         "qemu-system-arm -icount shift=0,rr=replay", instructions, exited,
                                         exited ? "the firmware exited" : "the instruction budget"};
        RecordingWriter w(f.path, kept(header));
        LiveSample s;
        s.pc = 0x08000100;
        w.sample(s);
    };
    write(1066725, true);
    CHECK(to_samples(read_recording(f.path), std::nullopt).run_instructions == 1066725u);
    CHECK(to_samples(read_recording(f.path), std::nullopt).origin.find("recording (qemu)") == 0);
    write(200000000, false);
    CHECK_FALSE(to_samples(read_recording(f.path), std::nullopt).run_instructions);
    replace_header(f.path, R"({"source": "qemu", "qemu": {"instructions": "many", "exited": true}})");
    CHECK_FALSE(to_samples(read_recording(f.path), std::nullopt).run_instructions);   // not a count: no total, no error
    write_three(f.path);   // a live recording: no qemu object
    CHECK_FALSE(to_samples(read_recording(f.path), std::nullopt).run_instructions);
}

TEST_CASE("recording sink: samples, notices and tasks reach the file, and the reader names the tasks")
{
    TempFile f;
    {
        RecordingWriter w(f.path, kept(header_of(LinkKind::gdb)));
        RecordingSink sink(w);
        LiveSample s;
        s.pc = 0x08000100;
        s.tag = 0x20000100;
        s.tagged = true;
        sink.task(0x20000100, "motor");
        sink.sample(s);
        sink.event("resume", "the target was resumed");
        // No summary yet, and the writer still open: the notice was flushed as it came.
        const Recording mid = read_recording(f.path);
        REQUIRE(mid.events.size() == 2);
        CHECK(mid.events[0] == nlohmann::json{{"kind", "task"}, {"address", "0x20000100"}, {"name", "motor"}});
        CHECK(mid.events[1] == nlohmann::json{{"kind", "resume"}, {"message", "the target was resumed"}});
        REQUIRE(mid.samples.size() == 1);
        const mcuprof::core::SampleSet samples = to_samples(mid, std::nullopt);
        CHECK(samples.tag_names.at(0x20000100) == "motor");
        REQUIRE(samples.notes.size() == 1);
        CHECK(samples.notes[0] == "the target was resumed");
    }
}

TEST_CASE("watched variable: values read at halts, written and read back, named by enumerator or number")
{
    WatchedVariable state;
    state.name = "app_state";
    state.address = 0x20000010;
    state.size = 1;
    state.is_signed = true;
    state.names = {{0, "IDLE"}, {1, "RUN"}, {0xFF, "FAULT"}};   // FAULT is -1 in one byte
    CHECK(state.name_of(1) == "RUN");
    CHECK(state.name_of(0xFFFFFFFF) == "FAULT");   // the bits beyond the size do not count
    CHECK(state.name_of(0xFE) == "-2");            // signed, one byte
    WatchedVariable level = state;
    level.names.clear();
    level.size = 4;
    CHECK(level.name_of(0xFFFFFFFD) == "-3");
    level.is_signed = false;
    CHECK(level.name_of(0xFFFFFFFD) == "4294967293");

    // The halt's request: the variable's range after what is there, its bytes little-endian.
    HaltRequest request;
    request.memory.emplace_back(0x20000000, 4);
    state.add_to(request);
    REQUIRE(request.memory.size() == 2);
    CHECK(request.memory[1] == MemoryRange{0x20000010, 1});
    HaltState halt;
    halt.memory = {std::string(4, '\0'), std::string(1, '\x01')};
    CHECK(state.value_at(halt) == 1u);
    halt.memory[1].clear();   // the target refused the read
    CHECK_FALSE(state.value_at(halt).has_value());

    TempFile f;
    {
        RunHeader header = header_of(LinkKind::gdb);
        header.variable = state;
        RecordingWriter w(f.path, kept(header));
        for (uint32_t v : {0u, 1u, 1u, 0xFFu, 7u}) {
            LiveSample s;
            s.pc = 0x08000100;
            s.value = v;
            w.sample(s);
        }
    }
    const mcuprof::core::SampleSet samples = to_samples(read_recording(f.path), std::nullopt);
    CHECK(samples.variable == "app_state");
    CHECK(samples.values == std::vector<uint32_t>{0, 1, 1, 0xFF, 7});
    CHECK(samples.value_names == std::map<uint32_t, std::string>{{0, "IDLE"}, {1, "RUN"}, {0xFF, "FAULT"}, {7, "7"}});
    RunHeader header;
    header.variable = state;
    const std::optional<RecordedVariable> back = run_header_from_json(to_json(header)).variable;
    REQUIRE(back.has_value());
    CHECK(back->names == state.names);
    CHECK(back->is_signed);
    CHECK(back->address == 0x20000010);
    CHECK_FALSE(run_header_from_json({{"variable", {{"name", "x"}, {"size", 3}}}}).variable.has_value());
}
