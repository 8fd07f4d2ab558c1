// The OpenOCD that --chip/--probe starts: its command line, the target script looked up in the
// installed OpenOCD, and OpenOCD's errors as the user reads them. The process itself, against
// the real OpenOCD and the vprobe, is tests/vprobe/test_chip_probe.py.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <doctest/doctest.h>

#include "mcuprof/sampler/openocd_launch.h"

using namespace mcuprof::sources;

namespace {

OpenocdLaunch launch_of(const std::string& chip, OpenocdProbe::Kind kind, uint16_t port = 7184)
{
    OpenocdLaunch launch;
    launch.program = "openocd";
    launch.chip = chip;
    launch.probe.kind = kind;
    launch.probe.server_port = port;
    return launch;
}

// `args` holds `first` directly followed by `second`.
bool has_pair(const std::vector<std::string>& args, const std::string& first, const std::string& second)
{
    for (size_t i = 0; i + 1 < args.size(); ++i)
        if (args[i] == first && args[i + 1] == second)
            return true;
    return false;
}

} // namespace

TEST_CASE("openocd_command: ports before the scripts, the probe's interface, the stock target, init last")
{
    const auto args = openocd_command(launch_of("stm32f4x", OpenocdProbe::Kind::stlink_server, 7185), 40001);
    CHECK(args.front() == "openocd");
    CHECK(has_pair(args, "-c", "tcl_port 40001"));
    CHECK(has_pair(args, "-c", "gdb_port disabled"));
    CHECK(has_pair(args, "-c", "bindto 127.0.0.1"));
    CHECK(has_pair(args, "-f", "interface/stlink.cfg"));
    CHECK(has_pair(args, "-c", "hla_stlink_backend tcp 7185"));
    CHECK(has_pair(args, "-f", "target/stm32f4x.cfg"));
    CHECK(args.back() == "init");
    // The backend is chosen after the interface script and before the target's.
    const auto at = [&](const std::string& word) { return std::find(args.begin(), args.end(), word) - args.begin(); };
    CHECK(at("interface/stlink.cfg") < at("hla_stlink_backend tcp 7185"));
    CHECK(at("hla_stlink_backend tcp 7185") < at("target/stm32f4x.cfg"));
    CHECK(at("target/stm32f4x.cfg") < at("reset_config none"));

    const auto jlink = openocd_command(launch_of("nrf52", OpenocdProbe::Kind::jlink), 40002);
    CHECK(has_pair(jlink, "-f", "interface/jlink.cfg"));
    CHECK(has_pair(jlink, "-c", "transport select swd"));   // J-Link's first transport is JTAG
    const auto dap = openocd_command(launch_of("rp2040", OpenocdProbe::Kind::cmsis_dap), 40003);
    CHECK(has_pair(dap, "-f", "interface/cmsis-dap.cfg"));
}

TEST_CASE("the probe as the header names it")
{
    CHECK(launch_of("x", OpenocdProbe::Kind::stlink).probe.text() == "stlink");
    CHECK(launch_of("x", OpenocdProbe::Kind::cmsis_dap).probe.text() == "cmsis-dap");
    CHECK(launch_of("x", OpenocdProbe::Kind::stlink_server, 7190).probe.text() == "stlink-server:127.0.0.1:7190");
}

TEST_CASE("every family of the table has its target script in the installed OpenOCD")
{
    if (openocd_script_folders("openocd").empty())
        return;   // no OpenOCD here: nothing to hold the table to
    for (const ChipFacts& chip : known_chips()) {
        CAPTURE(chip.script);
        CHECK_FALSE(missing_target_script(launch_of(std::string(chip.script), OpenocdProbe::Kind::stlink)));
    }
    const auto missing = missing_target_script(launch_of("stm32f9x", OpenocdProbe::Kind::stlink));
    REQUIRE(missing);
    CHECK(missing->find("no target/stm32f9x.cfg") != std::string::npos);
    CHECK(missing->find("nearest: stm32f") != std::string::npos);
}

