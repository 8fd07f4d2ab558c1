#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include <unistd.h>

#include <boost/program_options.hpp>

#include "mcuprof/core/error.h"
#include "mcuprof/core/report.h"
#include "mcuprof/core/symbols.h"
#include "mcuprof/error.h"
#include "mcuprof/sources/error.h"
#include "mcuprof/sources/onchip_reader.h"
#include "mcuprof/sources/recording.h"
#include "mcuprof/transport/tcp_connection.h"
#include "options.h"
#include "profile_output.h"
#include "progress.h"
#include "sampling.h"

namespace po = boost::program_options;

namespace mcuprof::cli {
namespace {

// Writes each sample to the recording as it comes, hands it to the kernel at least every
// 100 ms, and shows progress on a terminal.
class RecordingSink : public sources::SampleSink {
public:
    explicit RecordingSink(sources::RecordingWriter& writer) : writer_(writer) {}

    void sample(const sources::LiveSample& s) override
    {
        writer_.sample(s);
        ++samples_;
        const auto now = std::chrono::steady_clock::now();
        if (now - flushed_ >= std::chrono::milliseconds(100)) {
            writer_.flush();
            flushed_ = now;
            const double elapsed = std::chrono::duration<double>(now - start_).count();
            char text[128];
            std::snprintf(text, sizeof text, "mcuprof record: %llu samples, %.0f samples/s, %.1f s",
                          static_cast<unsigned long long>(samples_), samples_ / std::max(elapsed, 1e-9), elapsed);
            progress_.show(text);
        }
    }
    void event(const std::string& kind, const std::string& message) override
    {
        writer_.event({{"kind", kind}, {"message", message}});
        writer_.flush();
        // Notices (a fallback, a resume, a pacing problem) are shown as they happen; the
        // events that end the recording are its end reason, shown in the summary line.
        if (kind != "link-lost" && kind != "error" && kind != "target-exit" && kind != "target-stop") {
            progress_.end();   // the notice on a line of its own
            std::fprintf(stderr, "mcuprof record: %s\n", message.c_str());
        }
    }
    void task(uint32_t control_block, const std::string& name) override
    {
        writer_.event(task_event(control_block, name));
    }
    void end_progress()
    {
        progress_.end();
    }

private:
    sources::RecordingWriter& writer_;
    Progress progress_;   // on a terminal only
    uint64_t samples_ = 0;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point flushed_ = start_;
};

// --read-onchip: the on-chip sampler's memory, read over GDB, reported like its UART dump.
int read_onchip_command(const transport::Endpoint& gdb, const std::string& stop_at, const std::string& dump_file,
                        ReportOptions& report)
{
    if (report.elf.empty())
        throw UsageError("--elf FILE is required: the ELF of the firmware that runs");
    const core::SymbolTable symbols = core::SymbolTable::load(report.elf);
    std::optional<uint32_t> address;
    if (!stop_at.empty()) {
        for (const core::Function& f : symbols.functions())
            if (f.name == stop_at)
                address = f.start;
        if (!address)
            throw mcuprof::Error(report.elf, "symbols", "no function '" + stop_at + "' for --at");
    }
    sources::Dump dump = sources::read_onchip_over_gdb(gdb, symbols, report.elf, address, std::chrono::seconds(120));
    if (!dump_file.empty()) {
        std::ofstream out(dump_file);
        sources::write_dump(dump, out);
        if (!out)
            throw mcuprof::Error(dump_file, "", "cannot write the dump");
    }
    report.input = dump.path;
    write_profile(sources::to_samples(std::move(dump), {}), report);
    return 0;
}

} // namespace

int record_command(const Arguments& args)
{
    ReportOptions report;
    SamplingOptions sampling;
    std::string samples_file;
    bool read_onchip = false;
    std::string stop_at;
    po::options_description description("Options");
    add_sampling_options(description, sampling);
    description.add_options()
        ("record", po::value(&samples_file)->value_name("FILE"), "the samples file (also -o)")
        ("read-onchip", po::bool_switch(&read_onchip), "instead of sampling, read the reference on-chip sampler's "
                                                      "ring, histogram or top-N table from target memory; -o writes "
                                                      "it as a dump")
        ("at", po::value(&stop_at)->value_name("FUNCTION"), "--read-onchip: first let the target run until it "
                                                            "reaches FUNCTION (a breakpoint), e.g. prof_dump");
    add_report_options(description, report);
    const std::string usage =
        "usage: mcuprof record --gdb HOST:PORT --elf ELF -o FILE [options]\n"
        "       mcuprof record --openocd HOST:PORT --mode halt|pcsr --elf ELF -o FILE [options]\n"
        "       mcuprof record --qemu MACHINE --elf ELF -o FILE [--samples N] [--qemu-arg ARG ...]\n\n"
        "Samples the program counter of running firmware by halting it at random intervals, writes\n"
        "every sample to FILE as it comes (mcuprof report reads it), and prints the profile.\n"
        "Ctrl-C stops the recording; the target is always left running.";
    std::string unused;
    if (!parse_command(args, usage, description, unused))
        return 0;
    if (!unused.empty())
        throw UsageError("record takes no positional argument ('" + unused + "')");
    // -o names the samples file (or, with --read-onchip, the dump) here; the report goes to
    // standard output.
    if (samples_file.empty())
        samples_file = report.output;
    report.output.clear();
    if (sampling.qemu.machine.empty() && sampling.gdb.empty() == sampling.openocd.empty())
        throw UsageError("exactly one of --gdb HOST:PORT, --openocd HOST:PORT and --qemu MACHINE is required");
    if (sampling.gdb.empty() && read_onchip)
        throw UsageError("--read-onchip goes with --gdb");
    if (read_onchip)
        return read_onchip_command(transport::Endpoint::parse(sampling.gdb, "--gdb"), stop_at, samples_file, report);
    if (!stop_at.empty())
        throw UsageError("--at goes with --read-onchip");
    if (samples_file.empty())
        throw UsageError("-o FILE is required: the samples file");
    if (report.elf.empty())
        throw UsageError("--elf FILE is required: the ELF of the firmware that runs");

    const std::unique_ptr<sources::SampleSource> source = make_sample_source(sampling, report.elf);
    const sources::SamplingPlan plan = sampling_plan(sampling, 10000);
    sources::SampleSource& sampler = *source;
    sources::RecordingWriter writer(samples_file, recording_header(sampler, report.elf));
    RecordingSink sink(writer);

    sources::SamplerStats stats;
    {
        const StopOnSignal stop;
        stats = sampler.run(sink, plan, StopOnSignal::requested);
    }
    sink.end_progress();
    writer.summary(stats.to_json());
    writer.flush();

    std::fprintf(stderr, "mcuprof record: %llu samples in %.2f s (%.0f samples/s), %s; %s; samples in %s\n",
                 static_cast<unsigned long long>(stats.samples), stats.wall_seconds, stats.rate(),
                 core::describe_sampler(stats.to_json()).c_str(), stats.end_reason.c_str(), samples_file.c_str());
    if (const std::string bias = sampler.describe().value("bias", ""); !bias.empty())
        std::fprintf(stderr, "mcuprof record: warning: %s\n", bias.c_str());
    if (stats.samples == 0)
        throw sources::Error(samples_file, "", "no samples were recorded: " + stats.end_reason);

    report.input = samples_file;
    write_profile(sources::to_samples(sources::read_recording(samples_file), std::nullopt), report);
    if (stats.link_lost) {
        // The profile above is of a run cut short: say so last, and in the exit code, so a
        // script can tell it from a complete recording.
        std::fprintf(stderr, "mcuprof record: stopped early, %s; the %llu samples recorded are in %s\n",
                     stats.end_reason.c_str(), static_cast<unsigned long long>(stats.samples), samples_file.c_str());
        return exit_link_lost;
    }
    return 0;
}

} // namespace mcuprof::cli
