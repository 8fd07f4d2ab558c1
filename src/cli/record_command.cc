#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include <unistd.h>

#include <boost/program_options.hpp>

#include "mcuprof/image/error.h"
#include "mcuprof/profile/profile.h"
#include "mcuprof/report/report.h"
#include "mcuprof/image/firmware.h"
#include "mcuprof/image/symbols.h"
#include "mcuprof/error.h"
#include "mcuprof/inputs/error.h"
#include "mcuprof/sampler/onchip_reader.h"
#include "mcuprof/inputs/recording.h"
#include "mcuprof/sampler/recording_sink.h"
#include "mcuprof/link/link.h"
#include "options.h"
#include "profile_output.h"
#include "progress.h"
#include "sampling.h"

namespace po = boost::program_options;

namespace mcuprof::cli {
namespace {

// The recording's sink, and on a terminal a progress line at each of its flushes; notices
// are shown as they happen.
class RecordSink : public sources::RecordingSink {
public:
    explicit RecordSink(sources::RecordingWriter& writer)
        : sources::RecordingSink(writer, [this](uint64_t samples) { show_progress(samples); })
    {
    }

    void event(const std::string& kind, const std::string& message) override
    {
        sources::RecordingSink::event(kind, message);
        // Notices (a fallback, a resume, a pacing problem, a target that does not match the
        // ELF) are shown as they happen; the events that end the recording are its end reason,
        // shown in the summary line; a target that matches is only kept in the file.
        if (kind != "link-lost" && kind != "error" && kind != "target-exit" && kind != "target-stop" &&
            kind != "firmware-verified") {
            progress_.end();   // the notice on a line of its own
            std::fprintf(stderr, "mcuprof record: %s\n", message.c_str());
        }
    }
    void end_progress()
    {
        progress_.end();
    }

private:
    void show_progress(uint64_t samples)
    {
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
        char text[128];
        std::snprintf(text, sizeof text, "mcuprof record: %llu samples, %.0f samples/s, %.1f s",
                      static_cast<unsigned long long>(samples), samples / std::max(elapsed, 1e-9), elapsed);
        progress_.show(text);
    }

