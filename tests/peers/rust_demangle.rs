// The peer the Rust names are checked against: the rustc-demangle crate (Debian's
// librust-rustc-demangle-dev), the demangler rustfilt, probe-rs, samply and the Firefox profiler
// use, in its alternate form ("{:#}": no legacy hash, no v0 crate disambiguator). One name a line
// in, its reading a line out; a name that is not Rust's comes out as it went in.
// Built by tests/CMakeLists.txt with Debian's rustc against the crate's source.
use std::io::{self, BufRead, Write};

fn main() {
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    for line in stdin.lock().lines() {
        let name = line.expect("stdin");
        writeln!(out, "{:#}", rustc_demangle::demangle(&name)).expect("stdout");
    }
}
