#include "mcuprof/link/rsp_packet.h"

#include <cstdio>

namespace mcuprof::transport::rsp {
namespace {

int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

} // namespace

uint8_t checksum(std::string_view payload)
{
    unsigned sum = 0;
    for (char c : payload)
        sum += static_cast<uint8_t>(c);
    return static_cast<uint8_t>(sum);
}

std::string frame(std::string_view payload)
{
    std::string body;
    body.reserve(payload.size() + 4);
    for (char c : payload) {
        if (c == '#' || c == '$' || c == '}' || c == '*') {
            body.push_back('}');
            body.push_back(static_cast<char>(c ^ 0x20));
        } else {
            body.push_back(c);
        }
    }
    char tail[4];
    std::snprintf(tail, sizeof tail, "#%02x", checksum(body));
    return "$" + body + tail;
}

std::string decode_payload(std::string_view raw)
{
    std::string out;
    out.reserve(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) {
        const char c = raw[i];
        if (c == '}' && i + 1 < raw.size()) {
            out.push_back(static_cast<char>(raw[++i] ^ 0x20));
        } else if (c == '*' && i + 1 < raw.size() && !out.empty()) {
            const int repeat = static_cast<uint8_t>(raw[++i]) - 29;
            if (repeat > 0)
                out.append(static_cast<size_t>(repeat), out.back());
        } else {
            out.push_back(c);
        }
    }
    return out;
}

std::optional<Frame> FrameReader::next()
{
    while (offset_ < buffer_.size()) {
        const char c = buffer_[offset_];
        if (c == '+' || c == '-' || c == '\x03') {
            ++offset_;
            Frame f;
            f.kind = c == '+' ? Frame::Kind::ack : c == '-' ? Frame::Kind::nack : Frame::Kind::interrupt;
            return f;
        }
        if (c != '$') {
            ++offset_;
            ++skipped_;
            continue;
        }
        const size_t hash = buffer_.find('#', offset_ + 1);
        if (hash == std::string::npos || hash + 2 >= buffer_.size())
            break;   // the rest has not arrived yet
        std::string_view raw(buffer_.data() + offset_ + 1, hash - offset_ - 1);
        const int high = hex_value(buffer_[hash + 1]);
        const int low = hex_value(buffer_[hash + 2]);
        offset_ = hash + 3;
        Frame f;
        if (high < 0 || low < 0 || checksum(raw) != uint8_t(high * 16 + low)) {
            f.kind = Frame::Kind::bad_checksum;
            return f;
        }
        f.payload = decode_payload(raw);
        return f;
    }
    if (offset_ > 0 && offset_ * 2 >= buffer_.size()) {
        buffer_.erase(0, offset_);   // keep the buffer small on long sessions
        offset_ = 0;
    }
    return std::nullopt;
}

std::string number_to_hex(uint32_t value)
{
    char text[16];
    std::snprintf(text, sizeof text, "%x", unsigned(value));
    return text;
}

std::string to_hex(std::string_view bytes)
{
    static const char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (char c : bytes) {
        out.push_back(digits[static_cast<uint8_t>(c) >> 4]);
        out.push_back(digits[static_cast<uint8_t>(c) & 15]);
    }
    return out;
}

bool from_hex(std::string_view hex, std::string& bytes)
{
    if (hex.size() % 2 != 0)
        return false;
    bytes.clear();
    bytes.reserve(hex.size() / 2);
    for (size_t i = 0; i < hex.size(); i += 2) {
        const int high = hex_value(hex[i]);
        const int low = hex_value(hex[i + 1]);
        if (high < 0 || low < 0)
            return false;
        bytes.push_back(static_cast<char>(high * 16 + low));
    }
    return true;
}

std::optional<uint32_t> le32_from_hex(std::string_view hex)
{
    std::string bytes;
    if (hex.size() != 8 || !from_hex(hex, bytes))
        return std::nullopt;
    return uint32_t(uint8_t(bytes[0])) | uint32_t(uint8_t(bytes[1])) << 8 | uint32_t(uint8_t(bytes[2])) << 16 |
           uint32_t(uint8_t(bytes[3])) << 24;
}

} // namespace mcuprof::transport::rsp
