// Expectations are worked out by hand from the packet layouts of the ARMv7-M Architecture
// Reference Manual, Appendix D4; the bytes of each case are spelled out next to them.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "mcuprof/inputs/itm_parser.h"

using namespace mcuprof::sources;

namespace {

using Bytes = std::vector<uint8_t>;

struct Collect : ItmPacketSink {
    std::vector<ItmPacket> packets;
    void receive(std::span<const ItmPacket> batch) override { packets.insert(packets.end(), batch.begin(), batch.end()); }
};

struct Decoded {
    std::vector<ItmPacket> packets;
    ItmCounts counts;
};

// Feeds `bytes` in chunks of `chunk` bytes (0: all at once).
Decoded decode(const Bytes& bytes, ItmParserOptions options = {}, size_t chunk = 0)
{
    ItmParser parser(options);
    Collect sink;
    const size_t step = chunk == 0 ? std::max<size_t>(bytes.size(), 1) : chunk;
    for (size_t at = 0; at < bytes.size(); at += step)
        parser.feed(std::span(bytes.data() + at, std::min(step, bytes.size() - at)), sink);
    parser.finish(sink);
    return {sink.packets, parser.counts()};
}

// The one packet `bytes` hold.
ItmPacket one(const Bytes& bytes)
{
    const Decoded d = decode(bytes);
    REQUIRE(d.packets.size() == 1);
    CHECK(d.counts.truncated == 0);
    CHECK(d.packets[0].offset == 0);
    return d.packets[0];
}

bool same(const ItmPacket& a, const ItmPacket& b)
{
    return a.kind == b.kind && a.header == b.header && a.payload_size == b.payload_size && a.flags == b.flags &&
           a.channel == b.channel && a.value == b.value && a.offset == b.offset;
}

void append(Bytes& to, const Bytes& more)
{
    to.insert(to.end(), more.begin(), more.end());
}

const Bytes sync_packet = {0x00, 0x00, 0x00, 0x00, 0x00, 0x80};

Bytes pc_packet(uint32_t pc)
{
    return {0x17, uint8_t(pc), uint8_t(pc >> 8), uint8_t(pc >> 16), uint8_t(pc >> 24)};
}

// One of each kind, 21 packets; every split of it into two or three chunks must decode the same.
Bytes every_kind()
{
    Bytes s = sync_packet;
    for (const Bytes& p : std::vector<Bytes>{
             {0x70},                                   // overflow
             {0x30},                                   // local timestamp, format 2: 3
             {0xD0, 0x81, 0x80, 0x80, 0x01},           // local timestamp, format 1, TC 1
             {0x94, 0x81, 0x82, 0x83, 0x65},           // global timestamp 1 with ClkCh and Wrap
             {0xB4, 0x81, 0x80, 0x80, 0x01},           // global timestamp 2, 48-bit form
             {0x18},                                   // extension: stimulus page 1
             {0x01, 0x48},                             // stimulus port 32 (page 1), 1 byte
             {0x08},                                   // extension: stimulus page 0
             {0x0B, 0x78, 0x56, 0x34, 0x12},           // stimulus port 1, 4 bytes
             {0x05, 0x24},                             // event counters: POSTCNT and SLEEP wrapped
             {0x0E, 0x0F, 0x10},                       // exception 15 entered
             {0x0E, 0x10, 0x21},                       // exception 272 exited
             {0x17, 0xb4, 0x02, 0x00, 0x08},           // PC sample 0x080002b4
             {0x15, 0x00},                             // sleep sample
             {0x57, 0x10, 0x03, 0x00, 0x08},           // data trace PC, comparator 1
             {0x6E, 0x34, 0x12},                       // data trace address, comparator 2
             {0xBF, 0xEF, 0xBE, 0xAD, 0xDE},           // data trace value written, comparator 3
             {0x85, 0x7F},                             // data trace value read, comparator 0
             {0x04},                                   // reserved header
         })
        append(s, p);
    append(s, sync_packet);
    return s;
}

} // namespace

