#include "mcuprof/report/protobuf.h"

#include <zlib.h>

#include "mcuprof/image/error.h"

namespace mcuprof::core {

void ProtoWriter::put_varint(std::string& out, uint64_t value)
{
    // Seven bits a byte, least significant group first; the top bit says another byte follows.
    while (value >= 0x80) {
        out.push_back(char(uint8_t(value) | 0x80));
        value >>= 7;
    }
    out.push_back(char(value));
}

void ProtoWriter::key(uint32_t field, uint32_t wire_type)
{
    put_varint(data_, uint64_t(field) << 3 | wire_type);
}

void ProtoWriter::varint(uint32_t field, uint64_t value)
{
    key(field, 0);
    put_varint(data_, value);
}

void ProtoWriter::bytes(uint32_t field, std::string_view data)
{
    key(field, 2);
    put_varint(data_, data.size());
    data_.append(data);
}

void ProtoWriter::packed(uint32_t field, std::span<const uint64_t> values)
{
    std::string payload;
    for (uint64_t value : values)
        put_varint(payload, value);
    bytes(field, payload);
}

std::string gzip(std::string_view data)
{
    z_stream stream{};
    // windowBits 15 + 16: a gzip header and trailer around the deflate stream (zlib.h).
    if (deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        throw Error("gzip", "", "zlib could not start a deflate stream");
    std::string out(deflateBound(&stream, data.size()), '\0');
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    stream.avail_in = uInt(data.size());
    stream.next_out = reinterpret_cast<Bytef*>(out.data());
    stream.avail_out = uInt(out.size());
    const int result = deflate(&stream, Z_FINISH);
    deflateEnd(&stream);
    if (result != Z_STREAM_END)
        throw Error("gzip", "", "zlib could not compress the profile");
    out.resize(stream.total_out);
    return out;
}

} // namespace mcuprof::core
