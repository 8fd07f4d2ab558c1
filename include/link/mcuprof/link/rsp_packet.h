#pragma once
// The framing of the GDB remote serial protocol (GDB manual, "Remote Protocol",
// "Overview"): $payload#checksum, checksum = sum of the payload bytes mod 256 as two hex
// digits, '}' escapes a byte as byte ^ 0x20, "X*n" repeats X n - 29 more times, '+' and '-'
// acknowledge. Pure functions and a byte-fed reader: no I/O, so they are tested and fuzzed
// alone.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mcuprof::transport::rsp {

uint8_t checksum(std::string_view payload);

// "$" + payload with '#', '$', '}' and '*' escaped + "#" + checksum.
std::string frame(std::string_view payload);

struct Frame {
    enum class Kind { ack, nack, packet, bad_checksum, interrupt };
    Kind kind = Kind::packet;
    std::string payload;   // packets: escapes and run-lengths decoded
};

// Collects bytes as they arrive and hands out whole frames in order. Bytes between
// frames that are neither '+', '-' nor 0x03 are skipped and counted.
class FrameReader {
public:
    void feed(std::string_view bytes) { buffer_.append(bytes); }
    std::optional<Frame> next();
    size_t skipped() const { return skipped_; }
    bool empty() const { return offset_ >= buffer_.size(); }

private:
    std::string buffer_;
    size_t offset_ = 0;
    size_t skipped_ = 0;
};

// Escapes '}' and run-length "*" decoded (GDB manual, "Binary Data", "Run-Length Encoding").
std::string decode_payload(std::string_view raw);

std::string to_hex(std::string_view bytes);
// A number in a packet: bare lower-case hex digits without leading zeros ("m8000190,4").
std::string number_to_hex(uint32_t value);
// False when the text is not an even number of hex digits.
bool from_hex(std::string_view hex, std::string& bytes);
// A little-endian target word from its hex image ("90010008" -> 0x08000190).
std::optional<uint32_t> le32_from_hex(std::string_view hex);

} // namespace mcuprof::transport::rsp