TEST_CASE("itm parser: synchronization and overflow")
{
    ItmPacket p = one(sync_packet);
    CHECK(p.kind == ItmKind::sync);
    CHECK(p.payload_size == 5);
    p = one({0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80});   // more zeros than needed is still a sync
    CHECK(p.kind == ItmKind::sync);
    CHECK(p.payload_size == 7);
    CHECK(one({0x70}).kind == ItmKind::overflow);

    // Four zero bytes are 32 + 7 zero bits: short of the 47 a sync packet needs.
    p = one({0x00, 0x00, 0x00, 0x00, 0x80});
    CHECK(p.kind == ItmKind::bad);
    CHECK(ItmBadReason(p.flags) == ItmBadReason::short_sync);
    // Zeros ended by another byte: one bad packet, then that byte is read as a header.
    const Decoded d = decode({0x00, 0x00, 0x70});
    REQUIRE(d.packets.size() == 2);
    CHECK(d.packets[0].kind == ItmKind::bad);
    CHECK(d.packets[1].kind == ItmKind::overflow);
    CHECK(d.packets[1].offset == 2);
}

TEST_CASE("itm parser: local timestamps, both formats and every TC")
{
    for (uint8_t ts = 1; ts <= 6; ++ts) {   // format 2: 0b0TTT0000
        const ItmPacket p = one({uint8_t(ts << 4)});
        CHECK(p.kind == ItmKind::local_timestamp);
        CHECK(p.value == ts);
        CHECK(p.flags == 0);
    }
    // Format 1, C0 85 12: 7-bit groups, least significant first: 0x05 + 0x12 << 7.
    ItmPacket p = one({0xC0, 0x85, 0x12});
    CHECK(p.kind == ItmKind::local_timestamp);
    CHECK(p.value == 0x05 + (0x12 << 7));
    CHECK(p.payload_size == 2);
    for (uint8_t tc = 0; tc < 4; ++tc) {   // 0b11TC0000
        p = one({uint8_t(0xC0 | tc << 4), 0x81, 0x80, 0x80, 0x01});
        CHECK(p.kind == ItmKind::local_timestamp);
        CHECK(p.flags == tc);
        CHECK(p.value == 1 + (1u << 21));
        CHECK(p.payload_size == 4);
    }
    p = one({0xC0, 0x7F});
    CHECK(p.value == 127);
    // A fourth byte with the continuation bit still set: the packet cannot go on.
    p = one({0xC0, 0x80, 0x80, 0x80, 0x80});
    CHECK(p.kind == ItmKind::bad);
    CHECK(ItmBadReason(p.flags) == ItmBadReason::too_long);
    // 0x80..0xB0 are neither format (0b10xx0000): reserved.
    for (uint8_t h : {0x80, 0x90, 0xA0, 0xB0}) {
        p = one({h});
        CHECK(p.kind == ItmKind::bad);
        CHECK(ItmBadReason(p.flags) == ItmBadReason::reserved_header);
    }
}

TEST_CASE("itm parser: global timestamps 1 and 2")
{
    // GTS1, 94 81 82 83 65: TS[20:0] = 1 + 2 << 7 + 3 << 14; the last byte 0b0110_0101 is
    // Wrap 1, ClkCh 1, TS[25:21] = 5.
    ItmPacket p = one({0x94, 0x81, 0x82, 0x83, 0x65});
    CHECK(p.kind == ItmKind::global_timestamp_1);
    CHECK(p.value == 1 + (2u << 7) + (3u << 14) + (5u << 21));
    CHECK(p.flags == (global_timestamp_clock_change | global_timestamp_wrap));
    p = one({0x94, 0x7F});   // only the low bits changed
    CHECK(p.kind == ItmKind::global_timestamp_1);
    CHECK(p.value == 0x7F);
    CHECK(p.flags == 0);
    CHECK(one({0x94, 0x80, 0x80, 0x80, 0x80}).kind == ItmKind::bad);

    // GTS2 48-bit form, 4 bytes: TS[47:26]; 64-bit form, 6 bytes: TS[63:26].
    p = one({0xB4, 0x81, 0x80, 0x80, 0x01});
    CHECK(p.kind == ItmKind::global_timestamp_2);
    CHECK(p.value == 1 + (1u << 21));
    p = one({0xB4, 0x80, 0x80, 0x80, 0x80, 0x80, 0x07});
    CHECK(p.kind == ItmKind::global_timestamp_2);
    CHECK(p.value == uint64_t(7) << 35);
    CHECK(p.payload_size == 6);
    p = one({0xB4, 0x81, 0x01});   // 2 bytes: neither form
    CHECK(p.kind == ItmKind::bad);
    CHECK(ItmBadReason(p.flags) == ItmBadReason::wrong_size);
    CHECK(one({0xB4, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}).kind == ItmKind::bad);
}

