#include "mcuprof/sources/stack_sampling.h"

#include <map>

#include "mcuprof/transport/error.h"

namespace mcuprof::sources {
namespace {

// Windows of target memory fetched on demand, each fetched once per halt.
class WindowedMemory : public core::StackMemory {
public:
    WindowedMemory(transport::RspClient& gdb, uint32_t window, uint32_t reads_left, std::optional<uint32_t> top)
        : gdb_(gdb), window_(window), reads_left_(reads_left), top_(top)
    {
    }

    void fetch(uint32_t address)
    {
        if (reads_left_ == 0)
            return;
        uint32_t length = window_;
        if (top_ && address < *top_ && *top_ - address < length)
            length = *top_ - address;   // the main stack ends where memory does
        --reads_left_;
        ++reads_;
        std::string bytes;
        try {
            bytes = gdb_.read_memory(address, length);
        } catch (const transport::Error& e) {
            // An 'E' reply (memory the target does not have) ends this chain; a link that
            // failed ends the recording.
            if (e.kind() != transport::Error::Kind::protocol)
                throw;
            bytes.clear();
        }
        windows_[address] = std::move(bytes);
    }

    std::optional<uint32_t> read_word(uint32_t address) override
    {
        if (auto word = cached(address))
            return word;
        if (windows_.count(address & ~3u) != 0)
            return std::nullopt;   // fetched before and refused
        fetch(address & ~3u);
        return cached(address);
    }

    uint32_t reads() const { return reads_; }
    // Bytes read already (the speculative window sent with the registers).
    void add(uint32_t address, std::string bytes) { windows_[address] = std::move(bytes); }

private:
    std::optional<uint32_t> cached(uint32_t address) const
    {
        auto it = windows_.upper_bound(address);
        if (it == windows_.begin())
            return std::nullopt;
        --it;
        const uint64_t offset = uint64_t(address) - it->first;
        if (offset + 4 > it->second.size())
            return std::nullopt;
        const auto* p = reinterpret_cast<const uint8_t*>(it->second.data() + offset);
        return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
    }

    transport::RspClient& gdb_;
    uint32_t window_;
    uint32_t reads_left_;
    std::optional<uint32_t> top_;
    uint32_t reads_ = 0;
    std::map<uint32_t, std::string> windows_;
};

} // namespace

RspStackReader::RspStackReader(transport::RspClient& gdb, StackSamplingOptions options)
    : gdb_(gdb), options_(std::move(options))
{
    for (int i = 0; i <= 12; ++i)
        names_.push_back("r" + std::to_string(i));
    for (const char* name : {"sp", "lr", "pc", "xpsr"})
        names_.push_back(name);
    // The banked stack pointers, where the server describes them (OpenOCD does; QEMU 7.2's
    // gdbstub does not): they let the unwinder cross from a handler to a task's stack.
    for (const char* name : {"msp", "psp"})
        if (gdb_.target().find(name) != nullptr)
            names_.push_back(name);
}

HaltState RspStackReader::read(const std::vector<std::pair<uint32_t, uint32_t>>& reads,
                               std::vector<std::string>& memory_read)
{
    HaltState state;
    // The stack is read in the registers' round trip too, speculatively: SP is not known
    // yet, but it rarely moves far between samples, so the window around the last one
    // usually holds the new frames (one round trip per halt instead of two).
    std::vector<std::pair<uint32_t, uint32_t>> all = reads;
    std::optional<std::pair<uint32_t, uint32_t>> guess;
    if (last_sp_) {
        const uint32_t below = options_.window_bytes / 2;
        const uint32_t start = *last_sp_ >= below ? (*last_sp_ - below) & ~3u : 0;
        uint32_t length = below + options_.window_bytes;
        const auto top = options_.unwinder->initial_stack_pointer();
        if (top && start < *top && *top - start < length)
            length = *top - start;
        guess.emplace(start, length);
        all.push_back(*guess);
    }
    const std::vector<uint32_t> values = gdb_.read_registers(names_, all, memory_read);
    for (size_t i = 0; i < 16; ++i)
        state.registers.r[i] = values[i];
    state.registers.xpsr = values[16];
    for (size_t i = 17; i < names_.size(); ++i)
        (names_[i] == "msp" ? state.registers.msp : state.registers.psp) = values[i];

    WindowedMemory memory(gdb_, options_.window_bytes, 1 + options_.extra_reads,
                          options_.unwinder->initial_stack_pointer());
    const uint32_t sp = state.registers.r[13] & ~3u;
    bool covered = false;
    if (guess) {
        std::string bytes = std::move(memory_read.back());
        memory_read.pop_back();
        // Enough of the new stack in the guess: from SP, the window's worth or up to the top.
        const uint64_t end = uint64_t(guess->first) + bytes.size();
        const auto top = options_.unwinder->initial_stack_pointer();
        covered = sp >= guess->first && (end >= uint64_t(sp) + options_.window_bytes || (top && end >= *top));
        memory.add(guess->first, std::move(bytes));
    }
    if (!covered)
        memory.fetch(sp);
    last_sp_ = sp;
    state.unwound = options_.unwinder->unwind(state.registers, memory, options_.max_depth);
    state.memory_reads = memory.reads();
    return state;
}

} // namespace mcuprof::sources
