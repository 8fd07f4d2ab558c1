#pragma once
// Streaming decoder of the ITM/DWT packet protocol that a Cortex-M sends over SWO
// (ARMv7-M Architecture Reference Manual, Appendix D4 "Debug ITM and DWT Packet Protocol").
// Pure: bytes in, packets out, no I/O. Memory is constant whatever the stream's length:
// a packet cut by a chunk boundary waits in a buffer of a few bytes for the next chunk.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace mcuprof::sources {

// Every kind of packet the protocol defines, and `bad` for bytes that are none of them.
enum class ItmKind : uint8_t {
    sync,                 // >= 47 zero bits then a one: 00 00 00 00 00 80 (D4.2.1)
    overflow,             // 0x70: the ITM or DWT dropped packets, its FIFO was full (D4.2.3)
    local_timestamp,      // format 2 (one byte, 0x10..0x60) or format 1 (0xC0..0xF0 + 1..4 bytes) (D4.2.4)
    global_timestamp_1,   // 0x94 + up to 4 bytes: TS[25:0], Wrap, ClkCh (D4.2.5)
    global_timestamp_2,   // 0xB4 + 4 or 6 bytes: TS[47:26] or TS[63:26] (D4.2.5)
    extension,            // stimulus port page (SH 0) or other extension information (D4.2.6)
    instrumentation,      // software source: a write to an ITM stimulus port, 1, 2 or 4 bytes (D4.2.8)
    event_counter,        // hardware source 0: DWT counters that wrapped (D4.3.1)
    exception_trace,      // hardware source 1: exception entered, exited, returned to (D4.3.2)
    pc_sample,            // hardware source 2, 4 bytes: periodic PC sample (D4.3.3)
    sleep_sample,         // hardware source 2, 1 byte 0x00: periodic sample taken while asleep (D4.3.3)
    data_trace_pc,        // hardware sources 8..23: comparator matched, PC value (D4.3.4)
    data_trace_address,   // comparator matched, data address bits [15:0]
    data_trace_value,     // comparator matched, data value read or written
    bad,                  // a reserved header or a malformed packet; see ItmBadReason
};
inline constexpr size_t itm_kind_count = size_t(ItmKind::bad) + 1;

// Short names used in reports and packet listings: "sync", "pc", "sleep", "itm", ...
std::string_view name_of(ItmKind kind);

enum class ItmBadReason : uint8_t {
    none,
    reserved_header,         // a header byte the protocol does not define (e.g. 0x04, 0x80)
    short_sync,              // zero bytes not ended by 0x80 after at least five of them
    reserved_source,         // hardware discriminator 3..7 or 24..31
    wrong_size,              // a hardware packet with a payload size its kind never has
    exception_function,      // exception trace with function 0 (reserved)
    too_long,                // continuation bit still set on a packet's last possible byte
};
std::string_view name_of(ItmBadReason reason);

// One decoded packet. The meaning of `value`, `channel` and `flags` depends on the kind:
//   instrumentation     value: the bytes written (little-endian); channel: stimulus port,
//                       page * 32 + port bits of the header
//   event_counter       value: the wrapped counters, bit 0 CPI, 1 EXC, 2 SLEEP, 3 LSU, 4 FOLD, 5 POSTCNT
//   exception_trace     value: exception number (0..511); flags: 1 entered, 2 exited, 3 returned to
//   pc_sample           value: the PC
//   data_trace_*        value: PC, address bits [15:0] or data; channel: comparator;
//                       flags (data value): 1 write, 0 read
//   local_timestamp     value: cycles since the previous one; flags: TC (0 format 2)
//   global_timestamp_1  value: TS bits carried (the low 7 x bytes, at most 26); flags: bit 0 ClkCh, bit 1 Wrap
//   global_timestamp_2  value: TS bits from bit 26 up
//   extension           value: EX; flags: SH
//   bad                 flags: an ItmBadReason
struct ItmPacket {
    ItmKind kind = ItmKind::bad;
    uint8_t header = 0;          // the packet's first byte
    uint8_t payload_size = 0;    // bytes after the header
    uint8_t flags = 0;
    uint32_t channel = 0;
    uint64_t value = 0;
    uint64_t offset = 0;         // position of the header byte in the stream
};

inline constexpr uint8_t exception_entered = 1;
inline constexpr uint8_t exception_exited = 2;
inline constexpr uint8_t exception_returned = 3;
inline constexpr uint8_t global_timestamp_clock_change = 1;
inline constexpr uint8_t global_timestamp_wrap = 2;

struct ItmCounts {
    std::array<uint64_t, itm_kind_count> packets{};   // by ItmKind
    uint64_t bytes = 0;           // bytes fed to the parser
    uint64_t skipped_bytes = 0;   // bytes dropped while waiting for a synchronization packet
    uint64_t truncated = 0;       // packets cut off by the end of the stream (0 or 1)

