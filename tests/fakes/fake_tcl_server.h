#pragma once
// OpenOCD's Tcl RPC server on loopback, for the Tcl client's unit tests: it collects each
// message up to the byte 0x1a, hands it to a script and sends back the script's answer in
// the pieces the script chooses, each piece after a short pause (to cut replies across TCP
// reads), then 0x1a. An answer of nullopt sends nothing; "\x04" closes the connection.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "loopback_server.h"

namespace fakes {

class FakeTclServer : public LoopbackServer {
public:
    using Script = std::function<std::optional<std::vector<std::string>>(const std::string& message)>;

    explicit FakeTclServer(Script script) : script_(std::move(script))
    {
        start({}, [this](std::string_view bytes) {
            pending_.append(bytes);
            size_t end;
            while ((end = pending_.find('\x1a')) != std::string::npos) {
                const std::string message = pending_.substr(0, end);
                pending_.erase(0, end + 1);
                if (!answer(message))
                    return false;
            }
            return true;
        });
    }

    ~FakeTclServer() override { stop(); }

private:
    // false: the script asked to close the connection.
    bool answer(const std::string& message)
    {
        log(message);
        const auto pieces = script_(message);
        if (!pieces)
            return true;
        if (!pieces->empty() && pieces->front() == "\x04") {
            hang_up();
            return false;
        }
        for (const std::string& piece : *pieces) {
            send(piece);
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        send("\x1a");
        return true;
    }

    Script script_;
    std::string pending_;
};

} // namespace fakes
