// Fuzz target: the decoder of instrumented entry/exit records (seed 003), fed the input as
// an ITM stream (its 4-byte writes to port 1) and as raw 32-bit words.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "mcuprof/inputs/call_trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace mcuprof::sources;
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const auto source = memory_byte_source(bytes, "fuzz", size > 0 ? 1 + data[0] % 13 : 1);
    read_call_trace(*source, {}, default_call_trace_channel);

    CallTraceDecoder decoder;
    for (size_t at = 0; at + 4 <= size; at += 4) {
        uint32_t word;
        std::memcpy(&word, data + at, 4);
        decoder.word(word);
    }
    decoder.finish();
    return 0;
}
