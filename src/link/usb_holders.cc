#include "mcuprof/link/usb_holders.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace mcuprof::transport {

std::string usb_device_node(unsigned bus, unsigned address)
{
    char node[32];
    std::snprintf(node, sizeof node, "/dev/bus/usb/%03u/%03u", bus, address);
    return node;
}

std::vector<std::string> processes_holding(const std::vector<std::string>& nodes, const std::string& proc_root)
{
    namespace fs = std::filesystem;
    std::vector<std::string> holders;
    if (nodes.empty())
        return holders;
    const std::string self = std::to_string(::getpid());
    std::error_code error;
    for (const fs::directory_entry& process : fs::directory_iterator(proc_root, error)) {
        const std::string pid = process.path().filename().string();
        if (pid.find_first_not_of("0123456789") != std::string::npos || pid == self)
            continue;
        std::error_code unreadable;   // another user's process: its descriptors are not ours to see
        for (const fs::directory_entry& fd : fs::directory_iterator(process.path() / "fd", unreadable)) {
            const fs::path target = fs::read_symlink(fd.path(), unreadable);
            if (unreadable || std::find(nodes.begin(), nodes.end(), target.string()) == nodes.end())
                continue;
            std::ifstream comm(process.path() / "comm");
            std::string name;
            std::getline(comm, name);
            holders.push_back(name + " (pid " + pid + ")");
            break;
        }
    }
    return holders;
}

} // namespace mcuprof::transport