TEST_CASE("itm parser: extension packets set the stimulus port page")
{
    ItmPacket p = one({0x38});   // 0b0011_1000: EX 3, SH 0
    CHECK(p.kind == ItmKind::extension);
    CHECK(p.value == 3);
    CHECK(p.flags == 0);
    p = one({0x1C});   // SH 1
    CHECK(p.kind == ItmKind::extension);
    CHECK(p.flags == 1);
    // 88 81 02: EX[2:0] 0 from the header, EX[9:3] = 1, EX[16:10] = 2.
    p = one({0x88, 0x81, 0x02});
    CHECK(p.value == (1u << 3) + (2u << 10));
    // The fourth payload byte is EX[31:24], all eight bits.
    p = one({0x88, 0x80, 0x80, 0x80, 0xFF});
    CHECK(p.kind == ItmKind::extension);
    CHECK(p.value == 0xFF000000u);

    // Page 2 then port 5: stimulus port 69; a sync packet returns to page 0.
    Bytes s = {0x28, 0x29, 0x41};
    append(s, sync_packet);
    append(s, {0x29, 0x41});
    const Decoded d = decode(s);
    REQUIRE(d.packets.size() == 4);
    CHECK(d.packets[1].channel == 69);
    CHECK(d.packets[3].channel == 5);
    // SH 1 leaves the page alone.
    const Decoded h = decode({0x28, 0x1C, 0x01, 0x00});
    CHECK(h.packets.back().channel == 64);
}

TEST_CASE("itm parser: software stimulus packets of 1, 2 and 4 bytes")
{
    ItmPacket p = one({0x01, 0x48});   // port 0, 1 byte
    CHECK(p.kind == ItmKind::instrumentation);
    CHECK(p.channel == 0);
    CHECK(p.value == 0x48);
    CHECK(p.payload_size == 1);
    p = one({0x0A, 0x34, 0x12});   // 0b00001_0_10: port 1, 2 bytes
    CHECK(p.channel == 1);
    CHECK(p.value == 0x1234);
    CHECK(p.payload_size == 2);
    p = one({0xFB, 0x78, 0x56, 0x34, 0x12});   // 0b11111_0_11: port 31, 4 bytes
    CHECK(p.channel == 31);
    CHECK(p.value == 0x12345678);
    CHECK(p.payload_size == 4);
}

