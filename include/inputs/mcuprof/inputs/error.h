#pragma once
#include "mcuprof/error.h"

namespace mcuprof::sources {

// Raised by the readers of recorded inputs: a file that is missing, malformed or
// inconsistent. The place is a line number or a byte offset.
class Error : public mcuprof::Error {
public:
    using mcuprof::Error::Error;
};

} // namespace mcuprof::sources
