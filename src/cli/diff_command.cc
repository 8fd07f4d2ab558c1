#include <cmath>
#include <iostream>
#include <optional>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "inputs.h"
#include "mcuprof/profile/cores.h"
#include "mcuprof/profile/diff.h"
#include "mcuprof/image/symbols.h"
#include "mcuprof/error.h"
#include "options.h"
#include "profile_output.h"

namespace po = boost::program_options;

namespace mcuprof::cli {

namespace {

const char* const diff_usage =
    "usage: mcuprof diff A B [--elf ELF ...] [--elf-b ELF ...] [options]\n\n"
    "Two profiles side by side (any inputs mcuprof report reads: recordings, on-chip\n"
    "dumps, truth counts, SWO captures), each row's difference with its z-score; rows\n"
    "beyond the threshold are marked, with hints for the classic traps of comparing\n"
    "samplers (interrupts disabled, lockstep, a handler the on-chip sampler cannot\n"
    "see). Two exact censuses (truth counts) differ by no chance: every row that\n"
    "moved is marked. When both sides know their run's instructions (a census, a\n"
    "--qemu recording of a run to the firmware's exit), the totals and their ratio\n"
    "are shown. Exit status: 0, or 4 when --fail-above PP finds a function that grew\n"
    "or --fail-total-above PERCENT finds the run grew (docs/ci.md).\n"
    "A recording names the ELFs it was recorded from: without --elf (or --elf-b for\n"
    "B) those are used; every other input needs them.";

struct DiffOptions {
    ReportOptions report;
    std::vector<std::string> inputs;
    std::vector<std::string> elves_b;   // --elf-b: B's images, when not A's
    double threshold = 3.0;
    std::optional<double> fail_above;
    std::optional<double> fail_total_above;
    std::optional<uint32_t> core;   // compare this core of a multi-core chip only
};

// Parses and checks every option before an input is read. False when --help was shown.
bool parse_diff_options(const Arguments& args, DiffOptions& o)
{
    CommandLine line("diff", diff_usage);
    line.positionals(o.inputs, 2, 2, "two inputs, A and B");
    ReportChoices choices;
    choices.formats = core::format_help(core::diff_formats());
    choices.top_formats = {"text", "markdown"};
    add_report_options(line, o.report, choices);
    line.options()
        ("elf-b", po::value(&o.elves_b)->value_name("FILE")->composing(),
         "the ELF of B when it differs from A's (--elf); again for each other image B's target runs")
        ("core", po::value<uint32_t>()->value_name("N")->notifier([&](uint32_t n) { o.core = n; }),
         "compare core N of a multi-core chip (0 first), each side's shares of that core's own samples")
        ("threshold", po::value(&o.threshold)->value_name("Z")->default_value(3.0),
         "flag rows whose difference exceeds Z standard errors")
        ("fail-above", po::value<double>()->value_name("PP")->notifier([&](double pp) { o.fail_above = pp; }),
         "CI gate: exit with status 4 when a function's share grew from A to B by more than PP percentage "
         "points and by more than the threshold (Z; with two exact censuses, any growth is beyond it); else 0")
        ("fail-total-above",
         po::value<double>()->value_name("PERCENT")->notifier([&](double percent) { o.fail_total_above = percent; }),
         "CI gate on totals: exit with status 4 when B's run executed more than PERCENT % more instructions than "
         "A's (both must know their run's instructions: censuses, or --qemu recordings of runs to the exit)")
        ("strict", po::bool_switch(&o.report.strict),
         "a samples file recorded from another ELF than its --elf is an error (exit 2), not a warning");
    if (!line.parse(args))
        return false;
    // A recording names its images; any other input needs them given.
    const std::string elf_needed = "the ELF of the firmware that was sampled (of A, and of B without --elf-b)";
    if (!line.given("elf") && !names_its_elves(o.inputs[0]))
        line.require("elf", elf_needed);
    if (!line.given("elf") && !line.given("elf-b") && !names_its_elves(o.inputs[1]))
        line.require("elf", elf_needed);
    format_of(core::diff_formats(), o.report.format, "diff ");
    check_report_options(line, o.report, choices);
    if (o.fail_above && !(*o.fail_above >= 0 && std::isfinite(*o.fail_above)))
        throw UsageError("--fail-above takes percentage points, 0 or more");
    if (o.fail_total_above && !std::isfinite(*o.fail_total_above))
        throw UsageError("--fail-total-above takes a percentage");
    if (!(o.threshold > 0 && std::isfinite(o.threshold)))
        throw UsageError("--threshold takes a positive number of standard errors");
    return true;
}

// One side of the diff: its images and its profile.
struct Side {
    std::vector<std::string> elves;        // --elf, else the images its recording names
    std::optional<core::ImageSet> opened;  // unless they are the other side's
    const core::ImageSet* images = nullptr;
    core::Profile profile;
};

// One side's profile, its samples file checked against its images (a warning on standard
// error, or with --strict an error). The images are `other`'s when they are the same files.
void side_profile(const std::string& input, const ReportOptions& options, const std::vector<std::string>& elves,
                  const Side* other, std::optional<uint32_t> core, Side& side)
{
    sources::RecordedFirmware recorded;
    sources::InputSelection selection;
    selection.firmware = &recorded;
    const core::SampleSet samples = load_samples(input, selection);
    ReportOptions settled = options;
    settled.input = input;
    settled.elves = elves;
    settle_recorded_elves(settled, recorded);
    side.elves = settled.elves;
    if (other != nullptr && other->elves == side.elves) {
        side.images = other->images;
    } else {
        side.opened = open_images(settled);   // the images the recording ran
        side.images = &*side.opened;
    }
    check_recorded_identity(settled, recorded, *side.images);
    for (const core::Warning& warning : settled.warnings)
        std::cerr << "mcuprof diff: warning: " << input << ": " << warning.message << '\n';
    side.profile = build_profile(samples, settled, *side.images);
    if (core) {
        std::optional<core::Profile> one = core::core_profile(side.profile, *core);
        if (!one)
            throw mcuprof::Error(input, "", "--core " + std::to_string(*core) + ": the input has no such core (" +
                                                (side.profile.cores.empty()
                                                     ? std::string("it has one core")
                                                     : std::to_string(side.profile.cores.size()) + " cores") +
                                                ")");
        side.profile = std::move(*one);
    }
}

} // namespace

int diff_command(const Arguments& args)
{
    DiffOptions o;
    if (!parse_diff_options(args, o))
        return 0;
    const ReportOptions& options = o.report;
    const core::DiffFormat& format = format_of(core::diff_formats(), options.format, "diff ");
    const std::vector<std::string>& elves_b = o.elves_b.empty() ? options.elves : o.elves_b;
    Side side_a, side_b;
    side_profile(o.inputs[0], options, options.elves, nullptr, o.core, side_a);
    side_profile(o.inputs[1], options, elves_b, &side_a, o.core, side_b);
    const core::Profile& a = side_a.profile;
    const core::Profile& b = side_b.profile;
    // The hints read instructions (cpsie i): only when both sides are the same firmware.
    const core::SymbolTable* code = side_a.images == side_b.images ? &side_a.images->symbols() : nullptr;
    // The totals' gate needs both totals: a side without one is refused before the report is written.
    if (o.fail_total_above)
        for (const auto& [input, profile] : {std::pair{o.inputs[0], &a}, std::pair{o.inputs[1], &b}})
            if (!profile->run_instructions)
                throw mcuprof::Error(input, "",
                                     "--fail-total-above needs the run's instruction count, which only a census "
                                     "(truth counts) or a --qemu recording of a run to the firmware's exit has");
    const core::ProfileDiff diff = core::diff_profiles(a, b, o.threshold, code);
    write_output(options.output, [&](std::ostream& out) {
        format.write(diff, {options.top, o.fail_above, o.fail_total_above}, out);
    });
    bool failed = false;
    if (o.fail_above)
        for (const core::DiffRow& row : core::regressions(diff, *o.fail_above)) {
            std::cerr << "mcuprof diff: " << row.name << " grew from " << row.a_percent << " % to " << row.b_percent
                      << " % (z = " << core::z_text(row.z) << "), more than " << *o.fail_above
                      << " percentage points\n";
            failed = true;
        }
    if (o.fail_total_above && core::total_grew(diff, *o.fail_total_above)) {
        std::cerr << "mcuprof diff: " << core::totals_summary(diff) << ", more than " << *o.fail_total_above
                  << " % more\n";
        failed = true;
    }
    return failed ? exit_gate_failed : 0;
}

} // namespace mcuprof::cli