TEST_CASE("itm parser: hardware source packets")
{
    ItmPacket p = one({0x05, 0x24});   // event counter: bit 5 POSTCNT, bit 2 SLEEP
    CHECK(p.kind == ItmKind::event_counter);
    CHECK(p.value == 0x24);

    // Exception trace: byte 0 ExceptionNumber[7:0], byte 1 bit 0 ExceptionNumber[8], bits 5:4 FN.
    p = one({0x0E, 0x0F, 0x10});
    CHECK(p.kind == ItmKind::exception_trace);
    CHECK(p.value == 15);
    CHECK(p.flags == exception_entered);
    p = one({0x0E, 0x0F, 0x20});
    CHECK(p.flags == exception_exited);
    p = one({0x0E, 0x0F, 0x30});
    CHECK(p.flags == exception_returned);
    p = one({0x0E, 0x10, 0x21});
    CHECK(p.value == 256 + 16);
    p = one({0x0E, 0x0F, 0x00});   // FN 0 is reserved
    CHECK(p.kind == ItmKind::bad);
    CHECK(ItmBadReason(p.flags) == ItmBadReason::exception_function);

    // PC sample: the address 0x080002b4 goes on the line as 17 b4 02 00 08.
    p = one({0x17, 0xb4, 0x02, 0x00, 0x08});
    CHECK(p.kind == ItmKind::pc_sample);
    CHECK(p.value == 0x080002b4);
    p = one({0x17, 0x00, 0x00, 0x00, 0x00});   // PC 0 is an address (flash aliased at 0), not sleep
    CHECK(p.kind == ItmKind::pc_sample);
    CHECK(p.value == 0);
    CHECK(one({0x15, 0x00}).kind == ItmKind::sleep_sample);
    CHECK(one({0x15, 0x05}).kind == ItmKind::bad);          // a 1-byte sample is 0 or nothing
    CHECK(one({0x16, 0x00, 0x00}).kind == ItmKind::bad);    // no 2-byte form

    // Data trace: discriminator 0b01CC0 PC value, 0b01CC1 address [15:0], 0b10CCW data value.
    p = one({0x57, 0x10, 0x03, 0x00, 0x08});   // 10 = 0b01010: comparator 1
    CHECK(p.kind == ItmKind::data_trace_pc);
    CHECK(p.channel == 1);
    CHECK(p.value == 0x08000310);
    p = one({0x6E, 0x34, 0x12});   // 13 = 0b01101: comparator 2
    CHECK(p.kind == ItmKind::data_trace_address);
    CHECK(p.channel == 2);
    CHECK(p.value == 0x1234);
    p = one({0xBF, 0xEF, 0xBE, 0xAD, 0xDE});   // 23 = 0b10111: comparator 3, write
    CHECK(p.kind == ItmKind::data_trace_value);
    CHECK(p.channel == 3);
    CHECK(p.flags == 1);
    CHECK(p.value == 0xDEADBEEF);
    p = one({0x85, 0x7F});   // 16 = 0b10000: comparator 0, read, 1 byte
    CHECK(p.kind == ItmKind::data_trace_value);
    CHECK(p.flags == 0);
    CHECK(p.payload_size == 1);
    p = one({0x46, 0x01, 0x02});   // 0b01000_1_10: a PC value packet of 2 bytes does not exist
    CHECK(p.kind == ItmKind::bad);

    // Discriminators 3..7 and 24..31 are reserved; their length is still known from SS.
    for (uint8_t h : {0x1D, 0x3E, 0xC5, 0xFF}) {
        const Decoded d = decode({h, 0x11, 0x22, 0x33, 0x44, 0x70});
        REQUIRE(!d.packets.empty());
        CHECK(d.packets[0].kind == ItmKind::bad);
        CHECK(ItmBadReason(d.packets[0].flags) == ItmBadReason::reserved_source);
    }
}

TEST_CASE("itm parser: reserved headers are bad and the parser moves on")
{
    // 0b0xxx0100 other than the global timestamps, and 0b10xx0000.
    for (uint8_t h : {0x04, 0x14, 0x24, 0x44, 0x74, 0x84, 0xA4, 0xC4, 0xF4, 0x80}) {
        const Decoded d = decode({h, 0x17, 0x01, 0x00, 0x00, 0x08});
        REQUIRE(d.packets.size() == 2);
        CHECK(d.packets[0].kind == ItmKind::bad);
        CHECK(d.packets[1].kind == ItmKind::pc_sample);
        CHECK(d.packets[1].value == 0x08000001);
        CHECK(d.counts[ItmKind::bad] == 1);
    }
}

