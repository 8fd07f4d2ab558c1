#pragma once
#include "mcuprof/error.h"

namespace mcuprof::transport {

// Raised by the protocol clients: a connection refused, dropped or silent past its
// timeout, a malformed packet. file() names the peer ("gdb 127.0.0.1:1234").
class Error : public mcuprof::Error {
public:
    enum class Kind { connect, closed, timeout, protocol };
    Error(Kind kind, std::string peer, std::string place, const std::string& problem)
        : mcuprof::Error(std::move(peer), std::move(place), problem), kind_(kind)
    {
    }
    Kind kind() const { return kind_; }

private:
    Kind kind_;
};

} // namespace mcuprof::transport
