// The classic traps of comparing samplers, each recognised from the data of a diff. The
// traps and the measurements behind them are in docs/method.md.
#include <cstdio>
#include <set>

#include "mcuprof/profile/diff.h"
#include "mcuprof/image/symbols.h"
#include "mcuprof/profile/text_table.h"

namespace mcuprof::core {
namespace {

// CPS (ARMv7-M ARM A7.7.24, encoding T1): 1011 0110 011 im(0) 0 A I F; cpsie i = 0xB662.
constexpr uint16_t cpsie_i = 0xB662;
// "Tiny": a few instructions, like an irq_on of `cpsie i; bx lr`.
constexpr uint32_t tiny_function_bytes = 16;
// A row is concentrated when a side caught it at under this fraction of the addresses the
// other side saw in it, with at least this many samples per address the other side saw.
constexpr double few_addresses_fraction = 0.25;
constexpr double few_addresses_samples_per_address = 4;
constexpr uint64_t few_addresses_min_seen = 20;
// An invisible function worth a hint holds at least this share on the side that sees it;
// below it are the sampler's own routine and the dump's printing, which a truth census
// of the whole run also counts.
constexpr double invisible_min_percent = 1.0;


const Function* function_named(const SymbolTable& code, const std::string& name)
{
    for (const Function& f : code.functions())
        if (f.name == name)
            return &f;
    return nullptr;
}

// The address of a cpsie i inside the function or right before it, if any.
std::optional<uint32_t> cpsie_at(const SymbolTable& code, const Function& f)
{
    for (uint32_t at = f.start >= 2 ? f.start - 2 : f.start; at < f.start + f.size; at += 2)
        if (code.halfword(at) == cpsie_i)
            return at;
    return std::nullopt;
}

struct Side {
    const char* label;   // "A" or "B"
    const Profile& profile;
};

void interrupt_shadow(const ProfileDiff& diff, const Side& a, const Side& b, const SymbolTable& code,
                      std::vector<DiffHint>& hints, std::set<std::string>& explained)
{
    for (const DiffRow& r : diff.rows) {
        if (!r.flagged)
            continue;
        const bool a_hot = r.a_percent > r.b_percent;
        const Side& hot = a_hot ? a : b;
        const Side& other = a_hot ? b : a;
        if (!interrupt_sampled(hot.profile) || interrupt_sampled(other.profile))
            continue;
        // By line or address, the row's enclosing function is the one to look at.
        const Function* f = function_named(code, r.function);
        if (f == nullptr || f->size > tiny_function_bytes)
            continue;
        const auto cpsie = cpsie_at(code, *f);
        if (!cpsie)
            continue;
        explained.insert(r.name);
        const std::string where = r.name == r.function ? r.name : r.name + " (in " + r.function + ")";
        hints.push_back(
            {"interrupt-shadow", r.name,
             printf_string("%s is %u bytes with cpsie i at 0x%08x, and %.2f %% by the on-chip sampler (%s) against %.2f %% "
                           "(%s): the sampler's interrupt waits while interrupts are disabled and is taken on the first "
                           "instruction after cpsie i, so this is the time of the code that ran with interrupts "
                           "disabled before it, not of %s",
                           r.function.c_str(), unsigned(f->size), unsigned(*cpsie), a_hot ? r.a_percent : r.b_percent,
                           hot.label, a_hot ? r.b_percent : r.a_percent, other.label, where.c_str())});
    }
}

void lockstep(const Side& side, std::vector<DiffHint>& hints)
{
    if (!side.profile.lockstep)
        return;
    const LockstepFinding& l = *side.profile.lockstep;
    hints.push_back({"lockstep", "",
                     printf_string("%s's samples repeat every %zu samples over %zu distinct addresses (lockstep): the "
                                   "sampler is in step with a loop of the program and sees only a few points of it, so "
                                   "its shares are not independent samples; randomize the sampling interval",
                                   side.label, l.period, l.distinct)});
}

// A side sampled by halting an emulator on the wall clock: its shares follow the emulator's
// host time, so the differences say more about QEMU than about the program.
void emulator_bias(const Side& side, std::vector<DiffHint>& hints)
{
    for (const Warning& w : side.profile.warnings)
        if (w.kind == "emulator-bias")
            hints.push_back({"emulator-bias", "", std::string(side.label) + ": " + w.message});
}

void few_addresses(const ProfileDiff& diff, std::vector<DiffHint>& hints, const std::set<std::string>& explained)
{
    for (const DiffRow& r : diff.rows) {
        if (explained.count(r.name) != 0)
            continue;
        for (int side = 0; side < 2; ++side) {
            const bool sampled = side == 0 ? !diff.a_exact : !diff.b_exact;
            const double samples = side == 0 ? r.a_samples : r.b_samples;
            const uint64_t caught = side == 0 ? r.a_distinct : r.b_distinct;
            const uint64_t seen = side == 0 ? r.b_distinct : r.a_distinct;
            if (!sampled || seen < few_addresses_min_seen || samples < few_addresses_samples_per_address * seen ||
                double(caught) >= few_addresses_fraction * double(seen))
                continue;
            hints.push_back({"few-addresses", r.name,
                             printf_string("%s: %.0f samples in %s fell on %llu distinct addresses, where %s saw %llu: "
                                           "independent samples would spread over them; the sampling visits a few points "
                                           "only (lockstep with a loop, or samples held back to one place)",
                                           r.name.c_str(), samples, side == 0 ? "A" : "B", (unsigned long long)caught,
                                           side == 0 ? "B" : "A", (unsigned long long)seen)});
        }
    }
}

bool handler_name(const std::string& name)
{
    return name.ends_with("_Handler") || name.ends_with("IRQHandler");
}

void invisible_handler(const ProfileDiff& diff, const Side& a, const Side& b, std::vector<DiffHint>& hints,
                       std::set<std::string>& explained)
{
    for (int side = 0; side < 2; ++side) {
        const Side& blind = side == 0 ? a : b;
        const Side& other = side == 0 ? b : a;
        if (!interrupt_sampled(blind.profile) || interrupt_sampled(other.profile))
            continue;
        // Where the hidden time went: the row the on-chip side has most in excess. When that
        // is the instruction after cpsie i, the missing rows are the masked region, which
        // the interrupt-shadow hint explains already.
        auto gain_of = [&](const DiffRow& r) { return side == 0 ? -r.delta_pp : r.delta_pp; };
        const DiffRow* gainer = nullptr;
        for (const DiffRow& r : diff.rows)
            if (r.flagged && gain_of(r) > 0 && (gainer == nullptr || gain_of(r) > gain_of(*gainer)))
                gainer = &r;
        if (gainer != nullptr && explained.count(gainer->name) != 0)
            continue;
        for (const DiffRow& r : diff.rows) {
            const double blind_samples = side == 0 ? r.a_samples : r.b_samples;
            const double seen = side == 0 ? r.b_percent : r.a_percent;
            if (!r.flagged || blind_samples > 0 || seen < invisible_min_percent)
                continue;
            std::string message = printf_string("%s: %.2f %% by %s, not one sample by the on-chip sampler (%s). ", r.name.c_str(),
                                                seen, other.label, blind.label);
            message += handler_name(r.name)
                           ? printf_string("%s is an interrupt handler: at the sampler's priority or a more urgent one it "
                                           "is never preempted by the sampler, which cannot see it",
                                           r.name.c_str())
                           : printf_string("An interrupt does not preempt a handler of equal or more urgent priority: if %s "
                                           "runs in such a handler, the sampler cannot see it",
                                           r.name.c_str());
            if (gainer != nullptr) {
                message += printf_string("; its time lands after the handler returns (%s has %+.2f points on-chip)",
                                         gainer->name.c_str(), gain_of(*gainer));
                explained.insert(gainer->name);   // the gain is this hint's other half
            }
            message += ". Give the sampler the most urgent priority";
            hints.push_back({"invisible-handler", r.name, message});
        }
    }
}

} // namespace

bool interrupt_sampled(const Profile& profile)
{
    return profile.origin.starts_with("on-chip sampler");
}

std::vector<DiffHint> find_hints(const ProfileDiff& diff, const Profile& a, const Profile& b, const SymbolTable* code)
{
    std::vector<DiffHint> hints;
    const Side side_a{"A", a};
    const Side side_b{"B", b};
    std::set<std::string> explained;   // rows one hint accounts for already
    if (code != nullptr)
        interrupt_shadow(diff, side_a, side_b, *code, hints, explained);
    invisible_handler(diff, side_a, side_b, hints, explained);
    lockstep(side_a, hints);
    lockstep(side_b, hints);
    emulator_bias(side_a, hints);
    emulator_bias(side_b, hints);
    few_addresses(diff, hints, explained);
    return hints;
}

} // namespace mcuprof::core
