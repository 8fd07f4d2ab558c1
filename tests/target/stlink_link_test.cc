// The ST-Link command layer over the stlink-server framing, against byte-exact exchanges
// written here from the protocol's layout (stlink_server_transport.cc's table; OpenOCD's
// stlink_usb.c and the vprobe serve the same bytes): each request the client writes must be
// exactly the bytes listed, and the replies listed are what a server sends back.
#include <doctest/doctest.h>

#include <deque>
#include <utility>

#include "mcuprof/link/error.h"
#include "mcuprof/target/stlink_link.h"

using namespace mcuprof;
using namespace mcuprof::sources::stlink;

namespace {

// "05 00 ff" -> the bytes; spaces ignored.
std::string hex(std::string_view text)
{
    std::string out;
    std::string digits;
    for (char c : text)
        if (c != ' ')
            digits.push_back(c);
    REQUIRE(digits.size() % 2 == 0);
    for (size_t i = 0; i < digits.size(); i += 2)
        out.push_back(char(std::stoul(digits.substr(i, 2), nullptr, 16)));
    return out;
}

// A server that expects these requests, in this order, each answered by its reply.
class ScriptedServer : public transport::ByteStream {
public:
    explicit ScriptedServer(std::deque<std::pair<std::string, std::string>>& script) : script_(script) {}
    void write(std::string_view bytes, transport::Duration) override
    {
        if (script_.empty() && !bytes.empty() && bytes[0] == 0x04) {   // CLOSE_DEV as a test's link goes
            ready_ += hex("01000000");
            return;
        }
        REQUIRE_FALSE(script_.empty());
        CHECK(hex_of(bytes) == hex_of(script_.front().first));
        ready_ += script_.front().second;
        script_.pop_front();
    }
    void read_some(std::string& into, transport::Duration) override
    {
        if (ready_.empty())
            throw transport::Error(transport::Error::Kind::closed, peer_, "", "closed");
        // A byte at a time: the client must gather its replies across reads.
        into.push_back(ready_.front());
        ready_.erase(0, 1);
    }
    bool try_read_some(std::string& into, transport::Duration t) override
    {
        read_some(into, t);
        return true;
    }
    void close() override { closed = true; }
    const std::string& peer() const override { return peer_; }
    bool closed = false;

private:
    static std::string hex_of(std::string_view bytes)
    {
        static const char* digits = "0123456789abcdef";
        std::string out;
        for (unsigned char c : bytes) {
            out.push_back(digits[c >> 4]);
            out.push_back(digits[c & 15]);
        }
        return out;
    }
    std::deque<std::pair<std::string, std::string>>& script_;
    std::string ready_;
    std::string peer_ = "stlink-server test";
};

// The opening: refresh, count, device 0's info (id 1, serial, 0483:374E, shared), open (connection 7).
std::deque<std::pair<std::string, std::string>> opening(uint8_t in_use = 0)
{
    std::string serial = "0671FF3833554B3043164817";
    serial.resize(32, '\0');
    std::string info = hex("01000000 01000000") + serial + hex("8304 4e37") + std::string(1, char(in_use));
    return {
        {hex("00 00"), hex("01000000")},
        {hex("01"), hex("01000000")},
        {hex("02 00 000000 000000"), info},
        {hex("03 000000 01000000"), hex("01000000 07000000")},
    };
}

// A USB request of connection 7: the 32-byte header around the 16-byte command.
std::string usb(std::string_view command16, uint8_t direction, uint32_t length)
{
    std::string c = hex(command16);
    c.resize(16, '\0');
    std::string r = hex("05 000000 07000000") + c;
    r.push_back(char(direction));
    r += hex("000000");
    for (int i = 0; i < 4; ++i)
        r.push_back(char(uint8_t(length >> (8 * i))));
    return r;
}

struct Fixture {
    std::deque<std::pair<std::string, std::string>> script;
    ScriptedServer* server = nullptr;
    std::unique_ptr<StlinkLink> link;

    explicit Fixture(std::deque<std::pair<std::string, std::string>> s) : script(std::move(s))
    {
        auto stream = std::make_unique<ScriptedServer>(script);
        server = stream.get();
        link = std::make_unique<StlinkLink>(make_stlink_server_transport(std::move(stream), std::chrono::seconds(1)));
    }
    void then(const std::string& request, const std::string& reply) { script.emplace_back(request, reply); }
};

} // namespace

TEST_CASE("stlink-server: the opening and the device named in the header")
{
    Fixture f(opening());
    CHECK(f.script.empty());
    CHECK(f.link->device() == "ST-Link 0671FF3833554B3043164817 (0483:374E) through stlink-server test");
    // Closing sends CLOSE_DEV with the connection id.
    f.then(hex("04 000000 07000000"), hex("01000000"));
    f.link->close();
    CHECK(f.script.empty());
    CHECK(f.server->closed);
    CHECK(f.link->commands() == 0);
}

