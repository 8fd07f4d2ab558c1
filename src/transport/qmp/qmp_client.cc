#include "mcuprof/transport/qmp_client.h"

#include <utility>

#include "mcuprof/transport/error.h"

namespace mcuprof::transport {

QmpClient::QmpClient(const Endpoint& endpoint, Duration timeout)
    : connection_(endpoint, timeout, "qmp " + endpoint.text()), timeout_(timeout)
{
    const nlohmann::json greeting = read_message();
    if (!greeting.contains("QMP"))
        throw Error(Error::Kind::protocol, connection_.peer(), "greeting", "not a QMP server: " + greeting.dump());
    execute("qmp_capabilities");
}

nlohmann::json QmpClient::read_message()
{
    for (;;) {
        const size_t newline = buffer_.find('\n');
        if (newline != std::string::npos) {
            const std::string line = buffer_.substr(0, newline);
            buffer_.erase(0, newline + 1);
            if (line.find_first_not_of(" \r\t") == std::string::npos)
                continue;
            nlohmann::json message = nlohmann::json::parse(line, nullptr, false);
            if (message.is_discarded() || !message.is_object())
                throw Error(Error::Kind::protocol, connection_.peer(), "", "not a JSON object: " + line.substr(0, 80));
            return message;
        }
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
        if (message.contains("error"))
            throw Error(Error::Kind::protocol, connection_.peer(), command,
                        message["error"].value("desc", message["error"].dump()));
        if (message.contains("return"))
            return message["return"];
        throw Error(Error::Kind::protocol, connection_.peer(), command, "unexpected message: " + message.dump());
    }
}

std::vector<nlohmann::json> QmpClient::take_events()
{
    return std::exchange(events_, {});
}

} // namespace mcuprof::transport
