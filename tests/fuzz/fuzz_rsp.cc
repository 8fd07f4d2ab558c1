// Fuzz target: what a GDB server may send: frames in arbitrary chunks, payload decoding,
// stop replies, target description XML (with includes that name the input again).
#include <cstddef>
#include <cstdint>
#include <string>

#include "mcuprof/link/error.h"
#include "mcuprof/link/rsp_client.h"
#include "mcuprof/link/rsp_packet.h"
#include "mcuprof/link/target_description.h"

using namespace mcuprof::transport;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string input(reinterpret_cast<const char*>(data), size);
    rsp::FrameReader reader;
    const size_t step = size > 0 ? 1 + data[0] % 7 : 1;
    for (size_t at = 0; at < size; at += step) {
        reader.feed(std::string_view(input).substr(at, step));
        while (auto frame = reader.next()) {
            (void)rsp::le32_from_hex(frame->payload);
            try {
                (void)RspClient::parse_stop(frame->payload, "fuzz");
            } catch (const Error&) {
            }
        }
    }
    (void)rsp::decode_payload(input);
    try {
        (void)TargetDescription::parse([&](const std::string&) { return input; }, "fuzz");
    } catch (const Error&) {
    }
    return 0;
}
