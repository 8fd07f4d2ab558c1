// Fuzz target: the ITM/DWT packet parser, fed in arbitrary chunks, with and without
// waiting for a synchronization packet.
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <span>

#include "mcuprof/inputs/itm_parser.h"

namespace {

struct Discard : mcuprof::sources::ItmPacketSink {
    void receive(std::span<const mcuprof::sources::ItmPacket>) override {}
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    Discard sink;
    for (bool sync : {false, true}) {
        mcuprof::sources::ItmParserOptions options;
        options.wait_for_sync = sync;
        mcuprof::sources::ItmParser parser(options);
        const size_t step = size > 0 ? 1 + data[0] % 13 : 1;
        for (size_t at = 0; at < size; at += step)
            parser.feed(std::span<const uint8_t>(data + at, std::min(step, size - at)), sink);
        parser.finish(sink);
    }
    return 0;
}