    uint64_t operator[](ItmKind kind) const { return packets[size_t(kind)]; }
    uint64_t total_packets() const;
};

// "pc=10000 sleep=156 itm=1629 ..." for every kind, in ItmKind order.
std::string summary(const ItmCounts& counts);

// Receives decoded packets in stream order, in batches (one call per batch is cheaper
// than one per packet: a 2 MHz SWO line carries 40 000 packets a second, a file 100 times more).
class ItmPacketSink {
public:
    virtual ~ItmPacketSink() = default;
    virtual void receive(std::span<const ItmPacket> packets) = 0;
    // A sink that wants of the PC samples only their PCs may take them as plain values, in
    // stream order, through receive_pcs: 4 bytes a sample instead of a packet record, which
    // is most of the work on a profiling capture. The PC samples then do not come to
    // receive(), and the order between the two calls' contents is not kept.
    virtual bool wants_pc_values() const { return false; }
    virtual void receive_pcs(std::span<const uint32_t> pcs) {}
};

struct ItmParserOptions {
    // Decode nothing until the first synchronization packet, and after a bad packet wait
    // for the next one: for a capture that may start in the middle of a packet, where the
    // first bytes would otherwise be read as false packets.
    bool wait_for_sync = false;
};

class ItmParser {
public:
    explicit ItmParser(ItmParserOptions options = {});

    // Decodes the next bytes of the stream; a packet may straddle calls. Every packet
    // completed by these bytes reaches the sink before feed returns.
    void feed(std::span<const uint8_t> bytes, ItmPacketSink& sink);
    void feed(std::string_view bytes, ItmPacketSink& sink)
    {
        feed(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), sink);
    }
    // The stream has ended: a packet still incomplete is counted as truncated.
    void finish(ItmPacketSink& sink);

    const ItmCounts& counts() const { return counts_; }
    // True once a synchronization packet was seen (or at once without wait_for_sync),
    // false again while waiting for one after a bad packet.
    bool synchronized() const { return state_ != State::waiting_for_sync; }

private:
    enum class State : uint8_t { decoding, zero_run, waiting_for_sync };
    static constexpr size_t max_packet_size = 7;   // GTS2 with a 64-bit timestamp
    static constexpr size_t batch_size = 1024;

    size_t decode_at(const uint8_t* bytes, size_t available, uint64_t offset, ItmPacket& packet);
    size_t decode_continued(const uint8_t* bytes, size_t available, uint64_t offset, ItmPacket& packet);
    ItmPacket decode_source(uint8_t header, size_t size, uint32_t value) const;
    void emit(const ItmPacket& packet, ItmPacketSink& sink);
    void flush(ItmPacketSink& sink);
    void flush_pcs(ItmPacketSink& sink);
    void lose_sync(uint64_t next_offset);
    uint64_t offset_of(const uint8_t* at) const { return chunk_offset_ + uint64_t(at - chunk_begin_); }
    // Each takes bytes from `at` until the input ends or the state changes.
    const uint8_t* decode_run(const uint8_t* at, const uint8_t* end, ItmPacketSink& sink);
    const uint8_t* wait_for_sync(const uint8_t* at, const uint8_t* end, ItmPacketSink& sink);
    const uint8_t* continue_zero_run(const uint8_t* at, const uint8_t* end, ItmPacketSink& sink);
    const uint8_t* continue_pending(const uint8_t* at, const uint8_t* end, ItmPacketSink& sink);

    ItmParserOptions options_;
    State state_ = State::decoding;
    ItmCounts counts_;
    uint32_t stimulus_page_ = 0;      // set by extension packets with SH 0, reset by sync
    uint64_t zero_run_ = 0;           // zero bytes seen in a row (a sync packet in progress)
    uint64_t zero_run_offset_ = 0;
    uint64_t waiting_since_ = 0;      // offset where waiting for a sync packet began
    std::array<uint8_t, max_packet_size> pending_{};   // a packet cut by the end of a chunk
    size_t pending_size_ = 0;
    uint64_t pending_offset_ = 0;
    const uint8_t* chunk_begin_ = nullptr;   // the chunk being fed, and its offset in the stream
    uint64_t chunk_offset_ = 0;
    std::array<ItmPacket, batch_size> batch_{};
    size_t batch_used_ = 0;
    bool pc_values_ = false;                      // the sink of this feed takes PCs as values
    std::array<uint32_t, 4 * batch_size> pcs_{};  // those PCs, not yet handed over
    size_t pcs_used_ = 0;
};

} // namespace mcuprof::sources
