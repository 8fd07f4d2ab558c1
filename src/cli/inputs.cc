#include "inputs.h"

#include "commands.h"
#include "progress.h"
#include "mcuprof/sources/dump_reader.h"
#include "mcuprof/sources/error.h"
#include "mcuprof/sources/gmon_reader.h"
#include "mcuprof/sources/input_kind.h"
#include "mcuprof/sources/recording.h"
#include "mcuprof/sources/swo_reader.h"
#include "mcuprof/sources/truth_reader.h"

namespace mcuprof::cli {

core::SampleSet load_samples(const std::string& input, const InputSelection& selection)
{
    const sources::InputKind kind =
        sources::is_stream_input(input) ? sources::InputKind::swo : sources::detect_input_file(input);
    if (kind != sources::InputKind::swo && (selection.swo_sync || selection.swo_duration))
        throw UsageError("--sync and --duration apply to SWO captures");
    if (kind != sources::InputKind::dump && selection.chunk)
        throw UsageError("--chunk applies to on-chip dumps");
    // Large files take seconds to read: a bar on a terminal.
    Progress progress;
    const sources::ReadProgress reading = [&](size_t done, size_t total) {
        progress.show("mcuprof: reading " + input + " " + Progress::bar(done, total));
    };
    switch (kind) {
    case sources::InputKind::dump: {
        sources::DumpSelection dump;
        dump.chunk = selection.chunk;
        dump.first = selection.first;
        return sources::to_samples(sources::read_dump(input, reading), dump);
    }
    case sources::InputKind::recording:
        return sources::to_samples(sources::read_recording(input, reading), selection.first);
    case sources::InputKind::truth_counts:
        if (selection.first)
            throw UsageError("--first applies to samples, not to truth counts");
        return sources::read_truth(input, reading);
    case sources::InputKind::gmon:
        if (selection.first)
            throw UsageError("--first applies to samples, not to a gmon.out histogram");
        return sources::read_gmon(input);
    case sources::InputKind::swo: {
        sources::SwoOptions swo;
        swo.wait_for_sync = selection.swo_sync;
        swo.max_samples = selection.first.value_or(0);
        if (selection.swo_duration)
            swo.max_time = *selection.swo_duration;
        swo.stop = selection.stop;
        return sources::read_swo(input, swo);
    }
    case sources::InputKind::unknown:
        break;
    }
    throw sources::Error(input, "",
                         "not a recognised input: expected a recording (mcuprof record), an on-chip sampler dump "
                         "('prof raw n=' or 'prof hist base=' lines), truth counts ('0xADDRESS COUNT' lines), an "
                         "SWO capture (ITM/DWT packets) or a gmon.out");
}

} // namespace mcuprof::cli
