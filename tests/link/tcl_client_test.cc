#include <doctest/doctest.h>

#include <cstdlib>

#include "../fakes/fake_tcl_server.h"
#include "mcuprof/link/error.h"
#include "mcuprof/link/tcl_client.h"

using namespace mcuprof::transport;

namespace {

// What the client sends for a script: the script as one word, evaluated inside `catch`.
std::string wrapped(const std::string& quoted_script)
{
    return "format {%d %s} [catch {eval " + quoted_script + "} _mcuprof_tcl_result] $_mcuprof_tcl_result";
}

TclClient::Options quick(int milliseconds = 2000)
{
    TclClient::Options o;
    o.timeout = std::chrono::milliseconds(milliseconds);
    return o;
}

Endpoint local(uint16_t port)
{
    return Endpoint{"127.0.0.1", port};
}

} // namespace

TEST_CASE("tcl client: quote makes any string one word; 0x1a cannot be sent")
{
    CHECK(TclClient::quote("mdw") == "mdw");
    CHECK(TclClient::quote("0x08000000") == "0x08000000");
    CHECK(TclClient::quote("") == "{}");
    CHECK(TclClient::quote("a b") == "a\\ b");
    CHECK(TclClient::quote("$x[y]{z}\"q\";#\\") == "\\$x\\[y\\]\\{z\\}\\\"q\\\"\\;\\#\\\\");
    CHECK(TclClient::quote("line\nnext\tcol\r") == "line\\nnext\\tcol\\r");
    CHECK(TclClient::quote(std::string("\x01" "7", 2)) == "\\0017");   // octal, fixed length: the 7 stays a 7
    CHECK_THROWS_AS(TclClient::quote("a\x1a"), Error);
}

TEST_CASE("tcl client: a script goes out inside catch, ended by 0x1a; its result comes back")
{
    fakes::FakeTclServer server([](const std::string& message) -> std::optional<std::vector<std::string>> {
        if (message == wrapped("expr\\ \\{1+2\\}"))
            return std::vector<std::string>{"0 3"};
        if (message == wrapped("capture\\ mdw\\\\\\ 0x08000000\\\\\\ 4"))
            // the reply cut across TCP reads
            return std::vector<std::string>{"0 0x08000000: 2002", "0000 08000191 ", "080001d5 080001d5 \n"};
        if (message == wrapped("return\\ x"))
            return std::vector<std::string>{"2 x"};
        return std::vector<std::string>{"1 invalid command name"};
    });
    TclClient client(local(server.port()), quick());
    CHECK(client.eval("expr {1+2}") == "3");
    CHECK(client.command({"mdw", "0x08000000", "4"}) == "0x08000000: 20020000 08000191 080001d5 080001d5 \n");
    CHECK(client.eval("return x") == "x");   // `return` at the top: code 2, a result
    const auto got = server.received();
    REQUIRE(got.size() == 3);
    CHECK(got[0] == wrapped("expr\\ \\{1+2\\}"));
}

TEST_CASE("tcl client: a failing command is an error with OpenOCD's message, not a result")
{
    fakes::FakeTclServer server([](const std::string& message) -> std::optional<std::vector<std::string>> {
        if (message.find("nosuch") != std::string::npos)
            return std::vector<std::string>{"1 invalid command name \"nosuch\""};
        if (message.find("mdw") != std::string::npos)
            return std::vector<std::string>{"-107 Failed to read memory at 0x30000000"};
        return std::vector<std::string>{"not the wrapper's answer"};
    });
    TclClient client(local(server.port()), quick());
    CHECK_THROWS_WITH_AS(client.eval("nosuch 1"), doctest::Contains("OpenOCD: invalid command name \"nosuch\""), Error);
    CHECK_THROWS_WITH_AS(client.command({"mdw", "0x30000000"}), doctest::Contains("Failed to read memory"), Error);
    CHECK_THROWS_WITH_AS(client.eval("other"), doctest::Contains("not an answer"), Error);
    CHECK_THROWS_WITH_AS(client.eval("other"), doctest::Contains("openocd tcl 127.0.0.1:"), Error);
    CHECK_THROWS_AS(client.eval(std::string("set x \x1a")), Error);
}

