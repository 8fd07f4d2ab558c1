#include "inputs.h"

#include <algorithm>

#include "commands.h"
#include "progress.h"
#include "mcuprof/inputs/error.h"
#include "mcuprof/inputs/input_kind.h"
#include "mcuprof/inputs/swo_reader.h"

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

StandardInput look_at_standard_input(const sources::InputSelection& selection)
{
    sources::StopWhen stop;
    stop.flag = selection.swo.stop;
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

core::SampleSet load_samples(const std::string& input, sources::InputSelection selection)
{
    const bool from_stdin = input == "-";
    StandardInput standard;
    if (from_stdin)
        standard = look_at_standard_input(selection);
    const sources::InputKind kind = from_stdin                        ? standard.kind
                                    : sources::is_stream_input(input) ? sources::InputKind::swo
                                                                      : sources::detect_input_file(input);
    const sources::InputKindRow* row = sources::input_kind_row(kind);
    const unsigned accepts = row ? row->accepts : 0;
    if (!(accepts & sources::accepts_swo) &&
        (selection.swo.wait_for_sync || selection.swo.max_time != std::chrono::nanoseconds::zero()))
        throw UsageError("--sync and --duration apply to SWO captures");
    if (!(accepts & sources::accepts_chunk) && selection.chunk)
        throw UsageError("--chunk applies to on-chip dumps");
    if (row == nullptr)
        throw sources::Error(from_stdin ? stdin_name : input, "", sources::unrecognised_input_message());
    if (!(accepts & sources::accepts_first) && selection.first)
        throw UsageError("--first applies to samples, not to " + std::string(row->first_refused));
    // Large files take seconds to read: a bar on a terminal.
    Progress progress;
    selection.progress = [&](size_t done, size_t total) {
        progress.show("mcuprof: reading " + input + " " + Progress::bar(done, total));
    };
    sources::InputBytes bytes;
    bytes.name = from_stdin ? stdin_name : input;
    if (from_stdin) {
        bytes.bytes = standard.stream ? nullptr : &standard.bytes;
        bytes.stream = standard.stream.get();
    }
    return row->read(bytes, selection);
}

bool names_its_elves(const std::string& input)
{
    return input != "-" && !sources::is_stream_input(input) &&
           sources::detect_input_file(input) == sources::InputKind::recording;
}

} // namespace mcuprof::cli
