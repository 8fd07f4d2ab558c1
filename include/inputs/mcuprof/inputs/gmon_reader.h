#pragma once
// Reader of gmon.out, GNU gprof's profile format, as OpenOCD's `profile` command writes it:
// a "gmon" header, then records; the time histogram (tag 0) becomes buckets for the core.
// Format: glibc's sys/gmon_out.h and the gprof manual ("gmon.out File Format"); 32-bit
// little-endian addresses, as for ARM.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mcuprof/profile/samples.h"

namespace mcuprof::sources {

// A gmon.out's records as written: each time histogram's range, its bins of equal width over
// [low, high) with their 16-bit counts, and its rate (samples per second; OpenOCD writes its
// reads over the call's duration); call-graph arcs are only counted.
struct GmonFile {
    struct Histogram {
        uint32_t low = 0;
        uint32_t high = 0;
        uint32_t rate = 0;
        std::vector<uint16_t> counts;
    };
    std::vector<Histogram> histograms;
    size_t arcs = 0;
};

bool is_gmon(std::string_view head);
// Both throw sources::Error naming the file and the byte offset; parse_gmon also when no
// histogram holds a sample.
GmonFile parse_gmon_records(std::string_view bytes, const std::string& path);
GmonFile read_gmon_records(const std::string& path);
core::SampleSet parse_gmon(std::string_view bytes, const std::string& path);
core::SampleSet read_gmon(const std::string& path);

} // namespace mcuprof::sources