TEST_CASE("tcl client: a silent server is a time-out, a closed one an error")
{
    fakes::FakeTclServer server([](const std::string&) -> std::optional<std::vector<std::string>> {
        return std::nullopt;
    });
    TclClient client(local(server.port()), quick(100));
    try {
        client.eval("sleep 100000");
        FAIL("no time-out");
    } catch (const Error& e) {
        CHECK(e.kind() == Error::Kind::timeout);
    }
    // The close comes at once; a minute is a bound for a loaded machine, where 100 ms was not
    // always enough for the fake server's thread to run and the client saw a time-out.
    fakes::FakeTclServer closing([](const std::string&) -> std::optional<std::vector<std::string>> {
        return std::vector<std::string>{"\x04"};
    });
    TclClient patient(local(closing.port()), quick(60000));
    try {
        patient.eval("close");
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.kind() == Error::Kind::closed);
    }
}

// Run by tests/vprobe/test_vprobe_openocd.py with a real OpenOCD's Tcl port in
// MCUPROF_OPENOCD_TCL (OpenOCD on the virtual probe in front of QEMU); passes alone.
TEST_CASE("tcl client: against a real OpenOCD, when MCUPROF_OPENOCD_TCL names its Tcl port")
{
    const char* where = std::getenv("MCUPROF_OPENOCD_TCL");
    if (where == nullptr)
        return;
    TclClient client(Endpoint::parse(where, "MCUPROF_OPENOCD_TCL"), quick(10000));
    CHECK(client.eval("expr {1+2}") == "3");
    // Any string survives quoting through Jim Tcl, byte for byte.
    const std::string nasty = "a b\n$x [y] {z} \\ \" ; # \t\x01" "7 end\\";
    CHECK(client.eval("return " + TclClient::quote(nasty)) == nasty);
    CHECK(client.eval("set v " + TclClient::quote("{unbalanced")) == "{unbalanced");
    CHECK(client.command({"targets"}).find("cortex_m") != std::string::npos);
    CHECK(client.command({"mdw", "0x08000000", "2"}).rfind("0x08000000: ", 0) == 0);
    CHECK_THROWS_WITH_AS(client.eval("no_such_command 1"), doctest::Contains("invalid command name"), Error);
    CHECK_THROWS_WITH_AS(client.command({"mdw", "0x30000000"}), doctest::Contains("Failed to read memory"), Error);
}

namespace {

// OpenOCD's telnet port as a client sees it: telnet options (IAC WILL ECHO, IAC WILL
// SUPPRESS-GO-AHEAD, IAC DONT LINEMODE), the banner and a prompt, then an echo of whatever
// comes in.
class FakeTelnetPort : public fakes::LoopbackServer {
public:
    FakeTelnetPort()
    {
        start("\xff\xfb\x01\xff\xfb\x03\xff\xfe\x22Open On-Chip Debugger\r\n> ", [this](std::string_view bytes) {
            send(std::string(bytes));
            return true;
        });
    }
    ~FakeTelnetPort() override { stop(); }
};

} // namespace

TEST_CASE("tcl client: OpenOCD's telnet port is named at once, not waited on")
{
    FakeTelnetPort telnet;
    // A minute to answer: a time-out would be the wait the user saw; the greeting ends it first.
    TclClient client(local(telnet.port()), quick(60000));
    try {
        client.eval("version");
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.kind() == Error::Kind::protocol);
        CHECK(std::string(e.what()).find("telnet port (4444 by default)") != std::string::npos);
        CHECK(std::string(e.what()).find("6666") != std::string::npos);
    }
}
