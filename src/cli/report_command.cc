#include <boost/program_options.hpp>

#include "mcuprof/sources/dump_reader.h"
#include "mcuprof/sources/error.h"
#include "mcuprof/sources/input_kind.h"
#include "mcuprof/sources/recording.h"
#include "mcuprof/sources/truth_reader.h"
#include "options.h"

namespace po = boost::program_options;

namespace mcuprof::cli {

int report_command(const Arguments& args)
{
    ReportOptions options;
    size_t chunk = 0;
    size_t first = 0;
    po::options_description description("Options");
    add_report_options(description, options);
    description.add_options()
        ("chunk", po::value(&chunk)->value_name("K"), "on-chip dump: report the K-th dump of the file (from 1); "
                                                      "default: all dumps merged")
        ("first", po::value(&first)->value_name("N"), "keep the first N samples");
    const std::string usage =
        "usage: mcuprof report INPUT --elf ELF [options]\n\n"
        "Reports where the samples in INPUT fall in the firmware. INPUT is found from its content:\n"
        "a recording (mcuprof record), the on-chip sampler's dump (UART text) or the truth\n"
        "plugin's instruction counts.";
    if (!parse_command(args, usage, description, options.input))
        return 0;
    if (options.input.empty())
        throw UsageError("report needs an INPUT file");

    core::SampleSet samples;
    switch (sources::detect_input_file(options.input)) {
    case sources::InputKind::dump: {
        sources::DumpSelection selection;
        if (chunk != 0)
            selection.chunk = chunk;
        if (first != 0)
            selection.first = first;
        samples = sources::to_samples(sources::read_dump(options.input), selection);
        break;
    }
    case sources::InputKind::recording:
        if (chunk != 0)
            throw UsageError("--chunk applies to on-chip dumps, not to recordings");
        samples = sources::to_samples(sources::read_recording(options.input),
                                      first != 0 ? std::optional<size_t>(first) : std::nullopt);
        break;
    case sources::InputKind::truth_counts:
        if (chunk != 0 || first != 0)
            throw UsageError("--chunk and --first apply to on-chip dumps, not to truth counts");
        samples = sources::read_truth(options.input);
        break;
    case sources::InputKind::unknown:
        throw sources::Error(options.input, "",
                             "not a recognised input: expected a recording (mcuprof record), an on-chip sampler dump "
                             "('prof raw n=' or 'prof hist base=' lines) or truth counts ('0xADDRESS COUNT' lines)");
    }
    write_profile(samples, options);
    return 0;
}

} // namespace mcuprof::cli
