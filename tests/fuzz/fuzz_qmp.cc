// Fuzz target: what QEMU's QMP port may send: lines in arbitrary chunks, each a JSON object
// (or not), then read as a command's reply unless it is an event.
#include <cstddef>
#include <cstdint>
#include <string>

#include "mcuprof/link/error.h"
#include "mcuprof/link/qmp_client.h"

using namespace mcuprof::transport;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string input(reinterpret_cast<const char*>(data), size);
    std::string buffer;
    const size_t step = size > 0 ? 1 + data[0] % 17 : 1;
    for (size_t at = 0; at < size; at += step) {
        buffer += input.substr(at, step);
        try {
            while (auto message = QmpClient::take_message(buffer, "fuzz")) {
                if (!message->contains("event"))
                    (void)QmpClient::result_of(*message, "query-replay", "fuzz");
            }
        } catch (const Error&) {
        }
    }
    return 0;
}
