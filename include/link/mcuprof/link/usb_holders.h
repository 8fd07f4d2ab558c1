#pragma once
// Which programs hold a USB device open, as lsof finds them: for a probe that another program
// has claimed, the error can name it.
#include <string>
#include <vector>

namespace mcuprof::transport {

// The device node of USB device `address` on bus `bus`: /dev/bus/usb/BBB/DDD (usbfs's names).
std::string usb_device_node(unsigned bus, unsigned address);

// "openocd (pid 812)" for each process (but this one) with one of `nodes` (/dev/bus/usb/BBB/DDD)
// among the descriptors in PROC/PID/fd. Processes of other users are not readable without root
// and are not seen.
std::vector<std::string> processes_holding(const std::vector<std::string>& nodes, const std::string& proc_root = "/proc");

} // namespace mcuprof::transport
