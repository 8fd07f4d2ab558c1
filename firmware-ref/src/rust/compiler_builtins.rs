// The compiler_builtins crate every no_std crate links (rustc adds `extern crate compiler_builtins`
// to each), here empty: the intrinsics it would hold (division, shifts of 64-bit values, the
// __aeabi_* helpers) come from libgcc at the link, as a C image's do, and memcpy and friends
// from runtime.c. Built with the same rustc as core, so it needs no crate from crates.io.
#![feature(no_core, compiler_builtins)]
#![no_core]
#![compiler_builtins]
#![no_builtins]
