#pragma once
#include "mcuprof/error.h"

namespace mcuprof::vprobe {

// Raised by the virtual probe: a port that cannot be opened, an OpenOCD connection that
// breaks, a target that exits or refuses what a debugger must be able to do. file() names
// the peer ("openocd 127.0.0.1:3335", "gdb 127.0.0.1:1234"), place() the register or
// address concerned.
class Error : public mcuprof::Error {
public:
    using mcuprof::Error::Error;
};

} // namespace mcuprof::vprobe
