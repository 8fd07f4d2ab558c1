#include "units.hpp"

namespace {

__attribute__((noinline)) unsigned mix(unsigned x)
{
    for (int i = 0; i < 30; ++i)
        x = (x ^ (x >> 7)) * 0x9e3779b1u + 1;
    return x;
}

} // namespace

static __attribute__((noinline)) int checksum(const unsigned char* data, int size)
{
    unsigned sum = 0;
    for (int round = 0; round < 3; ++round)
        for (int i = 0; i < size; ++i)
            sum = mix(sum + data[i]);
    return int(sum);
}

int unit_a(const unsigned char* data, int size)
{
    return checksum(data, size);
}
