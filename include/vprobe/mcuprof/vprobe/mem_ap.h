#pragma once
// A MEM-AP (ADIv5, "The Memory Access Port"), as the AHB-AP of a Cortex-M3/M4: CSW
// (transfer size, address increment), TAR with auto-increment inside a 4 KiB block, DRW
// with byte lanes, the banked data registers BD0-BD3, CFG, BASE (the ROM table) and
// IDR. Each DRW/BDn access becomes one transfer on a MemoryBus.
#include <cstdint>

#include "mcuprof/vprobe/jtag_dp.h"

namespace mcuprof::vprobe {

// The system bus as a debugger sees it. Values are right-aligned; addresses are aligned
// to the size (1, 2 or 4 bytes). false: the transfer failed (a bus error).
class MemoryBus {
public:
    virtual ~MemoryBus() = default;
    virtual bool read(uint32_t address, unsigned size, uint32_t& value) = 0;
    virtual bool write(uint32_t address, unsigned size, uint32_t value) = 0;
};

namespace mem_ap {
// Register addresses (ADIv5, MEM-AP register map).
constexpr uint8_t csw_register = 0x00;
constexpr uint8_t tar_register = 0x04;
constexpr uint8_t drw_register = 0x0C;
constexpr uint8_t bd0_register = 0x10;
constexpr uint8_t bd3_register = 0x1C;
constexpr uint8_t cfg_register = 0xF4;
constexpr uint8_t base_register = 0xF8;
constexpr uint8_t idr_register = 0xFC;

// CSW fields (ADIv5, CSW register).
constexpr uint32_t csw_size_mask = 0x7;          // 0: byte, 1: halfword, 2: word
constexpr uint32_t csw_addrinc_mask = 0x3u << 4; // 0: off, 1: single, 2: packed
constexpr uint32_t csw_addrinc_single = 0x1u << 4;
constexpr uint32_t csw_deviceen = 1u << 6;       // read-only: the bus can be accessed
constexpr uint32_t csw_trinprog = 1u << 7;       // read-only: a transfer is in progress
constexpr uint32_t csw_mode_mask = 0xFu << 8;
constexpr uint32_t csw_prot_mask = 0x7Fu << 24;
constexpr uint32_t csw_dbgswenable = 1u << 31;

// Cortex-M3/M4 AHB-AP (ARM DDI 0439 Cortex-M4 TRM, "AHB-AP"): IDR revision 2, ARM,
// class MEM-AP, type AHB; BASE: the ROM table at 0xE00FF000, ADIv5 format, present.
constexpr uint32_t cortex_m_idr = 0x24770011;
constexpr uint32_t cortex_m_base = 0xE00FF003;
// ARM IHI 0031 leaves the auto-increment range implementation defined, at least 1 KiB;
// the Cortex-M3/M4 AHB-AP increments across 4 KiB.
constexpr uint32_t cortex_m_tar_block = 0x1000;
} // namespace mem_ap

class MemAp : public AccessPort {
public:
    struct Identity {
        uint32_t idr = mem_ap::cortex_m_idr;
        uint32_t base = mem_ap::cortex_m_base;
        uint32_t cfg = 0;   // little-endian, 32-bit addresses and data
        uint32_t tar_block = mem_ap::cortex_m_tar_block;
    };

    explicit MemAp(MemoryBus& bus) : MemAp(bus, Identity{}) {}
    MemAp(MemoryBus& bus, Identity identity);

    bool read(uint8_t address, uint32_t& value) override;
    bool write(uint8_t address, uint32_t value) override;

    uint32_t csw() const { return csw_; }
    uint32_t tar() const { return tar_; }
    uint64_t transfers() const { return transfers_; }

private:
    unsigned size_bytes() const;
    bool transfer(uint32_t address, bool read, uint32_t& data);
    void increment_tar();

    MemoryBus& bus_;
    Identity identity_;
    // At reset: word size, no increment, DeviceEn, Prot b0000011 (a privileged data
    // access, what debuggers ask for anyway).
    uint32_t csw_ = 0x03000042;
    uint32_t tar_ = 0;
    uint64_t transfers_ = 0;
};

} // namespace mcuprof::vprobe