TEST_CASE("itm parser: every kind, and chunk boundaries anywhere inside packets")
{
    const Bytes stream = every_kind();
    const Decoded whole = decode(stream);
    REQUIRE(whole.packets.size() == 21);
    CHECK(whole.counts.total_packets() == 21);
    CHECK(whole.counts.bytes == stream.size());
    CHECK(whole.counts.truncated == 0);
    CHECK(whole.counts[ItmKind::sync] == 2);
    CHECK(whole.counts[ItmKind::extension] == 2);
    CHECK(whole.counts[ItmKind::local_timestamp] == 2);
    CHECK(whole.counts[ItmKind::data_trace_value] == 2);
    CHECK(whole.counts[ItmKind::bad] == 1);
    for (size_t k = 0; k < itm_kind_count; ++k)
        CHECK_MESSAGE(whole.counts.packets[k] >= 1, name_of(ItmKind(k)));
    CHECK(summary(whole.counts).starts_with("sync=2 overflow=1 local-ts=2 global-ts1=1"));

    // Offsets are those of the headers, whatever the chunks.
    uint64_t offset = 0;
    for (const ItmPacket& p : whole.packets) {
        CHECK(p.offset == offset);
        offset += 1 + p.payload_size;
    }
    CHECK(offset == stream.size());

    for (size_t chunk = 1; chunk <= 8; ++chunk) {
        const Decoded d = decode(stream, {}, chunk);
        REQUIRE(d.packets.size() == whole.packets.size());
        for (size_t i = 0; i < d.packets.size(); ++i)
            CHECK_MESSAGE(same(d.packets[i], whole.packets[i]), "chunk ", chunk, " packet ", i);
        CHECK(d.counts.packets == whole.counts.packets);
    }
    // Every cut into three chunks.
    for (size_t a = 0; a <= stream.size(); ++a)
        for (size_t b = a; b <= stream.size(); b += 3) {
            ItmParser parser;
            Collect sink;
            parser.feed(std::span(stream.data(), a), sink);
            parser.feed(std::span(stream.data() + a, b - a), sink);
            parser.feed(std::span(stream.data() + b, stream.size() - b), sink);
            parser.finish(sink);
            REQUIRE(sink.packets.size() == whole.packets.size());
            bool all_same = true;
            for (size_t i = 0; i < sink.packets.size(); ++i)
                all_same = all_same && same(sink.packets[i], whole.packets[i]);
            CHECK_MESSAGE(all_same, "cuts at ", a, " and ", b);
        }
}

TEST_CASE("itm parser: a stream cut in the middle of a packet")
{
    // The tail is 17 b4 02: three of the PC sample's five bytes.
    Decoded d = decode({0x17, 0x01, 0x00, 0x00, 0x08, 0x17, 0xb4, 0x02});
    CHECK(d.counts[ItmKind::pc_sample] == 1);
    CHECK(d.counts.truncated == 1);
    // Cut inside a timestamp's continuation bytes, and inside a sync packet.
    CHECK(decode({0xC0, 0x85}).counts.truncated == 1);
    d = decode({0x00, 0x00, 0x00});
    CHECK(d.counts.truncated == 1);
    CHECK(d.packets.empty());
    CHECK(decode({0x70}).counts.truncated == 0);
    CHECK(decode({}).counts.total_packets() == 0);
}

TEST_CASE("itm parser: --sync waits for a synchronization packet")
{
    // Started two bytes into a PC sample: 02 00 08 | 17 .. | sync | 17 ..
    Bytes s = {0x02, 0x00, 0x08};
    append(s, pc_packet(0x08000100));
    append(s, sync_packet);
    append(s, pc_packet(0x08000200));

    // Without waiting, 02 (0b00000_0_10) reads as a 2-byte write to port 0 with 00 08 as
    // its data: a packet that never was.
    const Decoded blind = decode(s);
    REQUIRE(!blind.packets.empty());
    CHECK(blind.packets[0].kind == ItmKind::instrumentation);
    CHECK(blind.packets[0].value == 0x0800);

    const Decoded synced = decode(s, {.wait_for_sync = true});
    REQUIRE(synced.packets.size() == 2);
    CHECK(synced.packets[0].kind == ItmKind::sync);
    CHECK(synced.packets[0].offset == 8);
    CHECK(synced.packets[1].value == 0x08000200);
    CHECK(synced.counts.skipped_bytes == 8);
    for (size_t chunk = 1; chunk <= 7; ++chunk) {
        const Decoded d = decode(s, {.wait_for_sync = true}, chunk);
        REQUIRE(d.packets.size() == 2);
        CHECK(d.packets[0].offset == 8);
        CHECK(d.counts.skipped_bytes == 8);
    }

    // After a bad packet it waits for the next sync again; the bytes between are skipped.
    Bytes t = sync_packet;
    append(t, pc_packet(0x08000300));
    append(t, {0x04, 0x17, 0x11, 0x22});   // a reserved header, then garbage
    append(t, sync_packet);
    append(t, pc_packet(0x08000400));
    const Decoded r = decode(t, {.wait_for_sync = true});
    CHECK(r.counts[ItmKind::bad] == 1);
    CHECK(r.counts[ItmKind::pc_sample] == 2);
    CHECK(r.counts[ItmKind::sync] == 2);
    CHECK(r.counts.skipped_bytes == 3);

    // No sync at all: everything is skipped, nothing decoded.
    const Decoded none = decode(pc_packet(0x08000500), {.wait_for_sync = true});
    CHECK(none.packets.empty());
    CHECK(none.counts.skipped_bytes == 5);
}

