#pragma once
// The register layout a GDB server announces in its target description XML (GDB manual,
// "Target Descriptions"): names, sizes and numbers. Register numbers come from here,
// never from fixed offsets, so any server (QEMU, OpenOCD, probe servers) is read right.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mcuprof::transport {

struct RegisterInfo {
    std::string name;
    unsigned number = 0;   // the number 'p' takes
    unsigned bits = 32;
    size_t g_offset = 0;   // byte offset in the 'g' reply (registers in number order)
};

class TargetDescription {
public:
    // `fetch(annex)` returns an XML document by name (qXfer:features:read); the parser
    // follows <xi:include href=...>. Throws transport::Error (protocol) on bad XML.
    static TargetDescription parse(const std::function<std::string(const std::string&)>& fetch,
                                   const std::string& peer);

    const std::vector<RegisterInfo>& registers() const { return registers_; }
    const RegisterInfo* find(std::string_view name) const;
    std::string architecture() const { return architecture_; }

private:
    std::vector<RegisterInfo> registers_;
    std::string architecture_;
};

} // namespace mcuprof::transport
