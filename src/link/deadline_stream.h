#pragma once
// What the TCP and the serial stream share: Boost.Asio reads and writes bounded by a
// deadline, their errors as transport::Error naming the peer.
#include <string>
#include <string_view>

#include <boost/asio.hpp>

#include "mcuprof/link/byte_stream.h"
#include "mcuprof/link/error.h"

namespace mcuprof::transport::detail {

template <typename Stream>
struct DeadlineStream {
    boost::asio::io_context io;
    Stream stream{io};

    // Runs the io_context until the operation's handler ran or the time is up. On time-out
    // the operation is cancelled and run to its handler, which then sees operation_aborted,
    // or success if it completed in the meantime: the caller looks at the error code, so
    // no byte that arrived is lost.
    void run_until_done(const bool& done, Duration timeout)
    {
        io.restart();
        io.run_for(timeout);
        if (done)
            return;
        boost::system::error_code ignored;
        stream.cancel(ignored);
        io.restart();
        io.run();
    }

    void write(std::string_view bytes, Duration timeout, const std::string& peer)
    {
        boost::system::error_code error;
        bool done = false;
        boost::asio::async_write(stream, boost::asio::buffer(bytes.data(), bytes.size()),
                                 [&](const boost::system::error_code& e, size_t) {
                                     error = e;
                                     done = true;
                                 });
        run_until_done(done, timeout);
        if (error == boost::asio::error::operation_aborted)
            throw Error(Error::Kind::timeout, peer, "", "write did not complete within the time-out");
        if (error)
            throw Error(Error::Kind::closed, peer, "", "connection lost while writing: " + error.message());
    }

    bool try_read_some(std::string& into, Duration timeout, const std::string& peer)
    {
        char buffer[16384];
        boost::system::error_code error;
        size_t got = 0;
        bool done = false;
        stream.async_read_some(boost::asio::buffer(buffer), [&](const boost::system::error_code& e, size_t n) {
            error = e;
            got = n;
            done = true;
        });
        run_until_done(done, timeout);
        if (error == boost::asio::error::operation_aborted)
            return false;
        if (error == boost::asio::error::eof || error == boost::asio::error::connection_reset)
            throw Error(Error::Kind::closed, peer, "", "connection closed by the peer");
        if (error)
            throw Error(Error::Kind::closed, peer, "", "connection lost: " + error.message());
        into.append(buffer, got);
        return true;
    }

    void read_some(std::string& into, Duration timeout, const std::string& peer)
    {
        if (!try_read_some(into, timeout, peer))
            throw Error(Error::Kind::timeout, peer, "", "no answer within the time-out");
    }
};

} // namespace mcuprof::transport::detail
