#include <cmath>
#include <iostream>
#include <optional>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "inputs.h"
#include "mcuprof/core/diff.h"
#include "mcuprof/core/symbols.h"
#include "options.h"
#include "profile_output.h"

namespace po = boost::program_options;

namespace mcuprof::cli {

int diff_command(const Arguments& args)
{
    ReportOptions options;
    std::vector<std::string> inputs;
    std::string elf_b;
    double threshold = 3.0;
    std::optional<double> fail_above;
    po::options_description description("Options");
    add_report_options(description, options, core::format_help(core::diff_formats()));
    description.add_options()
        ("elf-b", po::value(&elf_b)->value_name("FILE"), "the ELF of B when it differs from A's (--elf)")
        ("threshold", po::value(&threshold)->value_name("Z")->default_value(3.0),
         "flag rows whose difference exceeds Z standard errors")
        ("fail-above", po::value<double>()->value_name("PP")->notifier([&](double pp) { fail_above = pp; }),
         "CI gate: exit with status 4 when a function's share grew from A to B by more than PP percentage "
         "points and by more than the threshold (Z); else 0");
    po::options_description all(description);
    all.add_options()("help,h", "show this help")("inputs", po::value(&inputs)->multitoken(), "A and B");
    po::positional_options_description positional;
    positional.add("inputs", 2);
    po::variables_map values;
    try {
        po::store(po::command_line_parser(args).options(all).positional(positional).run(), values);
        if (values.count("help")) {
            std::cout << "usage: mcuprof diff A B --elf ELF [options]\n\n"
                         "Two profiles side by side (any inputs mcuprof report reads: recordings, on-chip\n"
                         "dumps, truth counts, SWO captures), each row's difference with its z-score; rows\n"
                         "beyond the threshold are marked, with hints for the classic traps of comparing samplers\n"
                         "(interrupts disabled, lockstep, a handler the on-chip sampler cannot see).\n"
                         "Exit status: 0, or 4 when --fail-above PP finds a function that grew (docs/ci.md).\n\n"
                      << description << '\n';
            return 0;
        }
        po::notify(values);
    } catch (const po::error& e) {
        throw UsageError(e.what());
    }
    if (inputs.size() != 2)
        throw UsageError("diff needs two inputs, A and B");
    const core::DiffFormat& format = format_of(core::diff_formats(), options.format, "diff ");
    if (fail_above && !(*fail_above >= 0 && std::isfinite(*fail_above)))
        throw UsageError("--fail-above takes percentage points, 0 or more");
    const core::Profile a = build_profile(load_samples(inputs[0], {}), options, options.elf);
    const core::Profile b = build_profile(load_samples(inputs[1], {}), options, elf_b.empty() ? options.elf : elf_b);
    // The hints read instructions (cpsie i): only when both sides are the same firmware.
    std::optional<core::SymbolTable> code;
    if (elf_b.empty() || elf_b == options.elf)
        code = core::SymbolTable::load(options.elf);
    const core::ProfileDiff diff = core::diff_profiles(a, b, threshold, code ? &*code : nullptr);
    write_output(options.output, [&](std::ostream& out) { format.write(diff, {options.top, fail_above}, out); });
    if (!fail_above)
        return 0;
    const std::vector<core::DiffRow> grown = core::regressions(diff, *fail_above);
    for (const core::DiffRow& row : grown)
        std::cerr << "mcuprof diff: " << row.name << " grew from " << row.a_percent << " % to " << row.b_percent
                  << " % (z = " << row.z << "), more than " << *fail_above << " percentage points\n";
    return grown.empty() ? 0 : exit_gate_failed;
}

} // namespace mcuprof::cli
