#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "mcuprof/core/report.h"
#include "mcuprof/sources/error.h"
#include "mcuprof/sources/live.h"
#include "mcuprof/sources/recording.h"

using namespace mcuprof::sources;

namespace {

struct TempFile {
    std::string path = std::filesystem::temp_directory_path() / ("mcuprof-rec-" + std::to_string(::getpid()) + ".bin");
    ~TempFile() { std::remove(path.c_str()); }
};

void write_three(const std::string& path)
{
    RecordingWriter w(path, {{"source", "test"}, {"tasks", {{"0x20000100", "motor"}}}});
    for (uint32_t i = 0; i < 3; ++i) {
        LiveSample s;
        s.time_ns = 1000u * i + (uint64_t(1) << 33);   // a time past 32 bits
        s.pc = 0x08000100 + 2 * i;
        s.lr = 0x08000201;
        s.sp = 0x20001000;
        s.xpsr = 0x01000000 | (i == 2 ? 15u : 0u);      // the last in SysTick (exception 15)
        s.tag = 0x20000100;
        s.tagged = true;
        w.sample(s);
    }
    w.event({{"kind", "target-exit"}, {"message", "the target exited with code 0"}});
    SamplerStats stats;
    stats.samples = 3;
    stats.wall_seconds = 0.5;
    stats.halt_latency_us = {100, 200, 300};
    stats.end_reason = "sample count reached";
    w.summary(stats.to_json());
}

size_t file_size(const std::string& path)
{
    return std::filesystem::file_size(path);
}

} // namespace

TEST_CASE("recording: what is written is read back, field for field")
{
    TempFile f;
    write_three(f.path);
    const Recording r = read_recording(f.path);
    CHECK(r.header["source"] == "test");
    REQUIRE(r.samples.size() == 3);
    CHECK(r.samples[2].pc == 0x08000104);
    CHECK(r.samples[2].time_ns == 2000u + (uint64_t(1) << 33));
    CHECK((r.samples[2].xpsr & 0x1FF) == 15);
    CHECK(r.samples[0].tagged);
    REQUIRE(r.events.size() == 1);
    CHECK(r.summary.value()["samples"] == 3);
    CHECK_FALSE(r.torn_tail);

    const auto samples = to_samples(r, std::nullopt);
    CHECK(samples.pcs == std::vector<uint32_t>{0x08000100, 0x08000102, 0x08000104});
    CHECK(samples.tags.size() == 3);
    CHECK(samples.tag_names.at(0x20000100) == "motor");
    CHECK(samples.sampler["samples"] == 3);
    CHECK(samples.sampler["samples_per_second"] == 6.0);
    CHECK(samples.sampler["halt_latency_us"]["p50"] == 200.0);
    CHECK(to_samples(r, 2).pcs.size() == 2);
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
    const Recording whole = read_recording(f.path);
    // The header is 16 bytes plus its JSON; the first record's payload starts 8 bytes later.
    const size_t header = 16 + whole.header.dump().size();
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
    { RecordingWriter w(f.path, {{"source", "test"}}); }
    CHECK_THROWS_WITH_AS(to_samples(read_recording(f.path), std::nullopt), doctest::Contains("no samples"), Error);
}

TEST_CASE("recording: JSON parts of the wrong shape are left out with a note, never a crash")
{
    TempFile f;
    {
        RecordingWriter w(f.path, {{"source", 7}, {"tasks", {{"nothex", "a"}, {"0x20000100", 5}}}});
        LiveSample s;
        s.pc = 0x08000100;
        w.sample(s);
        w.event({{"kind", 1}, {"message", {1, 2}}});
        w.summary({{"samples_per_second", "fast"}});
    }
    const auto samples = to_samples(read_recording(f.path), std::nullopt);
    CHECK(samples.origin.find("recording (live)") == 0);
    CHECK(samples.tag_names.empty());
    CHECK(samples.sampler.is_null());
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
    stats.pcsr = PcsrStats{16, 32, 2, {900, 1100}};
    const nlohmann::json summary = stats.to_json();
    CHECK_FALSE(summary.contains("halt_latency_us"));
    CHECK(summary["pcsr"]["batch"] == 16);
    CHECK(summary["pcsr"]["halted_share"] == 2.0 / 32.0);
    CHECK(summary["pcsr"]["batches"] == 2);
    // Two values: the rounded index of p50 is (2 - 1) * 0.5 + 0.5 -> 1, the larger.
    CHECK(summary["pcsr"]["round_trip_us"]["p50"] == 1100.0);
    CHECK(mcuprof::core::describe_sampler(summary) ==
          "target running 100.0 % of the time, DWT_PCSR read 16 times per round trip (p50 1100 us, p99 1100 us), "
          "2 of 32 reads 0xFFFFFFFF (core halted, dropped)");

    TempFile f;
    {
        RecordingWriter w(f.path, {{"source", "openocd"}});
        LiveSample s;
        s.pc = 0x08000100;
        w.sample(s);
        w.summary(summary);
    }
    CHECK(to_samples(read_recording(f.path), std::nullopt).sampler["pcsr"]["reads"] == 32);
}

TEST_CASE("recording: a halting summary still describes its halt latency")
{
    SamplerStats stats;
    stats.wall_seconds = 2.0;
    stats.running_seconds = 1.0;
    stats.halt_latency_us = {100, 300};
    CHECK(mcuprof::core::describe_sampler(stats.to_json()) ==
          "target running 50.0 % of the time, halt latency p50 300 us p99 300 us");
}

TEST_CASE("recording: stacks keep why their chain ended; a truncated stack of an older version reads as not recorded")
{
    TempFile f;
    {
        RecordingWriter w(f.path, {{"source", "test"}});
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
        RecordingWriter w(f.path, {{"source", "gdb"}, {"server", "qemu"}, {"bias", "halted by wall clock"}});
        LiveSample s;
        s.pc = 0x08000100;
        w.sample(s);
    }
    const auto samples = to_samples(read_recording(f.path), std::nullopt);
    REQUIRE(samples.warnings.size() == 1);
    CHECK(samples.warnings[0].first == "emulator-bias");
    CHECK(samples.warnings[0].second == "halted by wall clock");

    write_three(f.path);   // no bias in its header
    CHECK(to_samples(read_recording(f.path), std::nullopt).warnings.empty());
}
