// What a freestanding C++ image needs from a C library (the images link no libc): GCC and
// libstdc++'s algorithms may call these.
#include <cstddef>

extern "C" {

void* memcpy(void* to, const void* from, size_t n)
{
    auto* d = static_cast<unsigned char*>(to);
    auto* s = static_cast<const unsigned char*>(from);
    while (n-- != 0)
        *d++ = *s++;
    return to;
}

void* memmove(void* to, const void* from, size_t n)
{
    auto* d = static_cast<unsigned char*>(to);
    auto* s = static_cast<const unsigned char*>(from);
    if (d < s)
        return memcpy(to, from, n);
    while (n-- != 0)
        d[n] = s[n];
    return to;
}

void* memset(void* to, int value, size_t n)
{
    auto* d = static_cast<unsigned char*>(to);
    while (n-- != 0)
        *d++ = static_cast<unsigned char>(value);
    return to;
}

} // extern "C"
