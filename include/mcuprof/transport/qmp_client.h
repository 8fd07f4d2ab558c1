#pragma once
// A client of QEMU's machine protocol, QMP (JSON objects, one per line): the greeting,
// qmp_capabilities, commands and their replies; asynchronous events are kept apart.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcuprof/transport/tcp_connection.h"

namespace mcuprof::transport {

class QmpClient {
public:
    QmpClient(const Endpoint& endpoint, Duration timeout);

    // {"execute": command, "arguments": arguments}; returns "return", throws on "error".
    nlohmann::json execute(const std::string& command, const nlohmann::json& arguments = nlohmann::json::object());
    // Events that arrived while waiting for replies, oldest first; the list is emptied.
    std::vector<nlohmann::json> take_events();

private:
    nlohmann::json read_message();

    TcpConnection connection_;
    Duration timeout_;
    std::string buffer_;
    std::vector<nlohmann::json> events_;
};

} // namespace mcuprof::transport