TEST_CASE("stlink-server: how many programs have the probe open, asked of the server; an older one cannot say")
{
    Fixture f(opening());
    f.then(hex("07 000000 01000000"), hex("01000000 02000000"));
    CHECK(f.link->clients() == 2u);
    f.then(hex("07 000000 01000000"), hex("01000000 01000000"));
    CHECK(f.link->clients() == 1u);
    // A server without the command answers its status alone; it is not asked again.
    f.then(hex("07 000000 01000000"), hex("53100000"));
    CHECK_FALSE(f.link->clients().has_value());
    CHECK_FALSE(f.link->clients().has_value());
    CHECK(f.script.empty());
    CHECK(f.link->commands() == 0);   // server requests, no USB command
}

TEST_CASE("stlink-server: a probe held exclusively by another program is refused, by name")
{
    auto script = opening(1);
    script.pop_back();   // never opened
    std::deque<std::pair<std::string, std::string>> s = script;
    auto stream = std::make_unique<ScriptedServer>(s);
    CHECK_THROWS_WITH_AS(make_stlink_server_transport(std::move(stream), std::chrono::seconds(1)),
                         doctest::Contains("0671FF3833554B3043164817 is held exclusively by another program"),
                         transport::Error);
}

TEST_CASE("stlink-server: no probe listed")
{
    std::deque<std::pair<std::string, std::string>> s = {{hex("00 00"), hex("01000000")},
                                                         {hex("01"), hex("00000000")}};
    CHECK_THROWS_WITH_AS(make_stlink_server_transport(std::make_unique<ScriptedServer>(s), std::chrono::seconds(1)),
                         doctest::Contains("lists no ST-Link"), transport::Error);
}

TEST_CASE("ST-Link: the debug registers, one USB command each")
{
    Fixture f(opening());
    // READDEBUGREG DHCSR (0xE000EDF0): status word, value.
    f.then(usb("F2 36 F0ED00E0", 1, 8), hex("01000000 80000000 03000300"));
    CHECK(f.link->read_debug_register(0xE000EDF0) == 0x00030003);
    // WRITEDEBUGREG DHCSR = DBGKEY | C_HALT | C_DEBUGEN: the address, then the value.
    f.then(usb("F2 35 F0ED00E0 03005FA0", 1, 2), hex("01000000 8000"));
    f.link->write_debug_register(0xE000EDF0, 0xA05F0003);
    CHECK(f.script.empty());
    CHECK(f.link->commands() == 2);
}

TEST_CASE("ST-Link: READALLREGS, 88 bytes, in REGSEL order")
{
    Fixture f(opening());
    std::string reply = hex("01000000 80000000");
    for (uint32_t i = 0; i < 21; ++i)
        for (int b = 0; b < 4; ++b)
            reply.push_back(char(uint8_t((0x100 + i) >> (8 * b))));
    f.then(usb("F2 3A", 1, 88), reply);
    const AllRegisters r = f.link->read_all_registers();
    for (uint32_t i = 0; i < 21; ++i)
        CHECK(r.words[i] == 0x100 + i);
    CHECK(f.link->commands() == 1);
}

TEST_CASE("ST-Link: a status other than ok is an error naming the command; WAIT is asked again")
{
    Fixture f(opening());
    std::string fault = hex("01000000 81000000") + std::string(84, '\0');
    f.then(usb("F2 3A", 1, 88), fault);
    CHECK_THROWS_WITH_AS(f.link->read_all_registers(), doctest::Contains("READALLREGS: the ST-Link answered status 0x81 (fault)"),
                         transport::Error);
    f.then(usb("F2 36 F0ED00E0", 1, 8), hex("01000000 10000000 00000000"));
    f.then(usb("F2 36 F0ED00E0", 1, 8), hex("01000000 80000000 01000000"));
    CHECK(f.link->read_debug_register(0xE000EDF0) == 1);
    CHECK(f.link->commands() == 3);
}

TEST_CASE("stlink-server: a USB command the server refuses")
{
    Fixture f(opening());
    f.then(usb("F2 36 F0ED00E0", 1, 8), hex("02100000") + std::string(8, '\0'));
    CHECK_THROWS_WITH_AS(f.link->read_debug_register(0xE000EDF0),
                         doctest::Contains("refused the USB command (status 0x1002)"), transport::Error);
}