TEST_CASE("openocd_failure: OpenOCD's errors on one line, with the hint their words call for")
{
    const std::string idcode = "Info : STLINK V3J7M3B5S1 (API v3) VID:PID 0483:374E\n"
                               "Warn : UNEXPECTED idcode: 0x2ba01477\n"
                               "Error: expected 1 of 1: 0x0bb11477\n\n";
    const std::string said = openocd_failure(idcode, launch_of("nrf51", OpenocdProbe::Kind::stlink_server));
    CHECK(said.find("UNEXPECTED idcode: 0x2ba01477; expected 1 of 1: 0x0bb11477") == 0);
    CHECK(said.find("is --chip nrf51 the chip on the board") != std::string::npos);
    CHECK(said.find('\n') == std::string::npos);

    const std::string usb = openocd_failure("Info : clock speed 2000 kHz\nError: open failed\n",
                                            launch_of("stm32f4x", OpenocdProbe::Kind::stlink));
    CHECK(usb.find("open failed (no ST-Link could be opened on USB") == 0);

    const std::string server = openocd_failure("Error: cannot connect to stlink server, errno: Connection refused\n",
                                               launch_of("stm32f4x", OpenocdProbe::Kind::stlink_server, 7999));
    CHECK(server.find("nothing listens on 127.0.0.1:7999") != std::string::npos);

    // A family's note comes with the failure where the family is known for one.
    const std::string rp = openocd_failure("Error: init mode failed (unable to connect to the target)\n",
                                           launch_of("rp2040", OpenocdProbe::Kind::stlink));
    CHECK(rp.find("RP2040: two cores on a multidrop SWD bus") != std::string::npos);
    CHECK(openocd_failure("Info : nothing\n", launch_of("stm32f4x", OpenocdProbe::Kind::jlink)) ==
          "it said nothing that names an error");
}

TEST_CASE("usb_probe_holders: the processes with the probe's device node open, as in a sysfs and a procfs")
{
    namespace fs = std::filesystem;
    const fs::path root = fs::temp_directory_path() / ("mcuprof-usb-holders-" + std::to_string(::getpid()));
    fs::remove_all(root);
    auto write = [](const fs::path& file, const std::string& text) {
        fs::create_directories(file.parent_path());
        std::ofstream(file) << text << '\n';
    };
    // An ST-LINK/V2-1 on bus 1 device 7, a keyboard on bus 1 device 3.
    write(root / "sys/bus/usb/devices/1-2/idVendor", "0483");
    write(root / "sys/bus/usb/devices/1-2/idProduct", "374b");
    write(root / "sys/bus/usb/devices/1-2/busnum", "1");
    write(root / "sys/bus/usb/devices/1-2/devnum", "7");
    write(root / "sys/bus/usb/devices/1-3/idVendor", "046d");
    write(root / "sys/bus/usb/devices/1-3/idProduct", "c31c");
    write(root / "sys/bus/usb/devices/1-3/busnum", "1");
    write(root / "sys/bus/usb/devices/1-3/devnum", "3");
    // openocd holds the ST-Link, Xorg the keyboard, a shell nothing.
    write(root / "proc/812/comm", "openocd");
    fs::create_directories(root / "proc/812/fd");
    fs::create_symlink("/dev/bus/usb/001/007", root / "proc/812/fd/9");
    write(root / "proc/900/comm", "Xorg");
    fs::create_directories(root / "proc/900/fd");
    fs::create_symlink("/dev/bus/usb/001/003", root / "proc/900/fd/4");
    write(root / "proc/901/comm", "bash");
    fs::create_directories(root / "proc/901/fd");
    fs::create_symlink("/dev/pts/1", root / "proc/901/fd/0");
    write(root / "proc/self/comm", "not a process");

    const auto sys = (root / "sys").string(), proc = (root / "proc").string();
    CHECK(usb_probe_holders(OpenocdProbe::Kind::stlink, sys, proc) == std::vector<std::string>{"openocd (pid 812)"});
    CHECK(usb_probe_holders(OpenocdProbe::Kind::jlink, sys, proc).empty());   // no SEGGER device
    CHECK(usb_probe_holders(OpenocdProbe::Kind::stlink_server, sys, proc).empty());
    fs::remove_all(root);
}
