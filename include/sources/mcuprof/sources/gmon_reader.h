#pragma once
// Reader of gmon.out, GNU gprof's profile format, as OpenOCD's `profile` command writes it:
// a "gmon" header, then records; the time histogram (tag 0) becomes buckets for the core.
// Format: glibc's sys/gmon_out.h and the gprof manual ("gmon.out File Format"); 32-bit
// little-endian addresses, as for ARM.
#include <string>
#include <string_view>

#include "mcuprof/core/samples.h"

namespace mcuprof::sources {

bool is_gmon(std::string_view head);
// Throws sources::Error naming the file and the byte offset.
core::SampleSet parse_gmon(std::string_view bytes, const std::string& path);
core::SampleSet read_gmon(const std::string& path);

} // namespace mcuprof::sources
