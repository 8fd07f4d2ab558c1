#include "inputs.h"

#include <algorithm>

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

namespace {

constexpr const char* stdin_name = "standard input";

// Standard input may carry any kind of input, and cannot be looked at without being read: its
// first bytes say which kind it is. A file kind is then read whole; an SWO stream goes on
// being read as it comes, the bytes looked at included.
struct StandardInput {
    sources::InputKind kind = sources::InputKind::unknown;
    std::string bytes;                               // all of it, for a file kind
    std::unique_ptr<sources::ByteSource> stream;     // an SWO stream
};

StandardInput look_at_standard_input(const InputSelection& selection)
{
    sources::StopWhen stop;
    stop.flag = selection.stop;
    StandardInput in;
    std::unique_ptr<sources::ByteSource> source = sources::open_byte_source("-");
    const std::span<const uint8_t> first = source->next(stop);
    in.bytes.assign(reinterpret_cast<const char*>(first.data()), first.size());
    in.kind = in.bytes.empty() ? sources::InputKind::unknown : sources::detect_input(in.bytes);
    // Text that is none of the text kinds is no SWO stream either: every stream byte run holds
    // a PC packet's 0x17 header or a sync packet's zeros, which text never has.
    const bool text = in.bytes.size() >= 8 && std::all_of(in.bytes.begin(), in.bytes.end(), [](char c) {
                          return (c >= 0x20 && c < 0x7F) || c == '\n' || c == '\r' || c == '\t';
                      });
    if (in.kind == sources::InputKind::unknown && text)
        return in;
    if (in.kind == sources::InputKind::swo || in.kind == sources::InputKind::unknown) {
        // Too few bytes to tell, or packets: a live SWO stream, as before.
        in.kind = sources::InputKind::swo;
        in.stream = sources::prefixed_byte_source(std::move(in.bytes), std::move(source));
        return in;
    }
    for (std::span<const uint8_t> more = source->next(stop); !more.empty(); more = source->next(stop))
        in.bytes.append(reinterpret_cast<const char*>(more.data()), more.size());
    return in;
}

} // namespace

core::SampleSet load_samples(const std::string& input, const InputSelection& selection)
{
    StandardInput standard;
    if (input == "-")
        standard = look_at_standard_input(selection);
    const bool from_stdin = input == "-";
    const sources::InputKind kind = from_stdin                          ? standard.kind
                                    : sources::is_stream_input(input) ? sources::InputKind::swo
                                                                      : sources::detect_input_file(input);
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
        return sources::to_samples(from_stdin ? sources::parse_dump(standard.bytes, stdin_name)
                                              : sources::read_dump(input, reading),
                                   dump);
    }
    case sources::InputKind::recording: {
        const sources::Recording recording = from_stdin ? sources::parse_recording(standard.bytes, stdin_name)
                                                        : sources::read_recording(input, reading);
        if (selection.firmware != nullptr)
            *selection.firmware = sources::recorded_firmware(recording.header);
        return sources::to_samples(recording, selection.first);
    }
    case sources::InputKind::truth_counts:
        if (selection.first)
            throw UsageError("--first applies to samples, not to truth counts");
        return from_stdin ? sources::parse_truth(standard.bytes, stdin_name) : sources::read_truth(input, reading);
    case sources::InputKind::gmon:
        if (selection.first)
            throw UsageError("--first applies to samples, not to a gmon.out histogram");
        return from_stdin ? sources::parse_gmon(standard.bytes, stdin_name) : sources::read_gmon(input);
    case sources::InputKind::swo: {
        sources::SwoOptions swo;
        swo.wait_for_sync = selection.swo_sync;
        swo.max_samples = selection.first.value_or(0);
        if (selection.swo_duration)
            swo.max_time = *selection.swo_duration;
        swo.stop = selection.stop;
        return from_stdin ? sources::read_swo(*standard.stream, swo) : sources::read_swo(input, swo);
    }
    case sources::InputKind::unknown:
        break;
    }
    throw sources::Error(from_stdin ? stdin_name : input, "",
                         "not a recognised input: expected a recording (mcuprof record), an on-chip sampler dump "
                         "('prof raw n=' or 'prof hist base=' lines), truth counts ('0xADDRESS COUNT' lines), an "
                         "SWO capture (ITM/DWT packets) or a gmon.out");
}

} // namespace mcuprof::cli
