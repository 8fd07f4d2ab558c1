#pragma once
// A client of QEMU's machine protocol, QMP (JSON objects, one per line): the greeting,
// qmp_capabilities, commands and their replies; asynchronous events are kept apart.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcuprof/link/tcp_connection.h"

namespace mcuprof::transport {

class QmpClient {
public:
    QmpClient(const Endpoint& endpoint, Duration timeout);

    // {"execute": command, "arguments": arguments}; returns "return", throws on "error".
    nlohmann::json execute(const std::string& command, const nlohmann::json& arguments = nlohmann::json::object());
    // Events that arrived while waiting for replies, oldest first; the list is emptied.
    std::vector<nlohmann::json> take_events();

    // The protocol without I/O, for the client and its fuzz target (errors name `peer`):
    // the next message in `buffer` (a JSON object on a line, removed with it; blank lines
    // skipped), or nothing while no whole line is there; transport::Error if it is no object;
    static std::optional<nlohmann::json> take_message(std::string& buffer, const std::string& peer);
    // a reply's "return", or transport::Error for an "error" or anything else (not for events).
    static nlohmann::json result_of(const nlohmann::json& reply, const std::string& command, const std::string& peer);

private:
    nlohmann::json read_message();

    TcpConnection connection_;
    Duration timeout_;
    std::string buffer_;
    std::vector<nlohmann::json> events_;
};

} // namespace mcuprof::transport