    Progress progress_;   // on a terminal only
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

struct RecordOptions {
    ReportOptions report;       // the profile printed at the end (to standard output)
    SamplingOptions sampling;   // as given
    LiveSampling live;          // typed and checked, before the ELF is opened
    std::string samples_file;   // -o
    bool read_onchip = false;
    std::string stop_at;
};

const char* const record_usage =
    "usage: mcuprof record --gdb HOST:PORT|DEVICE --elf ELF -o FILE [options]\n"
    "       mcuprof record --openocd HOST[:PORT] --mode halt|pcsr|pcsr,halt\n"
    "                      --elf ELF -o FILE\n"
    "       mcuprof record --qemu MACHINE --elf ELF -o FILE [--samples N]\n"
    "       mcuprof record --gdb HOST:PORT|DEVICE --read-onchip --elf ELF [-o DUMP]\n\n"
    "Samples the program counter of running firmware by halting it at random\n"
    "intervals, writes every sample to FILE (-o) as it comes (mcuprof report reads\n"
    "it), and prints the profile on standard output. Every option is checked before\n"
    "the target is contacted. Ctrl-C stops the recording; the target is always left\n"
    "running.";

// Parses and checks every option, the ELF and the samples file's directory, before the
// link is touched. Returns false when --help was shown.
bool parse_record_options(const Arguments& args, RecordOptions& o)
{
    CommandLine line("record", record_usage);
    add_sampling_options(line.description(), o.sampling);
    line.options()
        ("output,o", po::value(&o.samples_file)->value_name("FILE"),
         "the samples file, written as the samples come (required); with --read-onchip, where the dump goes")
        ("read-onchip", po::bool_switch(&o.read_onchip), "instead of sampling, read the reference on-chip "
                                                         "sampler's ring, histogram or top-N table from target "
                                                         "memory")
        ("at", po::value(&o.stop_at)->value_name("FUNCTION"), "--read-onchip: first let the target run until it "
                                                              "reaches FUNCTION (a breakpoint), e.g. prof_dump");
    ReportChoices choices;
    choices.output = false;
    choices.formats = standard_output_format_help();
    add_report_options(line, o.report, choices);
    if (!line.parse(args))
        return false;
    line.require("elf", "the ELF of the firmware that runs");
    line.only_with({"at"}, o.read_onchip, "--read-onchip");
    if (o.read_onchip) {
        line.not_with(sampling_option_names(), true, "--read-onchip (no sampling is done)");
        line.require("gdb", "the GDB server --read-onchip reads the target's memory through");
    } else {
        line.require("output", "the samples file");
        o.live = check_sampling_options(line, o.sampling, o.report.by);
    }
    const core::ReportFormat* format = core::find_format(core::profile_formats(), o.report.format);
    if (format == nullptr || format->binary)   // the report goes to standard output
        throw UsageError("--format takes " + standard_output_format_names() + ", not '" + o.report.format +
                         "' (binary formats: mcuprof report FILE -o OUT)");
    check_report_options(line, o.report, choices);
    if (!o.samples_file.empty())
        check_writable(o.samples_file);
    return true;
}

// --read-onchip: the on-chip sampler's memory, read over GDB, reported like its UART dump.
int read_onchip_command(const RecordOptions& o, const core::ImageSet& images)
{
    const core::SymbolTable& symbols = images.symbols();
    std::optional<uint32_t> address;
    if (!o.stop_at.empty()) {
        for (const core::Function& f : symbols.functions())
            if (f.name == o.stop_at)
                address = f.start;
        if (!address)
            throw mcuprof::Error(images.main().path(), "symbols", "no function '" + o.stop_at + "' for --at");
    }
    const transport::LinkAddress gdb = transport::LinkAddress::parse(o.sampling.gdb, "--gdb", o.sampling.baud);
    sources::Dump dump = sources::read_onchip_over_gdb(gdb, images, address, std::chrono::seconds(120));
    if (!o.samples_file.empty()) {
        std::ofstream out(o.samples_file);
        sources::write_dump(dump, out);
        if (!out)
            throw mcuprof::Error(o.samples_file, "", "cannot write the dump");
    }
    ReportOptions report = o.report;
    report.input = dump.path;
    write_profile(sources::to_samples(std::move(dump), {}), report, images);
    return 0;
}

// Samples into the samples file, then prints the profile of what it holds.
int record_samples(RecordOptions& o, const core::ImageSet& images)
{
    const std::optional<sources::WatchedVariable> variable = check_live_grouping(images.main(), o.report.by);
    const std::unique_ptr<sources::SampleSource> source = make_sample_source(o.live, variable, images);
    const sources::SamplingPlan plan = o.live.plan(10000);
    sources::SampleSource& sampler = *source;
    const sources::RunHeader header = sources::recording_header(sampler, images);
    sources::RecordingWriter writer(o.samples_file, header);
    RecordSink sink(writer);

    sources::SamplerStats stats;
    {
        const StopOnSignal stop;
        stats = sampler.run(sink, plan, StopOnSignal::requested);
    }
    sink.end_progress();
    writer.summary(stats.figures());
    writer.flush();

    // The bias is a warning of the profile below: said here (before the summary, which stays the
    // last line) only when that profile is not a text on the terminal, which shows it itself.
    const bool profile_on_terminal = o.report.format == "text" && o.report.output.empty();
    if (header.bias && !header.bias->empty() && !profile_on_terminal)
        std::fprintf(stderr, "mcuprof record: warning: %s\n", header.bias->c_str());
    const std::string& file = o.samples_file;
    std::fprintf(stderr, "mcuprof record: %llu samples in %.2f s (%.0f samples/s), %s; %s; samples in %s\n",
                 static_cast<unsigned long long>(stats.samples), stats.wall_seconds, stats.rate(),
                 core::describe_sampler(stats.figures()).c_str(), stats.end_reason.c_str(), file.c_str());
    if (stats.samples == 0)
        throw sources::Error(file, "", "no samples were recorded: " + stats.end_reason);

    o.report.input = file;
    write_profile(sources::to_samples(sources::read_recording(file), std::nullopt), o.report, images);
    if (stats.link_lost || stats.failed) {
        // The profile above is of a run cut short: say so last, and in the exit code, so a
        // script can tell it from a complete recording (3: the link lost; 2: an error the
        // server reported, the link up).
        std::fprintf(stderr, "mcuprof record: stopped early, %s; the %llu samples recorded are in %s\n",
                     stats.end_reason.c_str(), static_cast<unsigned long long>(stats.samples), file.c_str());
        return stats.link_lost ? exit_link_lost : exit_runtime_error;
    }
    return 0;
}

} // namespace

int record_command(const Arguments& args)
{
    RecordOptions options;
    if (!parse_record_options(args, options))
        return 0;
    // The images of the command; a wrong ELF is an error now, not after the sampling.
    const core::ImageSet images = open_images(options.report);
    images.symbols();
    if (options.read_onchip)
        return read_onchip_command(options, images);
    return record_samples(options, images);
}

} // namespace mcuprof::cli
