#include "mcuprof/link/tcl_client.h"

#include <cstdio>

#include "mcuprof/link/error.h"

namespace mcuprof::transport {

namespace {

constexpr char terminator = '\x1a';   // OpenOCD's Tcl RPC message end (src/server/tcl_server.c)

// The variable the wrapped script leaves its result or error message in.
constexpr std::string_view result_variable = "_mcuprof_tcl_result";

// A short form of a script for error messages.
std::string excerpt(std::string_view script)
{
    std::string text(script.substr(0, 60));
    for (char& c : text)
        if (c == '\n' || c == '\r')
            c = ' ';
    return script.size() > 60 ? text + "..." : text;
}

} // namespace

TclClient::TclClient(const Endpoint& endpoint, Options options)
    : connection_(endpoint, options.timeout, "openocd tcl " + endpoint.text(),
                  "start OpenOCD first (its Tcl port is 6666 by default; -c \"tcl_port N\" sets it)"),
      endpoint_(endpoint), options_(options)
{
}

std::string TclClient::quote(std::string_view word)
{
    if (word.empty())
        return "{}";   // an empty word needs a form of its own
    std::string out;
    out.reserve(word.size() + 8);
    for (const char c : word) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == terminator)
            throw Error(Error::Kind::protocol, "openocd tcl", "", "a word cannot contain the byte 0x1a (it ends messages)");
        switch (c) {
        case '\n': out += "\\n"; continue;
        case '\r': out += "\\r"; continue;
        case '\t': out += "\\t"; continue;
        case ' ': case '$': case '[': case ']': case '{': case '}': case '"': case ';': case '\\': case '#':
            out += '\\';
            out += c;
            continue;
        default:
            break;
        }
        if (byte < 0x20 || byte == 0x7f) {
            // Three octal digits: a fixed-length escape both Tcl and OpenOCD's Jim Tcl read,
            // so a digit that follows cannot join it.
            char escape[8];
            std::snprintf(escape, sizeof escape, "\\%03o", byte);
            out += escape;
            continue;
        }
        out += c;
    }
    return out;
}

// A server that answers nothing at all within the time-out (GDB servers that do answer are
// recognised at once, in exchange()).
std::string TclClient::wrong_port_hint(const Error& e) const
{
    if (e.kind() != Error::Kind::timeout || answered_)
        return "";
    return "; is this OpenOCD's Tcl port (6666 by default)? A GDB port (3333 by default, for --gdb) answers nothing "
           "here";
}

std::string TclClient::exchange(const std::string& message, std::string_view what, Duration timeout)
{
    connection_.write(message, options_.timeout);
    for (;;) {
        if (std::optional<std::string> reply = take_message(buffer_)) {
            answered_ = true;
            return *reply;
        }
        try {
            connection_.read_some(buffer_, timeout);
        } catch (const Error& e) {
            throw Error(e.kind(), connection_.peer(), excerpt(what), e.problem() + wrong_port_hint(e));
        }
        if (!answered_ && !buffer_.empty() && (buffer_.front() == '+' || buffer_.front() == '$'))
            throw Error(Error::Kind::protocol, connection_.peer(), excerpt(what), gdb_server_answered());
        // OpenOCD's telnet server greets a client with telnet options (IAC = 0xFF, RFC 854)
        // and its banner; the Tcl port never speaks first.
        const bool telnet =
            !buffer_.empty() && (buffer_.front() == '\xff' || buffer_.starts_with("Open On-Chip Debugger"));
        if (!answered_ && telnet)
            throw Error(Error::Kind::protocol, connection_.peer(), excerpt(what),
                        "the server speaks telnet, as OpenOCD's telnet port (4444 by default) does: give "
                        "--openocd its Tcl port, 6666 by default");
    }
}

// A GDB server acknowledges (or answers) the first bytes at once. OpenOCD's GDB server halts
// the target when a client connects (startup.tcl's default gdb-attach handler, "halt 1000"),
// and QEMU's stops the machine; neither resumes it when the client leaves. So mcuprof
// leaves as a debugger would after `continue`: a fresh connection that sends the GDB
// remote protocol's 'c' packet (ours is left with a half-read packet in the server's
// parser), then closes.
std::string TclClient::gdb_server_answered()
{
    connection_.close();
    std::string resumed = "mcuprof resumed the target the server halted when mcuprof connected";
    try {
        TcpConnection again(endpoint_, options_.timeout, connection_.peer());
        again.write("+$c#63", options_.timeout);   // '+': the ack a client sends first; 'c' = 0x63
        // The server acks the packet ('+') and resumes in the same turn of its loop; a close
        // that arrived with the packet was seen first (measured on OpenOCD 0.12: the target
        // stayed halted), so the ack is waited for.
        std::string ack;
        while (ack.find('+') == std::string::npos)
            again.read_some(ack, options_.timeout);
    } catch (const Error& e) {
        resumed = "the server halts the target when a client connects, and mcuprof could not resume it (" +
                  e.problem() + ")";
    }
    return "the server speaks the GDB remote protocol: use --gdb for it (OpenOCD's Tcl port is 6666 by default); " +
           resumed;
}

std::string TclClient::eval(std::string_view script, Duration runs_for)
{
    if (script.find(terminator) != std::string_view::npos)
        throw Error(Error::Kind::protocol, connection_.peer(), excerpt(script), "a script cannot contain the byte 0x1a");
    // `catch` runs the script and tells success (0) from an error (1, or 2-4 for return,
    // break, continue); the reply is that code, a space, then the result or the message.
    // The script goes in as one quoted word, evaluated by `eval`, so whatever it contains
    // cannot break the wrapper's braces.
    std::string message = "format {%d %s} [catch {eval ";
    message += quote(script);
    message += "} ";
    message += result_variable;
    message += "] $";
    message += result_variable;
    message += terminator;
    return result_of(exchange(message, script, options_.timeout + runs_for), connection_.peer(), script);
}

std::optional<std::string> TclClient::take_message(std::string& buffer)
{
    const size_t end = buffer.find(terminator);
    if (end == std::string::npos)
        return std::nullopt;
    std::string message = buffer.substr(0, end);
    buffer.erase(0, end + 1);
    return message;
}

std::string TclClient::result_of(const std::string& reply, const std::string& peer, std::string_view script)
{
    const size_t space = reply.find(' ');
    const std::string code = reply.substr(0, space);
    const std::string text = space == std::string::npos ? std::string() : reply.substr(space + 1);
    if (code == "0" || code == "2")   // 2: the script ended with `return`, its value is the result
        return text;
    // OpenOCD's commands fail with their own negative codes (-107 for a failed memory read).
    const std::string digits = !code.empty() && code[0] == '-' ? code.substr(1) : code;
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
        throw Error(Error::Kind::protocol, peer, excerpt(script),
                    "not an answer to the wrapped script: '" + excerpt(reply) + "'");
    throw Error(Error::Kind::protocol, peer, excerpt(script), "OpenOCD: " + text);
}

std::string TclClient::command(std::initializer_list<std::string_view> words, Duration runs_for)
{
    std::string line;
    for (std::string_view word : words) {
        if (!line.empty())
            line += ' ';
        line += quote(word);
    }
    return eval("capture " + quote(line), runs_for);
}

} // namespace mcuprof::transport