TEST_CASE("ST-Link: READMEM_32BIT stays inside a 1 KiB block; GETLASTRWSTATUS2 when asked")
{
    Fixture f(opening());
    // 0x200003F8, 16 bytes: 8 up to the block's end at 0x20000400, then 8 more.
    f.then(usb("F2 07 F8030020 0800", 1, 8), hex("01000000 0102030405060708"));
    f.then(usb("F2 07 00040020 0800", 1, 8), hex("01000000 090A0B0C0D0E0F10"));
    CHECK(f.link->read_memory(0x200003F8, 16, false) == hex("0102030405060708090A0B0C0D0E0F10"));
    CHECK(f.link->commands() == 2);
    // Checked: each read followed by its status (12 bytes: status, fault address, 0).
    f.then(usb("F2 07 00000020 0400", 1, 4), hex("01000000 11223344"));
    f.then(usb("F2 3E", 1, 12), hex("01000000 80000000 00000000 00000000"));
    CHECK(f.link->read_memory(0x20000000, 4, true) == hex("11223344"));
    // A bus fault: the data is whatever came, the status says it is none.
    f.then(usb("F2 07 00000040 0400", 1, 4), hex("01000000 00000000"));
    f.then(usb("F2 3E", 1, 12), hex("01000000 11000000 00000040 00000000"));
    CHECK(f.link->read_memory(0x40000000, 4, true).empty());
    CHECK(f.link->commands() == 6);
    CHECK(f.script.empty());
}

TEST_CASE("ST-Link: one word read again and again, READMEM_32BIT_NO_ADDR_INC of up to 1024 words")
{
    Fixture f(opening());
    // DWT_PCSR (0xE000101C) three times: one command of 12 bytes, the words in order.
    f.then(usb("F2 54 1C1000E0 0C00", 1, 12), hex("01000000 10000008 14000008 FFFFFFFF"));
    CHECK(f.link->read_word_repeatedly(0xE000101C, 3) == std::vector<uint32_t>{0x08000010, 0x08000014, 0xFFFFFFFF});
    CHECK(f.link->commands() == 1);
    // 1025 reads: 1024 in the first command (4096 bytes), the last in a second.
    std::string words;
    for (uint32_t i = 0; i < 1024; ++i)
        words += hex("00010008");
    f.then(usb("F2 54 1C1000E0 0010", 1, 4096), hex("01000000") + words);
    f.then(usb("F2 54 1C1000E0 0400", 1, 4), hex("01000000 04010008"));
    const std::vector<uint32_t> reads = f.link->read_word_repeatedly(0xE000101C, 1025);
    REQUIRE(reads.size() == 1025);
    CHECK(reads.front() == 0x08000100);
    CHECK(reads.back() == 0x08000104);
    CHECK(f.link->commands() == 3);
    CHECK(f.script.empty());
}

TEST_CASE("ST-Link: which firmware reads one address again (READMEM_32BIT_NO_ADDR_INC)")
{
    // stlink_usb.c's STLINK_F_HAS_MEM_RD_NO_INC: a V2 from J32, a V3 from J2.
    CHECK_FALSE(Version{2, 31, 0, 0}.reads_one_address());
    CHECK(Version{2, 32, 0, 0}.reads_one_address());
    CHECK_FALSE(Version{3, 1, 0, 0}.reads_one_address());
    CHECK(Version{3, 2, 0, 0}.reads_one_address());
}

TEST_CASE("ST-Link: the versions, and a probe too old for READALLREGS")
{
    {
        Fixture f(opening());
        // V2J37S7: 2 << 12 | 37 << 6 | 7 = 0x2947, big-endian; 0483:3748.
        f.then(usb("F1", 1, 6), hex("01000000 2947 8304 4837"));
        const Version v = f.link->read_version();
        CHECK(v.text() == "V2J37 (0483:3748)");
    }
    {
        Fixture f(opening());
        // A V3: the word's fields 0, GET_VERSION_EX's bytes: V3, SWIM 1, JTAG 7, ...; VID, PID at 8.
        f.then(usb("F1", 1, 6), hex("01000000 3000 8304 4e37"));
        f.then(usb("FB", 1, 12), hex("01000000 03010703 05000000 8304 4e37"));
        CHECK(f.link->read_version().text() == "V3J7 (0483:374E)");
    }
    {
        Fixture f(opening());
        // V2J10: 2 << 12 | 10 << 6 = 0x2280.
        f.then(usb("F1", 1, 6), hex("01000000 2280 8304 4837"));
        CHECK_THROWS_WITH_AS(f.link->read_version(), doctest::Contains("debug API v1 only"), transport::Error);
    }
}

TEST_CASE("ST-Link: ENTER SWD unless in debug mode already")
{
    Fixture f(opening());
    f.then(usb("F5", 1, 2), hex("01000000 0200"));
    f.link->enter_swd();   // another client entered it
    f.then(usb("F5", 1, 2), hex("01000000 0100"));
    f.then(usb("F2 30 A3", 1, 2), hex("01000000 8000"));
    f.link->enter_swd();
    CHECK(f.script.empty());
    CHECK(f.link->commands() == 3);
}

