#include <iostream>
#include <optional>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "inputs.h"
#include "mcuprof/core/diff.h"
#include "mcuprof/core/symbols.h"
#include "options.h"

namespace po = boost::program_options;

namespace mcuprof::cli {

int diff_command(const Arguments& args)
{
    ReportOptions options;
    std::vector<std::string> inputs;
    std::string elf_b;
    double threshold = 3.0;
    po::options_description description("Options");
    add_report_options(description, options);
    description.add_options()
        ("elf-b", po::value(&elf_b)->value_name("FILE"), "the ELF of B when it differs from A's (--elf)")
        ("threshold", po::value(&threshold)->value_name("Z")->default_value(3.0),
         "flag rows whose difference exceeds Z standard errors");
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
                         "--format text, json or html.\n\n"
                      << description << '\n';
            return 0;
        }
        po::notify(values);
    } catch (const po::error& e) {
        throw UsageError(e.what());
    }
    if (inputs.size() != 2)
        throw UsageError("diff needs two inputs, A and B");
    if (options.format != "text" && options.format != "json" && options.format != "html")
        throw UsageError("diff --format takes text, json or html, not '" + options.format + "'");
    const core::Profile a = build_profile(load_samples(inputs[0], {}), options, options.elf);
    const core::Profile b = build_profile(load_samples(inputs[1], {}), options, elf_b.empty() ? options.elf : elf_b);
    // The hints read instructions (cpsie i): only when both sides are the same firmware.
    std::optional<core::SymbolTable> code;
    if (elf_b.empty() || elf_b == options.elf)
        code = core::SymbolTable::load(options.elf);
    const core::ProfileDiff diff = core::diff_profiles(a, b, threshold, code ? &*code : nullptr);
    write_output(options.output, [&](std::ostream& out) {
        if (options.format == "json")
            out << core::to_json(diff).dump(2) << '\n';
        else if (options.format == "html")
            core::write_html(diff, out);
        else
            core::write_text(diff, out, options.top);
    });
    return 0;
}

} // namespace mcuprof::cli
