// Fuzz target: what OpenOCD's Tcl RPC port may send back: messages cut by 0x1a in arbitrary
// chunks, each read as the wrapped script's "CODE TEXT" reply, and its result as the OpenOCD
// sampler reads it (read_memory words, get_reg's name-value pairs).
#include <cstddef>
#include <cstdint>
#include <string>

#include "mcuprof/target/tcl_script.h"
#include "mcuprof/link/error.h"
#include "mcuprof/link/tcl_client.h"

using namespace mcuprof;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string input(reinterpret_cast<const char*>(data), size);
    std::string buffer;
    const size_t step = size > 0 ? 1 + data[0] % 13 : 1;
    for (size_t at = 0; at < size; at += step) {
        buffer += input.substr(at, step);
        while (auto message = transport::TclClient::take_message(buffer)) {
            try {
                const std::string result = transport::TclClient::result_of(*message, "fuzz", "script");
                (void)sources::tcl::parse_words(result, "fuzz", "words");
            } catch (const transport::Error&) {
            }
        }
    }
    return 0;
}
