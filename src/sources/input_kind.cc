#include "mcuprof/sources/input_kind.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "mcuprof/sources/error.h"
#include "mcuprof/sources/gmon_reader.h"
#include "mcuprof/sources/recording.h"
#include "mcuprof/sources/swo_reader.h"
#include "mcuprof/sources/text_file.h"

namespace mcuprof::sources {

InputKind detect_input(std::string_view head)
{
    if (is_recording(head))
        return InputKind::recording;
    if (is_gmon(head))
        return InputKind::gmon;
    // A dump announces itself with its header; UART noise may come first.
    if (head.find("prof raw n=") != std::string_view::npos || head.find("prof hist base=") != std::string_view::npos ||
        head.find("prof topn n=") != std::string_view::npos)
        return InputKind::dump;
    // Truth counts: the first line is "0xADDR COUNT" (a multi-core machine's, after "# vcpus N":
    // "0xADDR COUNT CORE").
    LineCursor lines(head);
    std::string_view line;
    while (lines.next(line)) {
        if (line.empty() || line.front() == '#')
            continue;
        const size_t space = line.find(' ');
        uint32_t address = 0;
        uint64_t count = 0;
        if (line.substr(0, 2) == "0x" && space != std::string_view::npos &&
            parse_hex32(line.substr(0, space), address) &&
            parse_decimal(line.substr(space + 1, line.find(' ', space + 1) - space - 1), count))
            return InputKind::truth_counts;
        break;
    }
    // Binary: an ITM/DWT packet stream from the SWO pin.
    if (looks_like_swo(head))
        return InputKind::swo;
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
    switch (kind) {
    case InputKind::dump: return "on-chip sampler dump";
    case InputKind::truth_counts: return "truth counts";
    case InputKind::recording: return "mcuprof recording";
    case InputKind::gmon: return "gmon.out";
    case InputKind::swo: return "SWO capture (ITM/DWT packets)";
    case InputKind::unknown: return "unknown";
    }
    return "unknown";
}

} // namespace mcuprof::sources
