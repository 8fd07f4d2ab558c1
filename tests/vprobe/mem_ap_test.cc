#include <doctest/doctest.h>

#include <cstddef>
#include <map>
#include <vector>

#include "mcuprof/vprobe/mem_ap.h"

using namespace mcuprof::vprobe;
using namespace mcuprof::vprobe::mem_ap;

namespace {

// A byte-addressed bus that records each transfer; addresses from 0x1000 up fail.
struct RecordingBus : MemoryBus {
    std::map<uint32_t, uint8_t> bytes;
    struct Transfer {
        uint32_t address;
        unsigned size;
        bool write;
        uint32_t value;
    };
    std::vector<Transfer> transfers;

    bool read(uint32_t address, unsigned size, uint32_t& value) override
    {
        value = 0;
        for (unsigned i = 0; i < size; ++i)
            value |= uint32_t(bytes[address + i]) << (8 * i);
        transfers.push_back({address, size, false, value});
        return address < 0x1000;
    }
    bool write(uint32_t address, unsigned size, uint32_t value) override
    {
        transfers.push_back({address, size, true, value});
        for (unsigned i = 0; i < size; ++i)
            bytes[address + i] = uint8_t(value >> (8 * i));
        return address < 0x1000;
    }
};

uint32_t get(MemAp& ap, uint8_t address)
{
    uint32_t value = 0;
    REQUIRE(ap.read(address, value));
    return value;
}

} // namespace

TEST_CASE("mem-ap: identity registers of a Cortex-M AHB-AP")
{
    RecordingBus bus;
    MemAp ap(bus);
    CHECK(get(ap, idr_register) == 0x24770011);
    CHECK(get(ap, base_register) == 0xE00FF003);
    CHECK(get(ap, cfg_register) == 0);
    CHECK((get(ap, csw_register) & csw_deviceen) != 0);
}

TEST_CASE("mem-ap: word transfers with TAR auto-increment, wrapping inside a 4 KiB block")
{
    RecordingBus bus;
    MemAp ap(bus);
    ap.write(csw_register, 0x2 | csw_addrinc_single);
    ap.write(tar_register, 0x0FF8);
    ap.write(drw_register, 0x11111111);
    ap.write(drw_register, 0x22222222);
    CHECK(get(ap, tar_register) == 0x0000);   // 0xFF8 + 8 wraps to the start of the block
    REQUIRE(bus.transfers.size() == 2);
    CHECK(bus.transfers[0].address == 0x0FF8);
    CHECK(bus.transfers[1].address == 0x0FFC);

    ap.write(tar_register, 0x0FF8);
    CHECK(get(ap, drw_register) == 0x11111111);
    CHECK(get(ap, tar_register) == 0x0FFC);
    // Increment off: TAR stays.
    ap.write(csw_register, 0x2);
    get(ap, drw_register);
    get(ap, drw_register);
    CHECK(get(ap, tar_register) == 0x0FFC);
}

TEST_CASE("mem-ap: bytes and halfwords travel on the lanes of their address")
{
    RecordingBus bus;
    MemAp ap(bus);
    ap.write(csw_register, 0x0 | csw_addrinc_single);   // bytes
    ap.write(tar_register, 0x101);
    ap.write(drw_register, 0x0000AB00);                  // lane 1 for address ...1
    ap.write(drw_register, 0x00CD0000);                  // lane 2 for address ...2
    CHECK(bus.bytes[0x101] == 0xAB);
    CHECK(bus.bytes[0x102] == 0xCD);
    CHECK(bus.transfers.back().size == 1);
    CHECK(get(ap, tar_register) == 0x103);

    ap.write(csw_register, 0x1 | csw_addrinc_single);   // halfwords
    ap.write(tar_register, 0x102);
    CHECK(get(ap, drw_register) == 0x00CD0000);          // halfword at ...2 comes on lanes 3:2
    CHECK(get(ap, tar_register) == 0x104);
}

TEST_CASE("mem-ap: no packed transfers: AddrInc b10 reads back as off")
{
    RecordingBus bus;
    MemAp ap(bus);
    ap.write(csw_register, 0x0 | (0x2u << 4));
    CHECK((get(ap, csw_register) & csw_addrinc_mask) == 0);
}

TEST_CASE("mem-ap: banked data registers address TAR's 16-byte block, TAR unchanged")
{
    RecordingBus bus;
    MemAp ap(bus);
    ap.write(csw_register, 0x2 | csw_addrinc_single);
    ap.write(tar_register, 0x208);
    ap.write(bd0_register + 4, 0xCAFE);   // BD1: 0x204
    CHECK(bus.transfers.back().address == 0x204);
    uint32_t value = 0;
    CHECK(ap.read(bd3_register, value));   // BD3: 0x20C
    CHECK(bus.transfers.back().address == 0x20C);
    CHECK(get(ap, tar_register) == 0x208);
}

TEST_CASE("mem-ap: a failed transfer reports an error and leaves TAR at the failing address")
{
    RecordingBus bus;
    MemAp ap(bus);
    ap.write(csw_register, 0x2 | csw_addrinc_single);
    ap.write(tar_register, 0x1000);
    uint32_t value = 0;
    CHECK_FALSE(ap.read(drw_register, value));
    CHECK(get(ap, tar_register) == 0x1000);
    // A size the AHB-AP does not have (64 bits) fails without a transfer.
    ap.write(csw_register, 0x3);
    const size_t before = bus.transfers.size();
    CHECK_FALSE(ap.read(drw_register, value));
    CHECK(bus.transfers.size() == before);
}
