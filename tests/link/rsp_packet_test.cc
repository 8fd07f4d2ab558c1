#include <doctest/doctest.h>

#include "mcuprof/link/rsp_packet.h"

using namespace mcuprof::transport::rsp;

TEST_CASE("rsp packet: framing and checksum (GDB manual's example m0,4 -> #fd)")
{
    CHECK(checksum("m0,4") == 0xfd);   // 109 + 48 + 44 + 52 = 253
    CHECK(frame("m0,4") == "$m0,4#fd");
    CHECK(frame("") == "$#00");
}

TEST_CASE("rsp packet: '#', '$', '}' and '*' are escaped as '}' and the byte xor 0x20")
{
    // '#' is 0x23 -> 0x03; the checksum covers the escaped bytes: 'a' 97 + '}' 125 + 3 + 'b' 98 = 323 -> 0x43.
    CHECK(frame("a#b") == std::string("$a}\x03") + "b#43");
    CHECK(decode_payload(std::string("a}\x03") + "b") == "a#b");
    CHECK(decode_payload("}\x5d") == "}");
}

TEST_CASE("rsp packet: run-length encoding repeats the previous character count - 29 more times")
{
    CHECK(decode_payload("0* ") == "0000");          // ' ' is 32: three more
    CHECK(decode_payload("ab*\"c") == "abbbbbbc");   // '"' is 34: five more
}

TEST_CASE("rsp packet: the reader hands out acks, packets and bad checksums in order, across chunks")
{
    FrameReader reader;
    reader.feed("+$O");
    auto first = reader.next();
    REQUIRE(first);
    CHECK(first->kind == Frame::Kind::ack);
    CHECK_FALSE(reader.next());   // the packet is not whole yet
    reader.feed("K#9a-junk$OK#00");
    auto ok = reader.next();
    REQUIRE(ok);
    CHECK(ok->kind == Frame::Kind::packet);
    CHECK(ok->payload == "OK");
    CHECK(reader.next()->kind == Frame::Kind::nack);
    CHECK(reader.next()->kind == Frame::Kind::bad_checksum);   // "OK" sums to 0x9a, not 0x00
    CHECK(reader.skipped() == 4);                              // "junk"
    CHECK_FALSE(reader.next());
}

TEST_CASE("rsp packet: hex helpers and little-endian words")
{
    CHECK(to_hex("\x01\xab") == "01ab");
    std::string bytes;
    CHECK(from_hex("01AB", bytes));
    CHECK(bytes == "\x01\xab");
    CHECK_FALSE(from_hex("1", bytes));
    CHECK_FALSE(from_hex("zz", bytes));
    CHECK(le32_from_hex("90010008") == 0x08000190u);
    CHECK_FALSE(le32_from_hex("900100"));
}
