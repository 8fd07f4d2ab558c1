#pragma once
// Two profiles side by side: each row's shares, their difference and its z-score, with
// the rows that differ by more than chance flagged.
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "mcuprof/profile/profile.h"

namespace mcuprof::core {

struct DiffRow {
    std::string name;
    double a_samples = 0;
    double b_samples = 0;
    double a_percent = 0;
    double b_percent = 0;
    double delta_pp = 0;   // b - a, percentage points
    double z = 0;          // delta over its standard error under "same share"; ±inf when the
                           // error is 0 (both sides exact, or a share of exactly 0 or 1 that moved)
    bool flagged = false;  // |z| above the threshold: with both sides exact, any move
    uint64_t a_distinct = 0;   // distinct sampled addresses in the row, each side
    uint64_t b_distinct = 0;
    std::string function;  // the enclosing function of a line or address row; a function row's own name
    // The z rests on a side whose errors are only lower bounds (Profile::errors.lower_bounds:
    // back-to-back PCSR reads with no bursts, as in OpenOCD's gmon.out): the true |z| is
    // smaller by an unknown factor, so the row is not flagged on it.
    // (Last, so that the rows' aggregate initializers before it stay as they are.)
    bool z_upper_bound = false;
};

// A classic trap of comparing samplers (docs/method.md), found in the data of a diff.
struct DiffHint {
    std::string kind;       // "interrupt-shadow", "lockstep", "few-addresses", "invisible-handler",
                            // "emulator-bias"
    std::string function;   // the row it is about; empty for a whole profile
    std::string message;
};

struct ProfileDiff {
    std::string a_origin;
    std::string b_origin;
    double a_total = 0;
    double b_total = 0;
    bool a_exact = false;
    bool b_exact = false;
    double threshold = 3;
    // The whole runs' instructions, when each side knows them (Profile::run_instructions).
    std::optional<uint64_t> a_instructions;
    std::optional<uint64_t> b_instructions;
    // Each side's errors are only lower bounds (Profile::errors.lower_bounds).
    bool a_lower_bounds = false;
    bool b_lower_bounds = false;
    std::vector<DiffRow> rows;   // by the larger of the two shares, descending
    std::vector<DiffHint> hints;
};

// B's run over A's, when both know their instructions: what a change cost in total, which
// shares cannot show (a share is of its own run).
std::optional<double> total_ratio(const ProfileDiff& diff);
// The totals' gate: B's run took more than `percent` % more instructions than A's. False
// when a side has no total (the command refuses the gate then, before it compares).
bool total_grew(const ProfileDiff& diff, double percent);
// The lines every diff format shows, in words: how many rows are flagged and on what rule
// ("3 of 14 rows differ by more than 3 standard errors", or with two censuses "3 of 14 rows
// moved; both sides are exact counts, so every move is real"; with a side of lower-bound
// errors, that its z-scores are upper bounds and flag nothing); the totals ("" when a side
// has none): "instructions of the whole run: A 1066725, B 2412111, B/A 2.261 (+126.13 %)".
std::string flagged_summary(const ProfileDiff& diff);
std::string totals_summary(const ProfileDiff& diff);
// A z-score as the tables show it: one decimal, or +inf / -inf when the error is 0.
std::string z_text(double z);
// Both sides are censuses: no difference is chance, so every row that moved is flagged.
inline bool both_exact(const ProfileDiff& diff) { return diff.a_exact && diff.b_exact; }

class SymbolTable;

// The z-score of each row tests "both profiles have the same share p". With both sides
// sampled it is the two-proportion test with the pooled share; when one side is a census
// (truth counts), only the sampled side varies: z = (q - p) / sqrt(p(1-p)/N). When both are
// censuses nothing varies: a row that moved has z = ±inf and is flagged.
// `code`, when given, is the firmware both profiles come from: the hints read its
// instructions (cpsie i) and function sizes.
ProfileDiff diff_profiles(const Profile& a, const Profile& b, double threshold = 3.0,
                          const SymbolTable* code = nullptr);

// The hints for a diff (called by diff_profiles):
// - interrupt-shadow: a flagged row hot by an on-chip (interrupt) sampler but not by the
//   other, in a tiny function holding or right after `cpsie i`: the samples of a region with
//   interrupts disabled land on the first instruction after it (docs/method.md, trap 2).
// - lockstep: a side's sample sequence repeats (its lockstep finding).
// - few-addresses: a row with many samples on one side caught at a small fraction of the
//   addresses the other side saw in it: the sampling visits a few points only.
// - invisible-handler: a flagged row of at least 1 % with no sample by an on-chip sampler
//   that the other side sees: code in a handler of equal or more urgent priority than the
//   sampler's.
std::vector<DiffHint> find_hints(const ProfileDiff& diff, const Profile& a, const Profile& b,
                                 const SymbolTable* code);

// The profile came from an interrupt-driven on-chip sampler (its dump or ring), the only
// kind of sampler that cannot enter masked regions and handlers.
bool interrupt_sampled(const Profile& profile);

// The CI gate: rows whose share grew (B over A) by more than `fail_above_pp` percentage
// points and by more than the diff's z threshold, largest growth first.
std::vector<DiffRow> regressions(const ProfileDiff& diff, double fail_above_pp);

// One self-contained page: both origins, the hints, the rows with A and B bars, flagged
// rows marked; sortable like the profile page.
void write_html(const ProfileDiff& diff, std::ostream& out);
void write_text(const ProfileDiff& diff, std::ostream& out, size_t max_rows = 0);
nlohmann::json to_json(const ProfileDiff& diff);
// A GitHub-flavoured Markdown summary for a pull-request comment or a CI job summary: the
// verdict of each gate asked (`fail_above_pp`, `fail_total_above_percent`), both origins, the
// totals, and the rows that moved
// beyond the threshold (all rows when none did), then the hints. max_rows 0: every row.
void write_markdown(const ProfileDiff& diff, std::ostream& out, std::optional<double> fail_above_pp,
                    std::optional<double> fail_total_above_percent = std::nullopt, size_t max_rows = 0);

} // namespace mcuprof::core
