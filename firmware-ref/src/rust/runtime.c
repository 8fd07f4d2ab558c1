/* What the Rust code and core call that neither libgcc nor core provides (the images link no
 * libc): the C library's memory functions, and the ARM run-time ABI's aliases for them that LLVM
 * emits for ARM EABI targets (RTABI, "Memory copying, clearing, and setting", 4.3.4), which newlib
 * would otherwise provide. Plain byte loops: this code is not what the profile is about. */
#include <stddef.h>
#include <stdint.h>

void *memcpy(void *to, const void *from, size_t n)
{
    unsigned char *d = to;
    const unsigned char *s = from;
    while (n-- != 0u)
        *d++ = *s++;
    return to;
}

void *memmove(void *to, const void *from, size_t n)
{
    unsigned char *d = to;
    const unsigned char *s = from;
    if (d < s)
        return memcpy(to, from, n);
    while (n-- != 0u)
        d[n] = s[n];
    return to;
}

void *memset(void *to, int value, size_t n)
{
    unsigned char *d = to;
    while (n-- != 0u)
        *d++ = (unsigned char)value;
    return to;
}

int memcmp(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    for (; n != 0u; --n, ++x, ++y)
        if (*x != *y)
            return *x < *y ? -1 : 1;
    return 0;
}

int bcmp(const void *a, const void *b, size_t n)
{
    return memcmp(a, b, n);
}

/* The RTABI forms: (dest, n, value) for memset, unlike the C library's (dest, value, n). */
void __aeabi_memcpy(void *to, const void *from, size_t n) { memcpy(to, from, n); }
void __aeabi_memcpy4(void *to, const void *from, size_t n) { memcpy(to, from, n); }
void __aeabi_memcpy8(void *to, const void *from, size_t n) { memcpy(to, from, n); }
void __aeabi_memmove(void *to, const void *from, size_t n) { memmove(to, from, n); }
void __aeabi_memmove4(void *to, const void *from, size_t n) { memmove(to, from, n); }
void __aeabi_memmove8(void *to, const void *from, size_t n) { memmove(to, from, n); }
void __aeabi_memset(void *to, size_t n, int value) { memset(to, value, n); }
void __aeabi_memset4(void *to, size_t n, int value) { memset(to, value, n); }
void __aeabi_memset8(void *to, size_t n, int value) { memset(to, value, n); }
void __aeabi_memclr(void *to, size_t n) { memset(to, 0, n); }
void __aeabi_memclr4(void *to, size_t n) { memset(to, 0, n); }
void __aeabi_memclr8(void *to, size_t n) { memset(to, 0, n); }

/* The Rust panic handler's way out (fw.rs): say so on the console and end the run with a status
 * the tests tell from a normal end. */
void con_puts(const char *s);
__attribute__((noreturn)) void semihost_exit(int status);

__attribute__((noreturn)) void rust_panicked(void)
{
    con_puts("\nrust panic\n");
    semihost_exit(3);
}
