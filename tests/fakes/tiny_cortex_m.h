#pragma once
// A QEMU-like gdbstub over a tiny ARMv7-M core, for the unit tests of the special-register
// stub and its users: r0-r15 and xpsr (regnum 25) in 'g' and 'p', no msp, psp or control in
// the description; memory bytes in a map, readable from 0x20000000; 's' runs one
// instruction, which must be MRS Rd, <spec_reg> or MSR <spec_reg>, Rn (ARMv7-M ARM A7.7.82,
// A7.7.83) or B . (E7FE), else the core "faults" (PC unchanged). r13 is the active stack
// pointer: MSP in Handler mode or with CONTROL.SPSEL 0, else PSP. Unprivileged Thread mode
// (CONTROL.nPRIV) reads MSP and PSP as 0 and ignores MSR, as the architecture says.
#include <cstdio>
#include <map>
#include <mutex>
#include <string>

#include "mcuprof/link/rsp_packet.h"

namespace fakes {

struct TinyCortexM {
    std::mutex lock;
    uint32_t r[16] = {};
    uint32_t xpsr = 0;
    uint32_t msp = 0, psp = 0;   // the banked one that is not active; the active one is r[13]
    uint32_t control = 0, primask = 0, basepri = 0, faultmask = 0;
    std::map<uint32_t, uint8_t> memory;
    bool refuse_writes = false;
    int unreadable = -1;   // a register number whose 'p' gets an error

    static std::string word_hex(uint32_t v)
    {
        char text[9];
        std::snprintf(text, sizeof text, "%02x%02x%02x%02x", v & 0xFF, (v >> 8) & 0xFF, (v >> 16) & 0xFF, v >> 24);
        return text;
    }
    static uint32_t hex_word(const std::string& h) { return *mcuprof::transport::rsp::le32_from_hex(h); }

    bool on_psp() const { return (xpsr & 0x1FF) == 0 && (control & 2) != 0; }
    bool unprivileged() const { return (xpsr & 0x1FF) == 0 && (control & 1) != 0; }
    // The banked stack pointers with r13 as the active one.
    uint32_t current_msp() const { return on_psp() ? msp : r[13]; }
    uint32_t current_psp() const { return on_psp() ? r[13] : psp; }

    uint32_t* special(uint32_t sysm)
    {
        switch (sysm) {
        case 16: return &primask;
        case 17: return &basepri;
        case 19: return &faultmask;
        case 20: return &control;
        default: return nullptr;
        }
    }

    // One instruction at PC; false when it is not one the core knows.
    bool execute()
    {
        const uint32_t pc = r[15];
        auto halfword = [&](uint32_t a) { return uint32_t(memory[a]) | uint32_t(memory[a + 1]) << 8; };
        const uint32_t first = halfword(pc), second = halfword(pc + 2);
        if (first == 0xE7FE)
            return true;   // B .
        // Executed only outside an IT block (xPSR bits 26:25, 15:10 clear).
        if ((xpsr & 0x0600FC00u) != 0)
            return false;
        const uint32_t sysm = second & 0xFF;
        if (first == 0xF3EF && (second & 0xF000) == 0x8000) {   // MRS Rd, <spec_reg>
            const unsigned rd = (second >> 8) & 0xF;
            if (sysm == 8 || sysm == 9)
                r[rd] = unprivileged() ? 0 : sysm == 8 ? current_msp() : current_psp();
            else if (uint32_t* reg = special(sysm))
                r[rd] = *reg;
            else
                return false;
        } else if ((first & 0xFFF0) == 0xF380 && (second & 0xFF00) == 0x8800) {   // MSR <spec_reg>, Rn
            const uint32_t value = r[first & 0xF];
            if (unprivileged()) {
            } else if (sysm == 8 || sysm == 9) {
                const bool active = (sysm == 9) == on_psp();
                (active ? r[13] : sysm == 8 ? msp : psp) = value & ~3u;
            } else if (sysm == 20) {
                const bool was_on_psp = on_psp();
                const uint32_t msp_now = current_msp(), psp_now = current_psp();
                control = (xpsr & 0x1FF) != 0 ? (value & 5) | (control & 2) : value & 7;
                if (on_psp() != was_on_psp) {
                    r[13] = on_psp() ? psp_now : msp_now;
                    (on_psp() ? msp : psp) = on_psp() ? msp_now : psp_now;
                }
            } else if (uint32_t* reg = special(sysm)) {
                *reg = value & 0xFF;
            } else {
                return false;
            }
        } else {
            return false;
        }
        r[15] = pc + 4;
        return true;
    }

    std::string answer(const std::string& p)
    {
        using mcuprof::transport::rsp::frame;
        std::lock_guard<std::mutex> guard(lock);
        if (p.rfind("qSupported", 0) == 0)
            return frame("PacketSize=1000;qXfer:features:read+");
        if (p.rfind("qXfer:features:read:target.xml:0,", 0) == 0) {
            std::string x = "l<?xml version=\"1.0\"?><target><feature name=\"m\">";
            for (int i = 0; i <= 12; ++i)
                x += "<reg name=\"r" + std::to_string(i) + "\" bitsize=\"32\"/>";
            x += "<reg name=\"sp\" bitsize=\"32\"/><reg name=\"lr\" bitsize=\"32\"/><reg name=\"pc\" bitsize=\"32\"/>"
                 "<reg name=\"xpsr\" bitsize=\"32\" regnum=\"25\"/></feature></target>";
            return frame(x);
        }
        if (p == "?" || p == "\x03")
            return frame("T05thread:01;");
        if (p == "c")
            return "";   // running: the stop reply comes with the next interrupt
        if (p == "s") {
            execute();
            return frame("T05thread:01;");
        }
        if (p == "g") {
            std::string g;
            for (uint32_t v : r)
                g += word_hex(v);
            return frame(g + word_hex(xpsr));
        }
        if (p[0] == 'p') {
            const unsigned n = unsigned(std::stoul(p.substr(1), nullptr, 16));
            if (int(n) == unreadable)
                return frame("E01");
            return frame(word_hex(n == 25 ? xpsr : r[n]));
        }
        if (p[0] == 'P') {
            const size_t eq = p.find('=');
            const unsigned n = unsigned(std::stoul(p.substr(1, eq - 1), nullptr, 16));
            (n == 25 ? xpsr : r[n]) = hex_word(p.substr(eq + 1));
            return frame("OK");
        }
        if (p[0] == 'm' || p[0] == 'M') {
            unsigned address = 0, length = 0;
            std::sscanf(p.c_str() + 1, "%x,%x", &address, &length);
            if (address < 0x20000000u)
                return frame("E14");
            if (p[0] == 'm') {
                std::string hex;
                for (unsigned i = 0; i < length; ++i) {
                    char b[3];
                    std::snprintf(b, sizeof b, "%02x", memory[address + i]);
                    hex += b;
                }
                return frame(hex);
            }
            if (refuse_writes)
                return frame("E01");
            std::string bytes;
            mcuprof::transport::rsp::from_hex(p.substr(p.find(':') + 1), bytes);
            for (unsigned i = 0; i < bytes.size(); ++i)
                memory[address + i] = uint8_t(bytes[i]);
            return frame("OK");
        }
        return frame("");
    }
};

} // namespace fakes
