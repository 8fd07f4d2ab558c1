#pragma once
// Just enough of the Protocol Buffers wire format to write a message (protobuf.dev,
// "Encoding"): varint fields (wire type 0), length-delimited fields (wire type 2: strings,
// bytes, embedded messages) and packed repeated varints. Fields are written in call order.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace mcuprof::core {

class ProtoWriter {
public:
    // int32, int64, uint32, uint64, bool and enum fields; negative int64 values are passed as
    // their two's complement (ten bytes), as the format asks.
    void varint(uint32_t field, uint64_t value);
    void bytes(uint32_t field, std::string_view data);
    void message(uint32_t field, const ProtoWriter& inner) { bytes(field, inner.data()); }
    // A repeated scalar field, packed: one length-delimited field holding the varints.
    void packed(uint32_t field, std::span<const uint64_t> values);

    const std::string& data() const { return data_; }

private:
    void key(uint32_t field, uint32_t wire_type);
    static void put_varint(std::string& out, uint64_t value);
    std::string data_;
};

// The data in a gzip member (RFC 1952), by zlib.
std::string gzip(std::string_view data);

} // namespace mcuprof::core
