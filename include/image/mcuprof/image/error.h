#pragma once
#include "mcuprof/error.h"

namespace mcuprof::core {

// Raised by the core: an ELF that cannot be read or is not for ARM, inconsistent samples.
class Error : public mcuprof::Error {
public:
    using mcuprof::Error::Error;
};

} // namespace mcuprof::core
