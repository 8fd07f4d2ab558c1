#pragma once
// A byte stream to a server with a deadline on every operation: a TCP connection or a
// serial line. The protocol clients sit on it and know nothing of which it is.
#include <chrono>
#include <string>
#include <string_view>

namespace mcuprof::transport {

using Duration = std::chrono::steady_clock::duration;

class ByteStream {
public:
    virtual ~ByteStream() = default;
    virtual void write(std::string_view bytes, Duration timeout) = 0;
    // Appends what arrives (at least one byte) to `into`. Throws on timeout or when the
    // peer closed the stream.
    virtual void read_some(std::string& into, Duration timeout) = 0;
    // Like read_some, but returns false instead of throwing on timeout.
    virtual bool try_read_some(std::string& into, Duration timeout) = 0;
    virtual void close() = 0;
    virtual const std::string& peer() const = 0;
};

} // namespace mcuprof::transport
