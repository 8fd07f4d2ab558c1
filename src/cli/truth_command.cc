#include <boost/program_options.hpp>

#include "mcuprof/sources/truth_reader.h"
#include "options.h"
#include "profile_output.h"

namespace po = boost::program_options;

namespace mcuprof::cli {

int truth_command(const Arguments& args)
{
    ReportOptions options;
    po::options_description description("Options");
    add_report_options(description, options);
    const std::string usage =
        "usage: mcuprof truth COUNTS --elf ELF [options]\n\n"
        "Reports the ground truth: the QEMU plugin's count of every executed instruction\n"
        "(firmware-ref/truth), in the same shapes as a profile; \"samples\" are instructions.";
    if (!parse_command(args, usage, description, options.input))
        return 0;
    if (options.input.empty())
        throw UsageError("truth needs a COUNTS file");
    write_profile(sources::read_truth(options.input), options);
    return 0;
}

} // namespace mcuprof::cli
