#include "mcuprof/inputs/call_trace.h"

#include <cinttypes>
#include <cstdio>

#include "mcuprof/image/source_locator.h"
#include "mcuprof/printf_string.h"
#include "mcuprof/image/symbols.h"

namespace mcuprof::sources {
namespace {

// calltrace.c's record header: bits 31:28 say entry (4) or exit (5), bits 25:0 hold CYCCNT.
constexpr uint32_t entry_tag = 0x4;
constexpr uint32_t exit_tag = 0x5;
constexpr uint32_t stamp_mask = 0x03FFFFFF;
constexpr uint64_t stamp_period = uint64_t(stamp_mask) + 1;

// Address words never look like headers: 0x40000000-0x5FFFFFFF is the peripheral region
// (ARMv7-M ARM B3.1, "Execute Never"), so no function or call site lies there.
bool is_header(uint32_t word)
{
    const uint32_t tag = word >> 28;
    return tag == entry_tag || tag == exit_tag;
}

// An exception entry leaves an EXC_RETURN value in LR (ARMv7-M ARM B1.5.8, 0xFFFFFFE1..
// 0xFFFFFFFD), which the hook passes as the call site: the handler was not called by the
// code it interrupted.
bool is_exception_return(uint32_t call_site)
{
    return call_site >= 0xFFFFFF00;
}

} // namespace

CallTraceDecoder::CallTraceDecoder()
{
    trace_.graph.event = "Cycles";
}

void CallTraceDecoder::word(uint32_t value)
{
    ++trace_.counts.words;
    if (is_header(value)) {
        if (pending_words_ != 0)
            ++trace_.counts.broken_records;
        pending_[0] = value;
        pending_words_ = 1;
        return;
    }
    if (pending_words_ == 0) {
        ++trace_.counts.stray_words;
        return;
    }
    pending_[pending_words_++] = value;
    if (pending_words_ == 3) {
        pending_words_ = 0;
        record(pending_[0] >> 28 == entry_tag, pending_[0] & stamp_mask, pending_[1], pending_[2]);
    }
}

void CallTraceDecoder::record(bool entry, uint32_t stamp, uint32_t call_site, uint32_t function)
{
    // The stamps are CYCCNT modulo 2^26: the time between two records is their difference
    // modulo 2^26, right as long as records come less than 2^26 cycles apart (0.4 s at
    // 168 MHz). A stamp below the previous one is the counter going round.
    if (timing_) {
        trace_.counts.wraps += stamp < last_stamp_;
        now_ += (uint64_t(stamp) + stamp_period - last_stamp_) % stamp_period;
    }
    timing_ = true;
    last_stamp_ = stamp;
    if (entry)
        enter(call_site, function);
    else
        exit(function);
}

size_t CallTraceDecoder::function_index(uint32_t address)
{
    auto [it, added] = functions_.try_emplace(address, trace_.graph.functions.size());
    if (added) {
        core::CallGraphFunction f;
        f.address = address;
        f.calls = 0;
        trace_.graph.functions.push_back(f);
        active_.push_back(0);
    }
    return it->second;
}

void CallTraceDecoder::enter(uint32_t call_site, uint32_t function)
{
    ++trace_.counts.entries;
    const size_t callee = function_index(function);
    ++*trace_.graph.functions[callee].calls;
    ++active_[callee];
    Frame frame{callee, std::nullopt, now_, exception_time_, 0, is_exception_return(call_site)};
    trace_.counts.exception_entries += frame.exception;
    if (!stack_.empty() && !frame.exception) {
        auto [it, added] = edges_.try_emplace({stack_.back().function, callee}, trace_.graph.edges.size());
        if (added) {
            core::CallGraphEdge e;
            e.caller = stack_.back().function;
            e.callee = callee;
            e.calls = 0;
            trace_.graph.edges.push_back(e);
            trace_.call_sites.push_back(call_site);
        }
        ++*trace_.graph.edges[it->second].calls;
        frame.edge = it->second;
    }
    stack_.push_back(frame);
}

void CallTraceDecoder::exit(uint32_t function)
{
    ++trace_.counts.exits;
    const auto known = functions_.find(function);
    if (known == functions_.end() || active_[known->second] == 0) {
        ++trace_.counts.unmatched_exits;
        return;
    }
    // The function is on the stack; activations above it lost their exit records.
    while (stack_.back().function != known->second) {
        ++trace_.counts.missed_exits;
        close_top();
    }
    close_top();
}

void CallTraceDecoder::close_top()
{
    const Frame frame = stack_.back();
    stack_.pop_back();
    // Time in exception handlers taken while this activation ran is the handlers' own, not
    // this function's: it is left out of its inclusive time (and so of its callers').
    const uint64_t inclusive = (now_ - frame.entered) - (exception_time_ - frame.exception_time);
    core::CallGraphFunction& f = trace_.graph.functions[frame.function];
    f.self_cost += double(inclusive - frame.callees);
    // A recursive function's inclusive time is that of its outermost activation, which
    // holds the inner ones.
    if (--active_[frame.function] == 0)
        f.inclusive_cost += double(inclusive);
    if (frame.edge)
        trace_.graph.edges[*frame.edge].inclusive_cost += double(inclusive);
    if (frame.exception)
        exception_time_ += inclusive;
    else if (!stack_.empty())
        stack_.back().callees += inclusive;
}

CallTrace CallTraceDecoder::finish()
{
    trace_.counts.broken_records += pending_words_ != 0;
    pending_words_ = 0;
    trace_.counts.open_at_end += stack_.size();
    while (!stack_.empty())
        close_top();

    const CallTraceCounts& c = trace_.counts;
    if (c.entries == 0)
        trace_.notes.push_back(
            "no call records: is the firmware built with -finstrument-functions, its hooks writing to this "
            "stimulus port (--channel), and the port enabled (ITM_TER)?");
    if (c.stray_words + c.broken_records > 0)
        trace_.notes.push_back(printf_string("%" PRIu64 " stray words and %" PRIu64
                                             " broken records: writes were lost (overflow?) or another writer "
                                             "shares the stimulus port",
                                             c.stray_words, c.broken_records));
    if (c.unmatched_exits > 0)
        trace_.notes.push_back(printf_string("%" PRIu64 " exits of functions not entered in the capture were left "
                                             "out (the capture began inside them, or their entry was lost)",
                                             c.unmatched_exits));
    if (c.missed_exits > 0)
        trace_.notes.push_back(printf_string("%" PRIu64 " activations lost their exit record and were closed when a "
                                             "caller exited",
                                             c.missed_exits));
    if (c.open_at_end > 0)
        trace_.notes.push_back(printf_string("%" PRIu64 " activations were still open at the end (main, a loop "
                                             "that never returns); they were closed at the last record",
                                             c.open_at_end));
    if (c.other_writes > 0)
        trace_.notes.push_back(printf_string("%" PRIu64 " 1- or 2-byte writes on the trace's port were ignored",
                                             c.other_writes));
    return std::move(trace_);
}

void name_call_trace(CallTrace& trace, const core::SymbolTable& symbols, core::SourceLocator* locator)
{
    for (core::CallGraphFunction& f : trace.graph.functions) {
        const core::Function* symbol = symbols.find(f.address);
        f.name = symbol != nullptr && symbol->start == f.address ? symbol->name
                 : symbol != nullptr ? printf_string("%s+0x%x", symbol->name.c_str(), unsigned(f.address - symbol->start))
                                     : printf_string("0x%08x", unsigned(f.address));
        if (locator != nullptr) {
            // The function the code physically belongs to is the last frame of the chain.
            const std::vector<core::SourceFrame>& frames = locator->frames(f.address);
            if (!frames.empty()) {
                f.file = frames.back().file;
                f.line = frames.back().line;
            }
        }
    }
    if (locator == nullptr)
        return;
    for (size_t i = 0; i < trace.graph.edges.size(); ++i) {
        // The call site is the return address; the call instruction (BL, BLX: 2 or 4 bytes)
        // ends there, so the address 2 bytes before lies in it.
        const uint32_t site = trace.call_sites[i];
        const std::vector<core::SourceFrame>& frames = locator->frames(site - 2);
        if (!frames.empty()) {
            trace.graph.edges[i].file = frames.front().file;
            trace.graph.edges[i].line = frames.front().line;
        }
    }
}

namespace {

// Takes the 4-byte writes of one stimulus port to the decoder.
class ChannelSink : public ItmPacketSink {
public:
    ChannelSink(CallTraceDecoder& decoder, uint32_t channel) : decoder_(decoder), channel_(channel) {}
    void receive(std::span<const ItmPacket> packets) override
    {
        for (const ItmPacket& p : packets) {
            if (p.kind != ItmKind::instrumentation || p.channel != channel_)
                continue;
            if (p.payload_size == 4)
                decoder_.word(uint32_t(p.value));
            else
                decoder_.other_write();
        }
    }

private:
    CallTraceDecoder& decoder_;
    uint32_t channel_;
};

} // namespace

CallTrace read_call_trace(ByteSource& source, const SwoOptions& options, uint32_t channel)
{
    CallTraceDecoder decoder;
    ChannelSink sink(decoder, channel);
    const SwoOutcome outcome = feed_swo(source, options, sink);
    CallTrace trace = decoder.finish();
    const CallTraceCounts& c = trace.counts;
    trace.graph.origin = printf_string("SWO capture %s, %" PRIu64 " bytes, call records on stimulus port %u: %" PRIu64
                                       " entries, %" PRIu64 " exits, %" PRIu64 " counter wraps; packets: ",
                                       source.name().c_str(), outcome.counts.bytes, unsigned(channel), c.entries, c.exits,
                                       c.wraps) +
                         summary(outcome.counts);
    std::vector<std::string> notes = swo_notes(outcome, options);
    notes.insert(notes.end(), trace.notes.begin(), trace.notes.end());
    trace.notes = std::move(notes);
    return trace;
}

} // namespace mcuprof::sources
