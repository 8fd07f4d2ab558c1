// The table of input kinds: detection, reading and the selections each accepts.
#include "mcuprof/inputs/input_kind.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "mcuprof/inputs/dump_reader.h"
#include "mcuprof/inputs/error.h"
#include "mcuprof/inputs/gmon_reader.h"
#include "mcuprof/inputs/recording.h"
#include "mcuprof/inputs/swo_reader.h"
#include "mcuprof/inputs/text_file.h"
#include "mcuprof/inputs/truth_reader.h"

namespace mcuprof::sources {

namespace {

// A dump announces itself with its header; UART noise may come first.
bool looks_like_dump(std::string_view head)
{
    return head.find("prof raw n=") != std::string_view::npos || head.find("prof hist base=") != std::string_view::npos ||
           head.find("prof topn n=") != std::string_view::npos;
}

// Truth counts: the first line that is no comment is "0xADDR COUNT" (a multi-core machine's,
// after "# vcpus N": "0xADDR COUNT CORE").
bool looks_like_truth(std::string_view head)
{
    LineCursor lines(head);
    std::string_view line;
    while (lines.next(line)) {
        if (line.empty() || line.front() == '#')
            continue;
        const size_t space = line.find(' ');
        uint32_t address = 0;
        uint64_t count = 0;
        return line.substr(0, 2) == "0x" && space != std::string_view::npos &&
               parse_hex32(line.substr(0, space), address) &&
               parse_decimal(line.substr(space + 1, line.find(' ', space + 1) - space - 1), count);
    }
    return false;
}

core::SampleSet read_recording_input(const InputBytes& in, const InputSelection& selection)
{
    const Recording recording =
        in.bytes ? parse_recording(*in.bytes, in.name) : read_recording(in.name, selection.progress);
    if (selection.firmware != nullptr)
        *selection.firmware = recorded_firmware(recording.header);
    return to_samples(recording, selection.first);
}

core::SampleSet read_gmon_input(const InputBytes& in, const InputSelection&)
{
    return in.bytes ? parse_gmon(*in.bytes, in.name) : read_gmon(in.name);
}

core::SampleSet read_dump_input(const InputBytes& in, const InputSelection& selection)
{
    DumpSelection dump;
    dump.chunk = selection.chunk;
    dump.first = selection.first;
    return to_samples(in.bytes ? parse_dump(*in.bytes, in.name) : read_dump(in.name, selection.progress), dump);
}

core::SampleSet read_truth_input(const InputBytes& in, const InputSelection& selection)
{
    return in.bytes ? parse_truth(*in.bytes, in.name) : read_truth(in.name, selection.progress);
}

core::SampleSet read_swo_input(const InputBytes& in, const InputSelection& selection)
{
    const SwoOptions swo = swo_options(selection);
    return in.stream ? read_swo(*in.stream, swo) : read_swo(in.name, swo);
}

// In the order the sniffs are tried: the binary kinds with a magic first, SWO last (its
// sniff decodes packets, and text decodes as few).
constexpr std::array kinds{
    InputKindRow{InputKind::recording, "mcuprof recording", "a recording (mcuprof record)", "", is_recording,
                 read_recording_input, accepts_first},
    InputKindRow{InputKind::gmon, "gmon.out", "a gmon.out", "a gmon.out histogram", is_gmon, read_gmon_input, 0},
    InputKindRow{InputKind::dump, "on-chip sampler dump",
                 "an on-chip sampler dump ('prof raw n=' or 'prof hist base=' lines)", "", looks_like_dump,
                 read_dump_input, accepts_first | accepts_chunk},
    InputKindRow{InputKind::truth_counts, "truth counts", "truth counts ('0xADDRESS COUNT' lines)", "truth counts",
                 looks_like_truth, read_truth_input, 0},
    InputKindRow{InputKind::swo, "SWO capture (ITM/DWT packets)", "an SWO capture (ITM/DWT packets)", "",
                 looks_like_swo, read_swo_input, accepts_first | accepts_swo},
};

} // namespace

SwoOptions swo_options(const InputSelection& selection)
{
    SwoOptions swo = selection.swo;
    swo.max_samples = selection.first.value_or(0);
    return swo;
}

std::span<const InputKindRow> input_kinds()
{
    return kinds;
}

const InputKindRow* input_kind_row(InputKind kind)
{
    for (const InputKindRow& row : kinds)
        if (row.kind == kind)
            return &row;
    return nullptr;
}

InputKind detect_input(std::string_view head)
{
    for (const InputKindRow& row : kinds)
        if (row.sniff(head))
            return row.kind;
    return InputKind::unknown;
}

InputKind detect_input_file(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error(path, "", std::string("cannot open: ") + std::strerror(errno));
    std::string head(64 * 1024, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(in.gcount()));
    return detect_input(head);
}

std::string_view describe(InputKind kind)
{
    const InputKindRow* row = input_kind_row(kind);
    return row ? row->description : "unknown";
}

std::string unrecognised_input_message()
{
    std::string text = "not a recognised input: expected ";
    for (size_t i = 0; i < kinds.size(); ++i)
        text += std::string(i == 0 ? "" : i + 1 == kinds.size() ? " or " : ", ") + std::string(kinds[i].expected);
    return text;
}

} // namespace mcuprof::sources
