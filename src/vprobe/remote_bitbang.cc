#include "mcuprof/vprobe/remote_bitbang.h"

namespace mcuprof::vprobe {

bool RemoteBitbangDecoder::feed(std::string_view bytes, std::string& replies)
{
    for (const char c : bytes) {
        if (c >= '0' && c <= '7') {
            const unsigned bits = unsigned(c - '0');
            pins_.write(bits & 4, bits & 2, bits & 1);
        } else if (c == 'R') {
            replies.push_back(pins_.tdo() ? '1' : '0');
            ++reads_;
        } else if (c >= 'r' && c <= 'u') {
            const unsigned bits = unsigned(c - 'r');
            pins_.reset(bits & 2, bits & 1);
        } else if (c == 'B' || c == 'b') {
            pins_.blink(c == 'B');
        } else if (c == 'Q') {
            ++requests_;
            return false;
        } else if (c == '\n' || c == '\r' || c == ' ') {
            continue;   // hand-typed sessions (telnet, nc) send these
        } else {
            ++unknown_;
            continue;
        }
        ++requests_;
    }
    return true;
}

} // namespace mcuprof::vprobe
