#pragma once
// The run headers the unit tests write, kept for the schema test: when MCUPROF_RUN_HEADERS
// names a folder (tests/inputs/test_run_header_schema.py sets it), each header's JSON goes
// into a file of its own there, to be checked against docs/schema/run-header.schema.json.
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string>

#include <unistd.h>

#include "mcuprof/inputs/run_header.h"

namespace tests {

// `header`, after keeping it.
inline const mcuprof::sources::RunHeader& kept(const mcuprof::sources::RunHeader& header)
{
    const char* folder = std::getenv("MCUPROF_RUN_HEADERS");
    if (folder == nullptr || *folder == '\0')
        return header;
    static std::atomic<unsigned> count{0};
    const std::string name = std::to_string(::getpid()) + "-" + std::to_string(count++) + ".json";
    std::ofstream(std::string(folder) + "/" + name) << to_json(header).dump();
    return header;
}

} // namespace tests