TEST_CASE("itm parser: garbage never crashes or hangs, and every byte is accounted for")
{
    std::mt19937 random(75);
    Bytes garbage(1 << 20);
    for (uint8_t& b : garbage)
        b = uint8_t(random());
    for (const bool wait : {false, true}) {
        for (const size_t chunk : {size_t(0), size_t(1), size_t(7), size_t(4096)}) {
            const Decoded d = decode(garbage, {.wait_for_sync = wait}, chunk);
            CHECK(d.counts.bytes == garbage.size());
            CHECK(d.counts.total_packets() == d.packets.size());
            if (!wait) {
                // Random bytes have no zero run of 255: payload sizes are exact.
                uint64_t covered = 0;
                for (const ItmPacket& p : d.packets)
                    covered += 1 + p.payload_size;
                CHECK(covered + d.counts.truncated * 7 >= garbage.size());
                CHECK(covered <= garbage.size());
                CHECK(d.counts[ItmKind::bad] > 0);
            } else {
                CHECK(d.counts.skipped_bytes > garbage.size() / 2);   // syncs are rare in noise
            }
        }
    }
    // A long run of zeros ended by 0x80 is one sync packet, however long.
    Bytes zeros(1 << 16, 0x00);
    zeros.push_back(0x80);
    const Decoded z = decode(zeros, {}, 1000);
    REQUIRE(z.packets.size() == 1);
    CHECK(z.packets[0].kind == ItmKind::sync);
    CHECK(z.packets[0].payload_size == 255);
}

