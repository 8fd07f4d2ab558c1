#pragma once
// A client of OpenOCD's Tcl RPC server (OpenOCD manual, "Tcl RPC server"; port 6666 by
// default): a script goes out followed by the byte 0x1a, its result comes back followed by
// 0x1a. Every script runs inside Tcl's `catch`, so a failing command comes back as its error
// message (thrown here) instead of being mistaken for a result; words that come from users
// (file names, symbols) are quoted with quote() and never pasted into a script as they are.
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "mcuprof/link/error.h"
#include "mcuprof/link/tcp_connection.h"

namespace mcuprof::transport {

class TclClient {
public:
    struct Options {
        Duration timeout = std::chrono::seconds(10);
    };

    // Connects within the timeout; errors name the peer as "openocd tcl HOST:PORT".
    TclClient(const Endpoint& endpoint, Options options);

    // Runs a Tcl script written by the caller and returns its result. Throws
    // transport::Error (protocol) with OpenOCD's message when the script fails, (timeout)
    // when no answer comes within the time-out plus `runs_for`, the time a script that
    // takes long on purpose (`profile SECONDS`) may take.
    std::string eval(std::string_view script, Duration runs_for = Duration::zero());
    // Runs one command from its words, each quoted, and returns what it printed followed by
    // its result (OpenOCD's `capture`), e.g. command({"mdw", "0x08000000", "4"}).
    std::string command(std::initializer_list<std::string_view> words, Duration runs_for = Duration::zero());

    // `word` as one Tcl word whatever it contains: every character Tcl treats specially
    // (space, $ [ ] { } " ; \ and the control characters) is escaped with a backslash or
    // written as \n, \r, \t or an octal escape. The byte 0x1a ends a message on this
    // protocol and cannot be sent: it throws transport::Error (protocol).
    static std::string quote(std::string_view word);

    const std::string& peer() const { return connection_.peer(); }

    // The protocol without I/O, for the client and its fuzz target:
    // the next whole message in `buffer` (up to 0x1a, removed with it), or nothing yet;
    static std::optional<std::string> take_message(std::string& buffer);
    // the result of the wrapped script from its reply "CODE TEXT" (eval), or
    // transport::Error (protocol) naming `peer` and `script`.
    static std::string result_of(const std::string& reply, const std::string& peer, std::string_view script);

private:
    std::string exchange(const std::string& message, std::string_view what, Duration timeout);
    std::string wrong_port_hint(const Error& e) const;
    std::string gdb_server_answered();

    TcpConnection connection_;
    Endpoint endpoint_;
    Options options_;
    std::string buffer_;
    bool answered_ = false;   // a whole Tcl reply came once: the port is right
};

} // namespace mcuprof::transport
