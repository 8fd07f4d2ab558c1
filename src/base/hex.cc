#include "mcuprof/hex.h"

#include <cstdio>

namespace mcuprof {

std::string hex32(uint32_t value)
{
    char text[16];
    std::snprintf(text, sizeof text, "0x%08x", unsigned(value));
    return text;
}

} // namespace mcuprof
