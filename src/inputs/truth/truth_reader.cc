#include "mcuprof/inputs/truth_reader.h"

#include "mcuprof/inputs/error.h"
#include "mcuprof/inputs/text_file.h"

namespace mcuprof::sources {

core::SampleSet parse_truth(std::string_view text, const std::string& path, const ReadProgress& progress)
{
    core::SampleSet out;
    out.origin = "exact instruction counts (QEMU truth plugin): " + path;
    out.exact = true;
    LineCursor lines(text, &progress);
    std::string_view line;
    uint64_t total = 0;
    bool overflow = false;   // no run executes 2^64 instructions: such a file has no total
    std::optional<std::string> cut;
    while (lines.next(line)) {
        if (line.starts_with(cut_run_marker))
            cut = std::string(line.substr(line.find("run cut")));   // "run cut at ...", as the note
        // A machine of several cores: "# vcpus N", then "0xADDRESS COUNT CORE" lines.
        if (line.starts_with(vcpus_marker)) {
            uint64_t vcpus = 0;
            if (!parse_decimal(line.substr(vcpus_marker.size()), vcpus) || vcpus == 0 || vcpus > max_cores)
                throw Error(path, "line " + std::to_string(lines.number()),
                            "'" + std::string(line.substr(0, 40)) + "' is not '# vcpus N' with N from 1 to " +
                                std::to_string(max_cores));
            for (uint32_t core = 0; core < vcpus; ++core)
                out.core_names[core] = "core " + std::to_string(core);
            continue;
        }
        if (line.empty() || line.front() == '#')
            continue;
        const size_t space = line.find(' ');
        const size_t second = space == std::string_view::npos ? space : line.find(' ', space + 1);
        core::AddressCount entry;
        uint64_t core = 0;
        const bool with_core = second != std::string_view::npos;
        if (space == std::string_view::npos || !parse_hex32(line.substr(0, space), entry.address) ||
            !parse_decimal(line.substr(space + 1, with_core ? second - space - 1 : std::string_view::npos), entry.count) ||
            (with_core && (!parse_decimal(line.substr(second + 1), core) || core >= max_cores ||
                           out.core_names.count(uint32_t(core)) == 0)))
            throw Error(path, "line " + std::to_string(lines.number()),
                        "'" + std::string(line.substr(0, 40)) + "' is not '0xADDRESS COUNT'" +
                            (out.core_names.empty() ? "" : " or '0xADDRESS COUNT CORE' with a core below " +
                                                                std::to_string(out.core_names.size())));
        entry.core = uint32_t(core);
        out.counts.push_back(entry);
        overflow |= __builtin_add_overflow(total, entry.count, &total);
    }
    if (out.counts.empty())
        throw Error(path, "", "no counts in the file");
    if (cut)
        out.notes.push_back(*cut + "; the shares are of these instructions, and there is no whole run's total");
    else if (!overflow)
        out.run_instructions = total;
    return out;
}

core::SampleSet read_truth(const std::string& path, const ReadProgress& progress)
{
    const MappedFile file(path);
    return parse_truth(file.bytes(), path, progress);
}

} // namespace mcuprof::sources
