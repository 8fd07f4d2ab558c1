#pragma once
// The one place the OpenOCD Tcl scripts are composed (OpenOCD embeds Jim Tcl): its words and
// substitutions, scripts as lists of commands, OpenOCD's target prefixes and its 32-bit memory
// commands.
//
// Scopes. A script whose variables must stay its own is run with local(): as an anonymous proc
// (Jim's `apply`), so its variables are local to that proc and gone after it, and no name needs a
// prefix to keep clear of OpenOCD's scripts, the user's, or mcuprof's other scripts. What must
// outlive a round trip (a core's DHCSR as found, which a later script writes back to resume it)
// comes back in the answer and is written into the next script as a number. The scope costs no
// OpenOCD command: `apply`, `set` and the other Tcl built-ins run inside Jim, without OpenOCD's
// command dispatch (which polls the target before each of its own commands) and without probe
// traffic, so each round trip sends the probe the same commands in the same order as without it.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace mcuprof::sources::tcl {

// A number as a Tcl word: decimal, as OpenOCD's read_memory/write_memory take it.
std::string number(uint64_t value);
// {text}: one word, unsubstituted (text's braces balanced; OpenOCD target names have none).
std::string braced(std::string_view text);
// [command]: the command's result.
std::string bracketed(std::string_view command);
// "text": one word, with $ and [] substituted inside it.
std::string quoted(std::string_view text);
// [expr {expression}]
std::string expr(std::string_view expression);
// A command from its words, separated by spaces.
std::string command(std::initializer_list<std::string_view> words);
// `if {[catch {command} variable]} {set variable fallback}`: the variable holds the command's
// result, or `fallback` where it failed (fallback: a Tcl word).
std::string caught(std::string_view command, std::string_view variable, std::string_view fallback);

// OpenOCD's answers, parsed; both throw transport::Error (protocol) naming `peer` and `what`.
// read_memory's: 32-bit words, decimal or 0x hex, separated by spaces;
std::vector<uint32_t> parse_words(const std::string& text, const std::string& peer, const std::string& what);
// the same, for a read of one word: exactly one.
uint32_t parse_word(const std::string& text, const std::string& peer, const std::string& what);

// A script: commands run in order, separated by "; ".
class Script {
public:
    Script() = default;
    Script(std::initializer_list<std::string_view> commands);
    Script& operator<<(std::string_view command);      // appends one command
    Script& operator<<(const Script& more);            // appends its commands
    const std::string& text() const { return text_; }
    bool empty() const { return text_.empty(); }

private:
    std::string text_;
};
// {script}: a script as a word (the body of if, foreach, while, catch).
std::string braced(const Script& script);

// `capture {script}`: OpenOCD runs the script with its background polling of the target held
// off (OpenOCD 0.12's command.c, jim_capture), in the caller's scope, and returns what it logged.
std::string captured(const Script& script);
// The script in a scope of its own (`apply {{} {script}}`): its variables are local to it, its
// result is its last command's.
std::string local(const Script& script);

// OpenOCD's targets: each is a command whose subcommands act on it. The words put before a
// command for the target named `name` ("{NAME} "), or none for the current target (empty name).
std::string on_target(std::string_view name);
// OpenOCD's memory commands in 32-bit words (OpenOCD 0.12's target.c: `read_memory ADDRESS
// WIDTH COUNT` answers a list of words; `write_memory ADDRESS WIDTH DATA` takes a list), for the
// target whose prefix (on_target) is `on`. Address, count and data are Tcl words.
std::string read_words(std::string_view on, std::string_view address, std::string_view count);
std::string write_words(std::string_view on, std::string_view address, std::string_view data);
std::string read_words(std::string_view on, uint32_t address, uint32_t count);
std::string write_word(std::string_view on, uint32_t address, uint32_t value);

} // namespace mcuprof::sources::tcl