TEST_CASE("itm parser: the seed's check, 10 000 PCs mixed with every other kind, all back in order")
{
    // Built here (not with the seed's script): PC samples with, between them, stimulus
    // writes, sleep samples, timestamps of every form, exception trace, counters, data
    // trace, page extensions, overflows and periodic syncs.
    std::mt19937 random(7511);
    std::vector<uint32_t> pcs;
    ItmCounts expected;
    auto add = [&](Bytes& s, const Bytes& p, ItmKind kind) {
        append(s, p);
        ++expected.packets[size_t(kind)];
    };
    Bytes s;
    add(s, sync_packet, ItmKind::sync);
    for (uint32_t k = 0; k < 10000; ++k) {
        const uint32_t pc = 0x08000000 + 2 * (random() % 4096);
        pcs.push_back(pc);
        add(s, pc_packet(pc), ItmKind::pc_sample);
        if (k % 7 == 3)
            add(s, {0x01, uint8_t('A' + k % 26)}, ItmKind::instrumentation);
        if (k % 50 == 10)
            add(s, {0x0B, uint8_t(k), uint8_t(k >> 8), 0, 0}, ItmKind::instrumentation);
        if (k % 64 == 20)
            add(s, {0x15, 0x00}, ItmKind::sleep_sample);
        if (k % 100 == 30)
            add(s, {0xC0, 0x85, 0x12}, ItmKind::local_timestamp);
        if (k % 100 == 31)
            add(s, {0x20}, ItmKind::local_timestamp);
        if (k % 100 == 60) {
            add(s, {0x0E, 0x0F, 0x10}, ItmKind::exception_trace);
            add(s, {0x0E, 0x0F, 0x20}, ItmKind::exception_trace);
        }
        if (k % 500 == 250)
            add(s, {0x05, 0x20}, ItmKind::event_counter);
        if (k % 500 == 251) {
            add(s, {0x57, 0x10, 0x03, 0x00, 0x08}, ItmKind::data_trace_pc);
            add(s, {0x5E, 0x00, 0x10}, ItmKind::data_trace_address);
            add(s, {0x9E, 0x2A, 0x00}, ItmKind::data_trace_value);
        }
        if (k % 1000 == 400) {
            add(s, {0x94, 0x81, 0x82, 0x83, 0x05}, ItmKind::global_timestamp_1);
            add(s, {0xB4, 0x81, 0x80, 0x80, 0x00}, ItmKind::global_timestamp_2);
            add(s, {0x18}, ItmKind::extension);
            add(s, {0x01, 0x21}, ItmKind::instrumentation);
            add(s, {0x08}, ItmKind::extension);
        }
        if (k % 1000 == 500)
            add(s, {0x70}, ItmKind::overflow);
        if (k % 1000 == 999)
            add(s, sync_packet, ItmKind::sync);
    }
    add(s, {0x30}, ItmKind::local_timestamp);

    struct PcSink : ItmPacketSink {
        std::vector<uint32_t> pcs;
        void receive(std::span<const ItmPacket> batch) override
        {
            for (const ItmPacket& p : batch)
                if (p.kind == ItmKind::pc_sample)
                    pcs.push_back(uint32_t(p.value));
        }
    };
    for (const size_t chunk : {s.size(), size_t(1), size_t(3), size_t(1000)}) {
        ItmParser parser;
        PcSink sink;
        for (size_t at = 0; at < s.size(); at += chunk)
            parser.feed(std::span(s.data() + at, std::min(chunk, s.size() - at)), sink);
        parser.finish(sink);
        CHECK(sink.pcs == pcs);
        CHECK(parser.counts().packets == expected.packets);
        CHECK(parser.counts().bytes == s.size());
    }
    CHECK(expected[ItmKind::sleep_sample] == 156);
    CHECK(expected[ItmKind::sync] == 11);

    // Cut at byte 5005, mid-packet: waiting for the sync packet gives a tail of the PCs
    // and nothing false; without waiting the first packets may be false.
    const Bytes cut(s.begin() + 5005, s.end());
    ItmParser synced({.wait_for_sync = true});
    PcSink tail;
    synced.feed(std::span(cut.data(), cut.size()), tail);
    synced.finish(tail);
    REQUIRE(!tail.pcs.empty());
    CHECK(tail.pcs.size() < pcs.size());
    CHECK(std::equal(tail.pcs.begin(), tail.pcs.end(), pcs.end() - std::ptrdiff_t(tail.pcs.size())));
    CHECK(synced.counts()[ItmKind::bad] == 0);
    CHECK(synced.counts()[ItmKind::sync] == 10);
}

TEST_CASE("itm parser: PCs as plain values, in order, whatever the chunks")
{
    struct ValueSink : ItmPacketSink {
        std::vector<uint32_t> pcs;
        std::vector<ItmPacket> others;
        bool wants_pc_values() const override { return true; }
        void receive_pcs(std::span<const uint32_t> batch) override { pcs.insert(pcs.end(), batch.begin(), batch.end()); }
        void receive(std::span<const ItmPacket> batch) override { others.insert(others.end(), batch.begin(), batch.end()); }
    };
    std::mt19937 random(12);
    std::vector<uint32_t> pcs;
    Bytes s = sync_packet;
    for (int k = 0; k < 20000; ++k) {   // long runs of PCs (more than a batch) and lone ones
        const uint32_t pc = 0x08000000 + 2 * (random() % 50000);
        pcs.push_back(pc);
        append(s, pc_packet(pc));
        if (random() % 3000 == 0 || (k > 9000 && random() % 4 == 0))
            append(s, {0x15, 0x00});
    }
    const Decoded reference = decode(s);
    for (const size_t chunk : {size_t(1), size_t(3), size_t(5), size_t(7), size_t(1000), s.size()}) {
        ItmParser parser;
        ValueSink sink;
        for (size_t at = 0; at < s.size(); at += chunk)
            parser.feed(std::span(s.data() + at, std::min(chunk, s.size() - at)), sink);
        parser.finish(sink);
        CHECK_MESSAGE(sink.pcs == pcs, "chunk ", chunk);
        CHECK(parser.counts().packets == reference.counts.packets);
        bool no_pc_packets = true;
        for (const ItmPacket& p : sink.others)
            no_pc_packets = no_pc_packets && p.kind != ItmKind::pc_sample;
        CHECK(no_pc_packets);
        CHECK(sink.others.size() == reference.packets.size() - pcs.size());
    }
}
