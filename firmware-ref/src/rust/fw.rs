//! The Rust reference firmware (docs/firmware-ref.md, "Rust reference firmware"): a signal chain
//! of the shapes whose names Rust's mangling spells in its own ways, built by Debian's rustc
//! against a core built from source (rust.cmake). The C start-up (startup.c) calls `main`, which
//! runs ROUNDS rounds and returns, ending the run by semihosting.
//!
//! Every shape is here because its name or its frames differ from C's:
//! - a trait with two implementations called through `dyn Stage` (vtable calls, impl paths
//!   `<fw::dsp::Fir<8> as fw::dsp::Stage>::step`);
//! - a const generic `Fir<const N: usize>` at two lengths;
//! - one generic function at two types (`checksum::<u8>`, `checksum::<u16>`: under legacy
//!   mangling both print `fw::checksum`, two rows told apart by address);
//! - closures through iterator adaptors, and one closure handed to a non-inlined generic;
//! - two modules each with a function of the same name (`left::mix`, `right::mix`);
//! - a panic path (a bounds check and an assertion the data never trips).
#![no_std]

use core::panic::PanicInfo;
use core::ptr;

extern "C" {
    fn rust_panicked() -> !;
}

#[panic_handler]
fn panic(_info: &PanicInfo) -> ! {
    // No formatting machinery: the C side prints a fixed line and ends the run with status 3.
    unsafe { rust_panicked() }
}

pub mod dsp {
    /// One stage of the chain, called through `dyn Stage`.
    pub trait Stage {
        fn step(&mut self, x: i32) -> i32;
    }

    /// A FIR filter whose length is a const generic: `Fir<8>` and `Fir<16>` are two types.
    pub struct Fir<const N: usize> {
        pub taps: [i32; N],
        pub history: [i32; N],
        pub at: usize,
    }

    impl<const N: usize> Fir<N> {
        pub const fn new(seed: i32) -> Self {
            let mut taps = [0; N];
            let mut i = 0;
            while i < N {
                taps[i] = seed + (i as i32) * 3 - (N as i32);
                i += 1;
            }
            Fir { taps, history: [0; N], at: 0 }
        }
    }

    impl<const N: usize> Stage for Fir<N> {
        #[inline(never)]
        fn step(&mut self, x: i32) -> i32 {
            self.history[self.at] = x;
            self.at = if self.at + 1 == N { 0 } else { self.at + 1 };
            let mut acc: i32 = 0;
            for i in 0..N {
                let j = (self.at + i) % N;
                acc = acc.wrapping_add(self.taps[i].wrapping_mul(self.history[j]));
            }
            acc >> 4
        }
    }

    /// A second-order section in fixed point.
    pub struct Biquad {
        pub b: [i32; 3],
        pub a: [i32; 2],
        pub state: [i32; 2],
    }

    impl Stage for Biquad {
        #[inline(never)]
        fn step(&mut self, x: i32) -> i32 {
            let y = (self.b[0].wrapping_mul(x) >> 8).wrapping_add(self.state[0]);
            self.state[0] = (self.b[1].wrapping_mul(x) >> 8)
                .wrapping_sub(self.a[0].wrapping_mul(y) >> 8)
                .wrapping_add(self.state[1]);
            self.state[1] = (self.b[2].wrapping_mul(x) >> 8).wrapping_sub(self.a[1].wrapping_mul(y) >> 8);
            y
        }
    }
}

/// Two modules, one function name: `fw::left::mix` and `fw::right::mix`.
pub mod left {
    #[inline(never)]
    pub fn mix(x: u32) -> u32 {
        let mut v = x;
        for _ in 0..24 {
            v = v.rotate_left(5) ^ v.wrapping_mul(0x9E37_79B9);
        }
        v
    }
}

pub mod right {
    #[inline(never)]
    pub fn mix(x: u32) -> u32 {
        let mut v = x;
        for k in 0..12u32 {
            v = v.wrapping_add(k).rotate_right(3) ^ (v >> 7);
        }
        v
    }
}

/// What `checksum` reads: a word it can widen to u32.
pub trait Word: Copy {
    fn widen(self) -> u32;
}
impl Word for u8 {
    fn widen(self) -> u32 {
        self as u32
    }
}
impl Word for u16 {
    fn widen(self) -> u32 {
        self as u32
    }
}