namespace {

// A probe's bulk endpoints that expect these transfers, in order: (endpoint, bytes) written by
// the host, or (endpoint, bytes) the probe answers with on an IN endpoint.
struct Transfer {
    uint8_t endpoint;
    std::string bytes;
};

class ScriptedBulk : public UsbBulk {
public:
    explicit ScriptedBulk(std::deque<Transfer>& script) : script_(script) {}
    void write(uint8_t endpoint, std::string_view bytes) override
    {
        REQUIRE_FALSE(script_.empty());
        CHECK(int(endpoint) == int(script_.front().endpoint));
        CHECK(std::string(bytes) == script_.front().bytes);
        script_.pop_front();
    }
    std::string read(uint8_t endpoint, uint32_t length) override
    {
        REQUIRE_FALSE(script_.empty());
        CHECK(int(endpoint) == int(script_.front().endpoint));
        CHECK(length == script_.front().bytes.size());
        std::string reply = script_.front().bytes;
        script_.pop_front();
        return reply;
    }
    const std::string& peer() const override { return peer_; }
    std::string device() const override { return "0483:374B serial 066DFF on USB /dev/bus/usb/001/007"; }
    void close() override { closed = true; }
    bool closed = false;

private:
    std::deque<Transfer>& script_;
    std::string peer_ = "ST-Link on USB /dev/bus/usb/001/007";
};

// The 16 command bytes as the probe receives them: the listed ones, then zeros.
std::string command16(std::string_view listed)
{
    std::string c = hex(listed);
    c.resize(16, '\0');
    return c;
}

} // namespace

TEST_CASE("ST-Link on USB: each command one bulk OUT of 16 bytes, data to the probe a second, the reply one bulk IN")
{
    REQUIRE(stlink_usb_endpoints(0x374B));   // a V2-1: commands to EP 1 OUT, replies from EP 1 IN
    const UsbEndpoints v21 = *stlink_usb_endpoints(0x374B);
    CHECK((int(v21.command_out) == 0x01 && int(v21.reply_in) == 0x81));
    std::deque<Transfer> script{
        // READDEBUGREG DHCSR: status word and value come back in one IN transfer of 8 bytes.
        {0x01, command16("F2 36 F0ED00E0")}, {0x81, hex("80000000 03000300")},
        // WRITEDEBUGREG: address and value inside the command; the 2-byte status back.
        {0x01, command16("F2 35 F0ED00E0 03005FA0")}, {0x81, hex("8000")},
        // READALLREGS: 88 bytes.
        {0x01, command16("F2 3A")}, {0x81, hex("80000000") + std::string(84, '\x11')},
    };
    auto bulk = std::make_unique<ScriptedBulk>(script);
    ScriptedBulk* probe = bulk.get();
    StlinkLink link(make_stlink_usb_transport(std::move(bulk), v21));
    CHECK(link.read_debug_register(0xE000EDF0) == 0x00030003);
    link.write_debug_register(0xE000EDF0, 0xA05F0003);
    CHECK(link.read_all_registers().words[0] == 0x11111111);
    CHECK(script.empty());
    CHECK(link.commands() == 3);
    CHECK(link.peer() == "ST-Link on USB /dev/bus/usb/001/007");
    link.close();
    CHECK(probe->closed);
}

TEST_CASE("ST-Link on USB: the endpoints by product ID")
{
    const auto v2 = stlink_usb_endpoints(0x3748);   // ST-LINK/V2: commands to EP 2 OUT
    REQUIRE(v2);
    CHECK((int(v2->command_out) == 0x02 && int(v2->reply_in) == 0x81));
    for (uint16_t v3 : {0x374E, 0x374F, 0x3753, 0x3754, 0x3757})
        CHECK(int(stlink_usb_endpoints(v3)->command_out) == 0x01);
    CHECK_FALSE(stlink_usb_endpoints(0x3744));   // ST-LINK/V1: no READALLREGS, not taken
    CHECK_FALSE(stlink_usb_endpoints(0xDF11));   // ST's DFU bootloader
}

TEST_CASE("ST-Link on USB: none on this machine's bus is one connect error naming what was looked for")
{
    // This machine has no ST-Link (nor USB in a container): the error says what it looked for.
    try {
        open_stlink_usb("NO-SUCH-SERIAL", std::chrono::seconds(1));
        FAIL("opened an ST-Link that is not there");
    } catch (const transport::Error& e) {
        CHECK(e.kind() == transport::Error::Kind::connect);
        const std::string said = e.what();
        const bool named = said.find("no ST-Link on USB") != std::string::npos ||
                           said.find("libusb_init") != std::string::npos ||
                           said.find("NO-SUCH-SERIAL") != std::string::npos;
        CHECK_MESSAGE(named, said);
    }
}
