#pragma once
// The truth plugin's PC file (firmware-ref/truth/truth.c, pcfile=PATH): each vCPU's current
// instruction address in a shared mapping, so that DWT_PCSR can be answered without stopping
// QEMU, as silicon answers it without stopping the core (docs/vprobe.md, "DWT_PCSR without a
// halt").
#include <cstdint>
#include <optional>
#include <string>

namespace mcuprof::vprobe {

class PcFile {
public:
    // Maps PATH read-only; throws std::runtime_error (its message names the option) when it is missing or not a PC file the plugin
    // made (magic, a count of vCPUs, the size that count needs).
    explicit PcFile(const std::string& path);
    ~PcFile();
    PcFile(const PcFile&) = delete;
    PcFile& operator=(const PcFile&) = delete;

    unsigned cores() const { return cores_; }
    // The address core k's vCPU executes or last executed; nullopt before its first
    // instruction, or for a core the file does not have.
    std::optional<uint32_t> pc(unsigned core) const;

private:
    const uint32_t* words_ = nullptr;
    size_t bytes_ = 0;
    unsigned cores_ = 0;
};

} // namespace mcuprof::vprobe