/// One generic at two types: two symbols that legacy mangling prints alike.
#[inline(never)]
pub fn checksum<T: Word>(data: &[T]) -> u32 {
    let mut sum: u32 = 0;
    for (i, w) in data.iter().enumerate() {
        sum = sum.rotate_left(1) ^ w.widen().wrapping_mul(i as u32 | 1);
    }
    sum
}

/// A generic that takes a closure and is not inlined: its instance is named by the closure's
/// type (`fw::apply::<fw::round::{closure#1}>` under v0).
#[inline(never)]
pub fn apply<F: Fn(i32) -> i32>(f: F, data: &mut [i32]) {
    for x in data.iter_mut() {
        *x = f(*x);
    }
}

/// The chain, through the vtable: the stages are read through a volatile pointer so that the
/// calls stay dynamic at every optimization level.
#[inline(never)]
pub fn run_chain(stages: &mut [&mut dyn dsp::Stage], input: &[i32], output: &mut [i32]) {
    for (x, y) in input.iter().zip(output.iter_mut()) {
        let mut v = *x;
        for stage in stages.iter_mut() {
            v = stage.step(v);
        }
        *y = v;
    }
}

/// Closures through iterator adaptors: map, filter, fold.
#[inline(never)]
pub fn energy(data: &[i32]) -> u32 {
    data.iter()
        .map(|&x| (x >> 2).wrapping_mul(x >> 2) as u32)
        .filter(|e| e & 3 != 3)
        .fold(0u32, |acc, e| acc.wrapping_add(e))
}

const BLOCK: usize = 64;

static mut FIR8: dsp::Fir<8> = dsp::Fir::new(5);
static mut FIR16: dsp::Fir<16> = dsp::Fir::new(-2);
static mut BIQUAD: dsp::Biquad = dsp::Biquad { b: [64, 128, 64], a: [-90, 40], state: [0, 0] };
static mut INPUT: [i32; BLOCK] = [0; BLOCK];
static mut OUTPUT: [i32; BLOCK] = [0; BLOCK];
static mut BYTES: [u8; 96] = [0; 96];
static mut HALVES: [u16; 48] = [0; 48];
/// Read volatile: the data never reach it, but the compiler cannot know, so the panic path stays.
static mut LIMIT: usize = BLOCK;
static mut SINK: u32 = 0;

#[inline(never)]
fn round(seed: u32) -> u32 {
    // Safety: one thread of execution, and no interrupt touches these.
    unsafe {
        let limit = ptr::read_volatile(ptr::addr_of!(LIMIT));
        let input = &mut *ptr::addr_of_mut!(INPUT);
        let output = &mut *ptr::addr_of_mut!(OUTPUT);
        for (i, x) in input.iter_mut().enumerate() {
            *x = (left::mix(seed ^ i as u32) & 0xFFF) as i32 - 0x800;
        }
        let bytes = &mut *ptr::addr_of_mut!(BYTES);
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = right::mix(seed.wrapping_add(i as u32)) as u8;
        }
        let halves = &mut *ptr::addr_of_mut!(HALVES);
        for (i, h) in halves.iter_mut().enumerate() {
            *h = (bytes[i] as u16) << 8 | bytes[i + 48] as u16;
        }
        let mut stages: [&mut dyn dsp::Stage; 3] =
            [&mut *ptr::addr_of_mut!(FIR8), &mut *ptr::addr_of_mut!(FIR16), &mut *ptr::addr_of_mut!(BIQUAD)];
        let picked = &mut stages[..ptr::read_volatile(&3usize)];
        run_chain(picked, input, output);
        let gain = (seed & 3) as i32 + 1;
        apply(|x| x.wrapping_mul(gain) >> 1, output);
        // The panic path: `limit` is BLOCK, so this index is always in bounds.
        let last = output[limit - 1];
        assert!(last != i32::MIN, "saturated");
        checksum(&bytes[..]) ^ checksum(&halves[..]) ^ energy(&output[..])
    }
}

/// About 9 million instructions in all at -O2 (the truth plugin's count), a few tenths of a second
/// in QEMU.
const ROUNDS: u32 = 400;

#[no_mangle]
pub extern "C" fn main() -> i32 {
    let mut seed: u32 = 0x1234_5678;
    for _ in 0..ROUNDS {
        seed = round(seed) ^ seed.rotate_left(7);
    }
    unsafe { ptr::write_volatile(ptr::addr_of_mut!(SINK), seed) };
    0
}
