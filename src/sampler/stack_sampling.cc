#include "mcuprof/sampler/stack_sampling.h"

#include <map>

#include "mcuprof/cortex_m.h"

namespace mcuprof::sources {
namespace {

// Windows of target memory fetched on demand, each fetched once per halt.
class WindowedMemory : public core::StackMemory {
public:
    WindowedMemory(HaltingTarget& target, uint32_t window, uint32_t reads_left, std::optional<uint32_t> top)
        : target_(target), window_(window), reads_left_(reads_left), top_(top)
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
        // Memory the target refuses comes back empty and ends this chain; a link that
        // failed throws and ends the recording.
        std::string bytes = target_.read_memory(address, length);
        // A window past the end of a RAM that is not the last (the Non-secure stack at the top
        // of its SSRAM, below the Secure one on mps2-an505) is refused whole: read again up to
        // the next 256-byte boundary, where memory regions end.
        const uint32_t to_boundary = 0x100u - (address & 0xFFu);
        if (bytes.empty() && to_boundary < length && reads_left_ > 0) {
            --reads_left_;
            ++reads_;
            bytes = target_.read_memory(address, to_boundary);
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

    HaltingTarget& target_;
    uint32_t window_;
    uint32_t reads_left_;
    std::optional<uint32_t> top_;
    uint32_t reads_ = 0;
    std::map<uint32_t, std::string> windows_;
};

} // namespace

StackReader::StackReader(StackSamplingOptions options) : options_(std::move(options)) {}

// The stack is read in the registers' round trip, speculatively: SP is not known yet, but
// it rarely moves far between samples, so the window around the last one usually holds
// the new frames.
std::optional<MemoryRange> StackReader::window_guess() const
{
    if (!last_sp_)
        return std::nullopt;
    const uint32_t below = options_.window_bytes / 2;
    const uint32_t start = *last_sp_ >= below ? (*last_sp_ - below) & ~3u : 0;
    uint32_t length = below + options_.window_bytes;
    const auto top = options_.unwinder->initial_stack_pointer();
    if (top && start < *top && *top - start < length)
        length = *top - start;
    return MemoryRange{start, length};
}

void StackReader::add_to(HaltRequest& request) const
{
    request.all_registers = true;
    request.stay_halted = true;
    if (auto guess = window_guess()) {
        request.stack_guess = request.memory.size();
        request.memory.push_back(*guess);
    }
    request.other_cores_stack_bytes = options_.window_bytes;
    request.stack_bytes = options_.window_bytes;
    request.stack_top = options_.unwinder->initial_stack_pointer();
}

UnwoundHalt StackReader::unwind(HaltState& state, HaltingTarget& target)
{
    const std::optional<MemoryRange> guess = window_guess();
    WindowedMemory memory(target, options_.window_bytes, 1 + options_.extra_reads,
                          options_.unwinder->initial_stack_pointer());
    const uint32_t sp = state.registers.r[cortex_m::core_reg::sp] & ~3u;
    bool covered = false;
    // No window with the registers (another core's halt state): read from SP.
    if (guess && !state.memory.empty()) {
        std::string bytes = std::move(state.memory.back());
        state.memory.pop_back();
        // Enough of the new stack in the guess: from SP, the window's worth or up to the top.
        const uint64_t end = uint64_t(guess->first) + bytes.size();
        const auto top = options_.unwinder->initial_stack_pointer();
        covered = sp >= guess->first && (end >= uint64_t(sp) + options_.window_bytes || (top && end >= *top));
        // Left empty by a link that read the window from the new SP (stack_window, below):
        // not memory the target refused.
        if (!bytes.empty() || !state.stack_window)
            memory.add(guess->first, std::move(bytes));
    }
    // Another core's window, or this one's, read from its own SP with its registers.
    if (state.stack_window && !state.stack_window->bytes.empty()) {
        const uint32_t start = state.stack_window->address;
        const uint64_t end = uint64_t(start) + state.stack_window->bytes.size();
        const auto top = options_.unwinder->initial_stack_pointer();
        covered = sp >= start && (end >= uint64_t(sp) + options_.window_bytes || (top && end >= *top));
        memory.add(start, std::move(state.stack_window->bytes));
    }
    if (!covered)
        memory.fetch(sp);
    last_sp_ = sp;
    UnwoundHalt out;
    out.unwound = options_.unwinder->unwind(state.registers, memory, options_.max_depth);
    // A handler's chain that reached the exception return into a task needs PSP: when the
    // halt's read did not give it, the link reads it now (only such halts pay for it).
    if (out.unwound.stop == core::UnwindStop::psp_unknown && !state.registers.psp) {
        state.registers.psp = target.read_stack_pointer(StackPointer::process, state.registers);
        ++out.stack_pointer_reads;
        if (state.registers.psp)
            out.unwound = options_.unwinder->unwind(state.registers, memory, options_.max_depth);
    }
    // A Secure function called from the Non-secure state: the caller's frames are on the
    // Non-secure stacks, whose pointers the Secure state reads (MSP_NS, PSP_NS, CONTROL_NS;
    // zero when the core is in the Non-secure state itself: RAZ, unknown). QEMU 10's m-security
    // feature describes them; on QEMU 7.2 the stub reads them.
    core::StackRegisters& nonsecure = state.registers.other_security_state;
    if (out.unwound.stop == core::UnwindStop::nonsecure_unknown && !nonsecure.msp) {
        auto read = [&](StackPointer which) {
            ++out.stack_pointer_reads;
            const std::optional<uint32_t> value = target.read_stack_pointer(which, state.registers);
            return value && *value != 0 ? value : std::nullopt;
        };
        nonsecure.msp = read(StackPointer::main_nonsecure);
        if (nonsecure.msp) {
            nonsecure.psp = read(StackPointer::process_nonsecure);
            nonsecure.control = read(StackPointer::control_nonsecure).value_or(0);   // RAZ: 0 is a value here
            out.unwound = options_.unwinder->unwind(state.registers, memory, options_.max_depth);
        }
    }
    out.memory_reads = memory.reads();
    return out;
}

} // namespace mcuprof::sources
