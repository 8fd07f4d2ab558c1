#include "mcuprof/inputs/itm_parser.h"

#include <algorithm>
#include <bit>
#include <cstring>

// Layouts are those of the ARMv7-M Architecture Reference Manual, Appendix D4; the
// section of each packet kind is given in itm_parser.h.
namespace mcuprof::sources {
namespace {

// What a header byte starts, decided once per byte value.
enum class Header : uint8_t {
    sync,                // 0x00
    overflow,            // 0x70
    local_ts_short,      // 0b0TTT0000, TTT 1..6: format 2, the timestamp is TTT
    local_ts_long,       // 0b11TC0000: format 1, 1..4 continuation bytes follow
    global_ts_1,         // 0x94
    global_ts_2,         // 0xB4
    extension,           // 0bCEEE1S00
    software_source,     // 0bAAAAA0SS, SS != 0
    hardware_source,     // 0bAAAAA1SS, SS != 0
    reserved,
};

constexpr std::array<Header, 256> header_table = [] {
    std::array<Header, 256> table{};
    for (int h = 0; h < 256; ++h) {
        Header kind = Header::reserved;
        if (h == 0x00)
            kind = Header::sync;
        else if (h == 0x70)
            kind = Header::overflow;
        else if ((h & 0x03) != 0)
            kind = (h & 0x04) != 0 ? Header::hardware_source : Header::software_source;
        else if ((h & 0x0F) == 0x00)
            kind = (h & 0x80) == 0 ? Header::local_ts_short
                 : (h & 0xC0) == 0xC0 ? Header::local_ts_long
                                      : Header::reserved;   // 0x80, 0x90, 0xA0, 0xB0
        else if ((h & 0x08) != 0)
            kind = Header::extension;
        else if (h == 0x94)
            kind = Header::global_ts_1;
        else if (h == 0xB4)
            kind = Header::global_ts_2;
        table[size_t(h)] = kind;
    }
    return table;
}();

constexpr uint8_t continuation = 0x80;   // bit 7 of a payload byte: another byte follows
constexpr uint8_t pc_sample_header = 0x17;   // hardware source 2, 4-byte payload
constexpr uint64_t min_sync_zero_bytes = 5;  // 47 zero bits need five whole zero bytes before 0x80

uint32_t little_endian(const uint8_t* bytes, size_t size)
{
    switch (size) {
    case 1: return bytes[0];
    case 2: return uint32_t(bytes[0]) | uint32_t(bytes[1]) << 8;
    default: {
        uint32_t value;   // one load on a little-endian host
        std::memcpy(&value, bytes, 4);
        if constexpr (std::endian::native == std::endian::big)
            value = __builtin_bswap32(value);
        return value;
    }
    }
}

ItmPacket make_bad(uint8_t header, ItmBadReason reason, uint8_t payload_size)
{
    ItmPacket packet;
    packet.kind = ItmKind::bad;
    packet.header = header;
    packet.flags = uint8_t(reason);
    packet.payload_size = payload_size;
    return packet;
}

// The packet of a header with continued payload (decode_continued), from its payload read:
// `value` the payload's bits in order, `flags` those the last byte of a GTS1 carries.
ItmPacket continued_packet(Header kind, uint8_t header, size_t payload, uint64_t value, uint8_t flags)
{
    ItmPacket packet;
    packet.header = header;
    packet.payload_size = uint8_t(payload);
    packet.value = value;
    packet.flags = flags;
    if (kind == Header::local_ts_long) {
        packet.kind = ItmKind::local_timestamp;
        packet.flags = (header >> 4) & 0x3;   // TC: how the timestamp relates to its packets
    } else if (kind == Header::global_ts_1) {
        packet.kind = ItmKind::global_timestamp_1;
    } else if (kind == Header::global_ts_2) {
        packet.kind = ItmKind::global_timestamp_2;
        if (payload != 4 && payload != 6)   // TS[47:26] or TS[63:26], nothing else
            packet = make_bad(header, ItmBadReason::wrong_size, uint8_t(payload));
    } else {
        packet.kind = ItmKind::extension;
        packet.value = ((header >> 4) & 0x7) | (value << 3);   // EX[2:0] in the header
        packet.flags = (header >> 2) & 1;                      // SH
    }
    return packet;
}

// A hardware source packet (D4.3): the discriminator in bits 7:3 says what it carries,
// and each kind has fixed payload sizes.
ItmPacket decode_hardware(uint8_t header, size_t size, uint32_t value)
{
    const uint32_t discriminator = header >> 3;
    ItmPacket packet;
    packet.header = header;
    packet.payload_size = uint8_t(size);
    packet.value = value;
    switch (discriminator) {
    case 0:   // event counter wrap, one byte of flags
        if (size != 1)
            return make_bad(header, ItmBadReason::wrong_size, uint8_t(size));
        packet.kind = ItmKind::event_counter;
        return packet;
    case 1: {   // exception trace: ExceptionNumber[8:0], FN in bits [13:12]
        if (size != 2)
            return make_bad(header, ItmBadReason::wrong_size, uint8_t(size));
        const uint8_t function = uint8_t((value >> 12) & 0x3);
        if (function == 0)
            return make_bad(header, ItmBadReason::exception_function, uint8_t(size));
        packet.kind = ItmKind::exception_trace;
        packet.value = value & 0x1FF;
        packet.flags = function;
        return packet;
    }
    case 2:   // periodic PC sample: the PC, or one zero byte if the core was asleep
        if (size == 4) {
            packet.kind = ItmKind::pc_sample;
            return packet;
        }
        if (size == 1 && value == 0) {
            packet.kind = ItmKind::sleep_sample;
            return packet;
        }
        return make_bad(header, ItmBadReason::wrong_size, uint8_t(size));
    default:
        break;
    }
    if (discriminator < 8 || discriminator > 23)
        return make_bad(header, ItmBadReason::reserved_source, uint8_t(size));
    // Data trace, discriminator 0b01CCx or 0b10CCx: CC the comparator (D4.3.4).
    packet.channel = (discriminator >> 1) & 0x3;
    const bool low_bit = (discriminator & 1) != 0;
    if ((discriminator >> 3) == 0b10) {   // data value; the low bit is WnR
        packet.kind = ItmKind::data_trace_value;
        packet.flags = low_bit ? 1 : 0;
        return packet;
    }
    if (!low_bit) {   // PC value of the access that matched
        if (size != 4)
            return make_bad(header, ItmBadReason::wrong_size, uint8_t(size));
        packet.kind = ItmKind::data_trace_pc;
        return packet;
    }
    if (size != 2)   // address offset: bits [15:0] of the data address
        return make_bad(header, ItmBadReason::wrong_size, uint8_t(size));
    packet.kind = ItmKind::data_trace_address;
    return packet;
}

} // namespace

std::string_view name_of(ItmKind kind)
{
    switch (kind) {
    case ItmKind::sync: return "sync";
    case ItmKind::overflow: return "overflow";
    case ItmKind::local_timestamp: return "local-ts";
    case ItmKind::global_timestamp_1: return "global-ts1";
    case ItmKind::global_timestamp_2: return "global-ts2";
    case ItmKind::extension: return "extension";
    case ItmKind::instrumentation: return "itm";
    case ItmKind::event_counter: return "event-counter";
    case ItmKind::exception_trace: return "exception";
    case ItmKind::pc_sample: return "pc";
    case ItmKind::sleep_sample: return "sleep";
    case ItmKind::data_trace_pc: return "data-pc";
    case ItmKind::data_trace_address: return "data-address";
    case ItmKind::data_trace_value: return "data-value";
    case ItmKind::bad: return "bad";
    }
    return "?";
}

std::string_view name_of(ItmBadReason reason)
{
    switch (reason) {
    case ItmBadReason::none: return "none";
    case ItmBadReason::reserved_header: return "reserved header";
    case ItmBadReason::short_sync: return "zero bytes that are no synchronization packet";
    case ItmBadReason::reserved_source: return "reserved hardware source";
    case ItmBadReason::wrong_size: return "payload size its kind never has";
    case ItmBadReason::exception_function: return "exception trace with reserved function 0";
    case ItmBadReason::too_long: return "continuation past the packet's last byte";
    }
    return "?";
}

uint64_t ItmCounts::total_packets() const
{
    uint64_t total = 0;
    for (uint64_t n : packets)
        total += n;
    return total;
}

std::string summary(const ItmCounts& counts)
{
    std::string text;
    for (size_t k = 0; k < itm_kind_count; ++k) {
        if (!text.empty())
            text += ' ';
        text += name_of(ItmKind(k));
        text += '=';
        text += std::to_string(counts.packets[k]);
    }
    return text;
}

ItmParser::ItmParser(ItmParserOptions options) : options_(options)
{
    if (options_.wait_for_sync)
        state_ = State::waiting_for_sync;
}

void ItmParser::emit(const ItmPacket& packet, ItmPacketSink& sink)
{
    ++counts_.packets[size_t(packet.kind)];
    if (pc_values_ && packet.kind == ItmKind::pc_sample) {
        pcs_[pcs_used_++] = uint32_t(packet.value);
        if (pcs_used_ == pcs_.size())
            flush_pcs(sink);
        return;
    }
    batch_[batch_used_++] = packet;
    if (batch_used_ == batch_.size())
        flush(sink);
}

void ItmParser::flush_pcs(ItmPacketSink& sink)
{
    if (pcs_used_ == 0)
        return;
    sink.receive_pcs(std::span<const uint32_t>(pcs_.data(), pcs_used_));
    pcs_used_ = 0;
}

void ItmParser::flush(ItmPacketSink& sink)
{
    flush_pcs(sink);
    if (batch_used_ == 0)
        return;
    sink.receive(std::span<const ItmPacket>(batch_.data(), batch_used_));
    batch_used_ = 0;
}

void ItmParser::lose_sync(uint64_t next_offset)
{
    state_ = State::waiting_for_sync;
    zero_run_ = 0;
    waiting_since_ = next_offset;
}

ItmPacket ItmParser::decode_source(uint8_t header, size_t size, uint32_t value) const
{
    if ((header & 0x04) != 0)
        return decode_hardware(header, size, value);
    ItmPacket packet;
    packet.kind = ItmKind::instrumentation;
    packet.header = header;
    packet.payload_size = uint8_t(size);
    packet.value = value;
    packet.channel = stimulus_page_ * 32 + (header >> 3);
    return packet;
}

// A packet whose payload continues while bit 7 of a byte is set (local and global
// timestamps, extensions). Returns the bytes it took, or 0 if `available` ends first.
size_t ItmParser::decode_continued(const uint8_t* bytes, size_t available, uint64_t offset, ItmPacket& packet)
{
    // Payload bytes of 7 bits each, least significant first, while bit 7 is set.
    const uint8_t header = bytes[0];
    const Header kind = header_table[header];
    const bool has_payload = kind != Header::extension || (header & continuation) != 0;
    const size_t max_payload = kind == Header::global_ts_2 ? 6 : 4;
    uint64_t value = 0;
    size_t payload = 0;
    bool more = has_payload;
    uint8_t flags = 0;
    while (more) {
        if (payload == max_payload) {
            packet = make_bad(header, ItmBadReason::too_long, uint8_t(payload));
            packet.offset = offset;
            return 1 + payload;
        }
        if (1 + payload == available)
            return 0;
        const uint8_t byte = bytes[1 + payload];
        more = (byte & continuation) != 0;
        if (payload == 3 && kind == Header::extension) {
            value |= uint64_t(byte) << 21;   // EX[31:24]: the last byte has no continuation bit
            more = false;
        } else if (payload == 3 && kind == Header::global_ts_1 && !more) {
            value |= uint64_t(byte & 0x1F) << 21;   // TS[25:21], then ClkCh (bit 5) and Wrap (bit 6)
            flags = uint8_t(((byte >> 5) & 1) ? global_timestamp_clock_change : 0) |
                    uint8_t(((byte >> 6) & 1) ? global_timestamp_wrap : 0);
        } else {
            value |= uint64_t(byte & 0x7F) << (7 * payload);
        }
        ++payload;
    }
    packet = continued_packet(kind, header, payload, value, flags);
    if (kind == Header::extension && packet.flags == 0)
        stimulus_page_ = uint32_t(packet.value);   // the page of the stimulus ports that follow
    return 1 + payload;
}

// Decodes the packet at `bytes` (everything but a synchronization packet, which may be
// any length). Returns the bytes it took, or 0 if `available` ends before the packet does;
// given max_packet_size bytes it always decides.
size_t ItmParser::decode_at(const uint8_t* bytes, size_t available, uint64_t offset, ItmPacket& packet)
{
    const uint8_t header = bytes[0];
    size_t used = 1;
    switch (header_table[header]) {
    case Header::sync:   // handled by the caller; never reached
    case Header::reserved:
        packet = make_bad(header, ItmBadReason::reserved_header, 0);
        break;
    case Header::overflow:
        packet = ItmPacket{};
        packet.kind = ItmKind::overflow;
        packet.header = header;
        break;
    case Header::local_ts_short:
        packet = ItmPacket{};
        packet.kind = ItmKind::local_timestamp;
        packet.header = header;
        packet.value = (header >> 4) & 0x7;
        break;
    case Header::local_ts_long:
    case Header::global_ts_1:
    case Header::global_ts_2:
    case Header::extension:
        used = decode_continued(bytes, available, offset, packet);
        if (used == 0)
            return 0;
        break;
    case Header::software_source:
    case Header::hardware_source: {
        const size_t size = size_t(1) << ((header & 0x3) - 1);
        if (available < 1 + size)
            return 0;
        packet = decode_source(header, size, little_endian(bytes + 1, size));
        used = 1 + size;
        break;
    }
    }
    packet.offset = offset;
    return used;
}

// The decoding loop, kept one piece (88 lines) on purpose: it takes a chunk's packets until the
// chunk ends or the state changes (a zero run, a packet cut by the chunk's end, sync lost
// after a bad packet): runs of PC values to a sink that takes them, other PC samples decoded in
// place into the batch (nearly every byte of a profiling capture is one), other source packets
// whole in the chunk, the rest through decode_at. Its PC-value runs, its keeping of a cut
// packet and its emit-and-check moved into member functions measured 3-5% slower on
// bench/itm_bench.py's 100 MB capture (itm_parse_timer: about 0.062 s against 0.060 s, five
// alternated runs each), the locals below no longer held in registers across them.
const uint8_t* ItmParser::decode_run(const uint8_t* at, const uint8_t* end, ItmPacketSink& sink)
{
    // The batch position and the PC count live in locals through runs of PC samples: as
    // members they would be stored and reloaded around every packet written.
    size_t used = batch_used_;
    uint64_t pc_samples = 0;
    auto sync_locals = [&] {
        batch_used_ = used;
        counts_.packets[size_t(ItmKind::pc_sample)] += pc_samples;
        pc_samples = 0;
    };
    while (at < end) {
        if (pc_values_) {
            // Runs of PC samples, to a sink that takes their values: 4 bytes kept a sample.
            size_t n = pcs_used_;
            const size_t before = n;
            while (end - at >= 5 && *at == pc_sample_header && n < pcs_.size()) {
                pcs_[n++] = little_endian(at + 1, 4);
                at += 5;
            }
            counts_.packets[size_t(ItmKind::pc_sample)] += n - before;
            pcs_used_ = n;
            if (n == pcs_.size())
                flush_pcs(sink);
            if (at == end)
                break;
            if (end - at >= 5 && *at == pc_sample_header)
                continue;
        }
        const uint8_t header = *at;
        if (header == pc_sample_header && end - at >= 5) {
            // The packet nearly every byte of a profiling capture belongs to, decoded in place.
            ItmPacket& packet = batch_[used++];
            packet.kind = ItmKind::pc_sample;
            packet.header = header;
            packet.payload_size = 4;
            packet.flags = 0;
            packet.channel = 0;
            packet.value = little_endian(at + 1, 4);
            packet.offset = offset_of(at);
            ++pc_samples;
            at += 5;
            if (used == batch_.size()) {
                sync_locals();
                flush(sink);
                used = 0;
            }
            continue;
        }
        sync_locals();
        ItmPacket packet;
        if ((header & 0x03) != 0 && end - at >= 5) {
            // Any other source packet whole in this chunk (sleep samples, stimulus writes,
            // exception trace): its length is in the header.
            const size_t size = size_t(1) << ((header & 0x3) - 1);
            packet = decode_source(header, size, little_endian(at + 1, size));
            packet.offset = offset_of(at);
            at += 1 + size;
            emit(packet, sink);
            if (packet.kind == ItmKind::bad && options_.wait_for_sync) {
                lose_sync(offset_of(at));
                return at;
            }
            used = batch_used_;
            continue;
        }
        if (header == 0x00) {
            state_ = State::zero_run;
            zero_run_ = 0;
            zero_run_offset_ = offset_of(at);
            return at;
        }
        const size_t taken = decode_at(at, size_t(end - at), offset_of(at), packet);
        if (taken == 0) {   // the chunk ends inside this packet: keep its bytes for the next one
            pending_size_ = size_t(end - at);
            std::copy(at, end, pending_.begin());
            pending_offset_ = offset_of(at);
            return end;
        }
        at += taken;
        emit(packet, sink);
        if (packet.kind == ItmKind::bad && options_.wait_for_sync) {
            lose_sync(offset_of(at));
            return at;
        }
        used = batch_used_;
    }
    sync_locals();
    return at;
}

const uint8_t* ItmParser::continue_pending(const uint8_t* at, const uint8_t* end, ItmPacketSink& sink)
{
    while (at < end) {
        pending_[pending_size_++] = *at++;
        ItmPacket packet;
        if (decode_at(pending_.data(), pending_size_, pending_offset_, packet) == 0)
            continue;
        pending_size_ = 0;
        emit(packet, sink);
        if (packet.kind == ItmKind::bad && options_.wait_for_sync)
            lose_sync(offset_of(at));
        return at;
    }
    return at;
}

const uint8_t* ItmParser::continue_zero_run(const uint8_t* at, const uint8_t* end, ItmPacketSink& sink)
{
    const uint8_t* run_end = std::find_if(at, end, [](uint8_t b) { return b != 0; });
    zero_run_ += uint64_t(run_end - at);
    at = run_end;
    if (at == end)
        return at;
    ItmPacket packet;
    packet.offset = zero_run_offset_;
    packet.header = 0x00;
    packet.payload_size = uint8_t(std::min<uint64_t>(zero_run_, 255));
    state_ = State::decoding;
    if (*at == 0x80 && zero_run_ >= min_sync_zero_bytes) {
        packet.kind = ItmKind::sync;
        stimulus_page_ = 0;
        zero_run_ = 0;
        emit(packet, sink);
        return at + 1;
    }
    // Too few zeros, or not ended by 0x80: not a sync packet. A 0x80 is taken with the
    // zeros as one damaged sync; any other byte is read again as a header.
    const bool ends_with_0x80 = *at == 0x80;
    packet = make_bad(0x00, ItmBadReason::short_sync,
                      uint8_t(std::min<uint64_t>(zero_run_ - (ends_with_0x80 ? 0 : 1), 255)));
    packet.offset = zero_run_offset_;
    if (ends_with_0x80)
        ++at;
    zero_run_ = 0;
    emit(packet, sink);
    if (options_.wait_for_sync)
        lose_sync(offset_of(at));
    return at;
}

const uint8_t* ItmParser::wait_for_sync(const uint8_t* at, const uint8_t* end, ItmPacketSink& sink)
{
    while (at < end) {
        const uint8_t byte = *at++;
        if (byte == 0x00) {
            ++zero_run_;
            continue;
        }
        if (byte == 0x80 && zero_run_ >= min_sync_zero_bytes) {
            ItmPacket packet;
            packet.kind = ItmKind::sync;
            packet.offset = offset_of(at) - 1 - zero_run_;
            packet.payload_size = uint8_t(std::min<uint64_t>(zero_run_, 255));
            counts_.skipped_bytes += packet.offset - waiting_since_;
            stimulus_page_ = 0;
            zero_run_ = 0;
            state_ = State::decoding;
            emit(packet, sink);
            return at;
        }
        zero_run_ = 0;
    }
    return at;
}

void ItmParser::feed(std::span<const uint8_t> bytes, ItmPacketSink& sink)
{
    const uint8_t* at = bytes.data();
    const uint8_t* const end = at + bytes.size();
    chunk_begin_ = at;
    chunk_offset_ = counts_.bytes;
    pc_values_ = sink.wants_pc_values();
    counts_.bytes += bytes.size();
    while (at < end) {
        if (pending_size_ > 0) {
            at = continue_pending(at, end, sink);
            continue;
        }
        switch (state_) {
        case State::decoding: at = decode_run(at, end, sink); break;
        case State::zero_run: at = continue_zero_run(at, end, sink); break;
        case State::waiting_for_sync: at = wait_for_sync(at, end, sink); break;
        }
    }
    flush(sink);
}

void ItmParser::finish(ItmPacketSink& sink)
{
    if (pending_size_ > 0 || state_ == State::zero_run) {
        counts_.truncated = 1;
        pending_size_ = 0;
        zero_run_ = 0;
        state_ = State::decoding;
    }
    if (state_ == State::waiting_for_sync) {   // no sync packet came: all of it was skipped
        counts_.skipped_bytes += counts_.bytes - waiting_since_;
        waiting_since_ = counts_.bytes;
    }
    flush(sink);
}

} // namespace mcuprof::sources
