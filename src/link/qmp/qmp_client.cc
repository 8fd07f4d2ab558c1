#include "mcuprof/link/qmp_client.h"

#include <utility>

#include "mcuprof/link/error.h"

namespace mcuprof::transport {

QmpClient::QmpClient(const Endpoint& endpoint, Duration timeout)
    : connection_(endpoint, timeout, "qmp " + endpoint.text()), timeout_(timeout)
{
    const nlohmann::json greeting = read_message();
    if (!greeting.contains("QMP"))
        throw Error(Error::Kind::protocol, connection_.peer(), "greeting", "not a QMP server: " + greeting.dump());
    execute("qmp_capabilities");
}

std::optional<nlohmann::json> QmpClient::take_message(std::string& buffer, const std::string& peer)
{
    for (;;) {
        const size_t newline = buffer.find('\n');
        if (newline == std::string::npos)
            return std::nullopt;
        const std::string line = buffer.substr(0, newline);
        buffer.erase(0, newline + 1);
        if (line.find_first_not_of(" \r\t") == std::string::npos)
            continue;
        nlohmann::json message = nlohmann::json::parse(line, nullptr, false);
        if (message.is_discarded() || !message.is_object())
            throw Error(Error::Kind::protocol, peer, "", "not a JSON object: " + line.substr(0, 80));
        return message;
    }
}

nlohmann::json QmpClient::result_of(const nlohmann::json& reply, const std::string& command, const std::string& peer)
{
    if (auto error = reply.find("error"); error != reply.end()) {
        const nlohmann::json desc = error->is_object() ? error->value("desc", nlohmann::json()) : nlohmann::json();
        throw Error(Error::Kind::protocol, peer, command, desc.is_string() ? desc.get<std::string>() : error->dump());
    }
    if (auto result = reply.find("return"); result != reply.end())
        return *result;
    throw Error(Error::Kind::protocol, peer, command, "unexpected message: " + reply.dump());
}

nlohmann::json QmpClient::read_message()
{
    for (;;) {
        if (std::optional<nlohmann::json> message = take_message(buffer_, connection_.peer()))
            return std::move(*message);
        connection_.read_some(buffer_, timeout_);
    }
}

nlohmann::json QmpClient::execute(const std::string& command, const nlohmann::json& arguments)
{
    nlohmann::json request = {{"execute", command}};
    if (!arguments.empty())
        request["arguments"] = arguments;
    connection_.write(request.dump() + "\r\n", timeout_);
    for (;;) {
        nlohmann::json message = read_message();
        if (message.contains("event")) {
            events_.push_back(std::move(message));
            continue;
        }
        return result_of(message, command, connection_.peer());
    }
}

std::vector<nlohmann::json> QmpClient::take_events()
{
    return std::exchange(events_, {});
}

} // namespace mcuprof::transport
