#include "mcuprof/vprobe/mem_ap.h"

namespace mcuprof::vprobe {

using namespace mem_ap;

MemAp::MemAp(MemoryBus& bus, Identity identity) : bus_(bus), identity_(identity) {}

unsigned MemAp::size_bytes() const
{
    switch (csw_ & csw_size_mask) {
    case 0: return 1;
    case 1: return 2;
    case 2: return 4;
    default: return 0;   // 64 bits and up: not on an AHB-AP
    }
}

void MemAp::increment_tar()
{
    // ADIv5, "Automatic address increment": only the bits inside the block increment; a
    // debugger must rewrite TAR at each block boundary.
    const uint32_t mask = identity_.tar_block - 1;
    tar_ = (tar_ & ~mask) | ((tar_ + size_bytes()) & mask);
}

// One transfer of CSW.Size bytes at `address`. The data travels on the byte lanes of its
// address (ADIv5, "Byte lanes"): a byte at 0x...1 is DRW bits 15:8. The AHB-AP does not
// do unaligned transfers: the low address bits below the size are ignored.
bool MemAp::transfer(uint32_t address, bool read, uint32_t& data)
{
    const unsigned size = size_bytes();
    if (size == 0)
        return false;
    address &= ~uint32_t(size - 1);
    const unsigned shift = 8 * (address & 3);
    const uint32_t mask = size == 4 ? 0xFFFFFFFFu : ((1u << (8 * size)) - 1);
    ++transfers_;
    if (read) {
        uint32_t value = 0;
        if (!bus_.read(address, size, value))
            return false;
        data = (value & mask) << shift;
        return true;
    }
    return bus_.write(address, size, (data >> shift) & mask);
}

bool MemAp::read(uint8_t address, uint32_t& value)
{
    switch (address) {
    case csw_register:
        value = csw_ | csw_deviceen;
        return true;
    case tar_register:
        value = tar_;
        return true;
    case drw_register: {
        value = 0;
        if (!transfer(tar_, true, value))
            return false;   // TAR stays at the failing address, for the debugger to report
        if ((csw_ & csw_addrinc_mask) == csw_addrinc_single)
            increment_tar();
        return true;
    }
    case cfg_register:
        value = identity_.cfg;
        return true;
    case base_register:
        value = identity_.base;
        return true;
    case idr_register:
        value = identity_.idr;
        return true;
    default:
        if (address >= bd0_register && address <= bd3_register) {
            value = 0;
            return transfer((tar_ & ~0xFu) | (address - bd0_register), true, value);
        }
        value = 0;   // reserved addresses read as zero
        return true;
    }
}

bool MemAp::write(uint8_t address, uint32_t value)
{
    switch (address) {
    case csw_register: {
        uint32_t next = value & (csw_size_mask | csw_addrinc_mask | csw_mode_mask | csw_prot_mask | csw_dbgswenable);
        // The Cortex-M AHB-AP has no packed transfers (AddrInc b10, reserved b11): it keeps
        // them off, which is how a debugger learns it (OpenOCD's mem_ap_init reads CSW back).
        if ((next & csw_addrinc_mask) > csw_addrinc_single)
            next &= ~csw_addrinc_mask;
        csw_ = next;
        return true;
    }
    case tar_register:
        tar_ = value;
        return true;
    case drw_register: {
        uint32_t data = value;
        if (!transfer(tar_, false, data))
            return false;
        if ((csw_ & csw_addrinc_mask) == csw_addrinc_single)
            increment_tar();
        return true;
    }
    default:
        if (address >= bd0_register && address <= bd3_register) {
            uint32_t data = value;
            return transfer((tar_ & ~0xFu) | (address - bd0_register), false, data);
        }
        return true;   // read-only and reserved registers ignore writes
    }
}

} // namespace mcuprof::vprobe
