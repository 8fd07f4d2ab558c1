#include "mcuprof/vprobe/probe_server.h"

#include <algorithm>
#include <array>
#include <csignal>
#include <list>
#include <utility>   // before Boost.Asio 1.74: its awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

#include "mcuprof/vprobe/error.h"

namespace asio = boost::asio;
using asio::ip::tcp;

namespace mcuprof::vprobe {

// One client: its socket, its protocol and the answer on its way.
struct Session {
    Session(asio::io_context& io, std::unique_ptr<ByteProtocol> owned_protocol, ByteProtocol& used)
        : socket(io), latency(io), owned(std::move(owned_protocol)), protocol(used)
    {
    }
    tcp::socket socket;
    asio::steady_timer latency;
    std::unique_ptr<ByteProtocol> owned;
    ByteProtocol& protocol;
    std::array<char, 65536> buffer{};
    std::string replies;
    std::string peer;
};

struct ProbeServer::Impl {
    explicit Impl(ProbeServer& owner) : server(owner) {}

    ProbeServer& server;
    asio::io_context io;
    tcp::acceptor acceptor{io};
    asio::signal_set signals{io};
    asio::steady_timer idle{io};
    std::string listening;
    End end = End::stopped;
    bool finished = false;
    // Where sessions come from, and whether a second client may join the first.
    std::function<std::unique_ptr<Session>()> open_session;
    bool several = false;
    std::list<std::shared_ptr<Session>> sessions;
    unsigned in_flight = 0;   // requests arrived and not answered yet, over every session
    std::chrono::steady_clock::time_point probe_free{};   // when the probe ends its last command

    // SIGINT and SIGTERM end the session; SIGUSR1 calls `report` and waits again.
    void wait_for_signals(const std::function<void()>& report)
    {
        signals.async_wait([this, &report](const boost::system::error_code& e, int signal) {
            if (e)
                return;
            if (signal != SIGUSR1) {
                finish(End::stopped);
                return;
            }
            if (report)
                report();
            wait_for_signals(report);
        });
    }

    void finish(End why)
    {
        if (finished)
            return;
        finished = true;
        end = why;
        boost::system::error_code ignored;
        acceptor.close(ignored);
        for (const auto& session : sessions)
            close(*session);
        signals.cancel(ignored);
        idle.cancel();
        io.stop();
    }

    static void close(Session& session)
    {
        boost::system::error_code ignored;
        session.socket.shutdown(tcp::socket::shutdown_both, ignored);
        session.socket.close(ignored);
        session.latency.cancel();
    }

    // A client has gone: the server ends with the last one (`why` says how it went).
    void end_session(const std::shared_ptr<Session>& session, End why)
    {
        if (finished)
            return;
        if (why != End::quit)
            session->protocol.disconnected();
        close(*session);
        sessions.remove(session);
        if (server.on_disconnected)
            server.on_disconnected(session->peer);
        if (sessions.empty())
            finish(why);
        else
            arm_idle();
    }

    // The idle callback fires once no session has sent anything for idle_after and no
    // request is waiting for its answer.
    void arm_idle()
    {
        if (!server.on_idle || in_flight > 0 || sessions.empty())
            return;
        idle.expires_after(server.idle_after);
        idle.async_wait([this](const boost::system::error_code& e) {
            if (!e && !finished)
                server.on_idle();
        });
    }

    // Read what the client sent, perform it, answer, read again. A client waits for the
    // answer of a scan or a command before it sends the next one, so each chunk ends in a
    // write.
    void read_next(const std::shared_ptr<Session>& session)
    {
        arm_idle();
        session->socket.async_read_some(
            asio::buffer(session->buffer), [this, session](const boost::system::error_code& e, size_t n) {
                if (finished)
                    return;
                if (e) {
                    end_session(session, End::disconnected);
                    return;
                }
                idle.cancel();
                const auto arrived = std::chrono::steady_clock::now();
                session->replies.clear();
                const bool more = session->protocol.feed(std::string_view(session->buffer.data(), n), session->replies);
                answer(session, arrived, more);
            });
    }

    void answer(const std::shared_ptr<Session>& session, std::chrono::steady_clock::time_point arrived, bool more)
    {
        ++in_flight;
        auto next = [this, session, more](const boost::system::error_code& e, size_t) {
            --in_flight;
            if (finished)
                return;
            if (e)
                end_session(session, End::disconnected);
            else if (!more)
                end_session(session, End::quit);
            else
                read_next(session);
        };
        if (session->replies.empty()) {
            next({}, 0);
            return;
        }
        if (server.reply_latency.count() == 0 || !session->protocol.used_probe()) {
            asio::async_write(session->socket, asio::buffer(session->replies), next);
            return;
        }
        // One probe: its commands run one after another, whoever sent them.
        probe_free = std::max(arrived, probe_free) + server.reply_latency;
        session->latency.expires_at(probe_free);
        session->latency.async_wait([session, next](const boost::system::error_code& te) {
            if (te)
                next(te, 0);
            else
                asio::async_write(session->socket, asio::buffer(session->replies), next);
        });
    }

    void accept_next()
    {
        std::shared_ptr<Session> session = open_session();
        acceptor.async_accept(session->socket, [this, session](const boost::system::error_code& e) {
            if (finished)
                return;
            if (e) {
                if (e != asio::error::operation_aborted)
                    finish(End::disconnected);
                return;
            }
            boost::system::error_code ignored;
            session->socket.set_option(tcp::no_delay(true), ignored);   // one small answer per scan: no Nagle delay
            const auto peer = session->socket.remote_endpoint(ignored);
            session->peer = peer.address().to_string() + ":" + std::to_string(peer.port());
            sessions.push_back(session);
            if (several)
                accept_next();
            else
                acceptor.close(ignored);   // one session; a second client is refused
            if (server.on_connected)
                server.on_connected(session->peer);
            read_next(session);
        });
    }

    End run(bool stop_on_signals)
    {
        if (stop_on_signals) {
            signals.add(SIGINT);
            signals.add(SIGTERM);
            signals.add(SIGUSR1);
            wait_for_signals(server.on_report);
        }
        accept_next();
        io.restart();
        io.run();
        // Let the cancelled operations finish, so no handler outlives the protocols.
        io.restart();
        io.poll();
        sessions.clear();
        return end;
    }
};

ProbeServer::ProbeServer(const std::string& protocol_name, const std::string& host, uint16_t port)
    : impl_(std::make_unique<Impl>(*this))
{
    boost::system::error_code error;
    const auto address = asio::ip::make_address(host, error);
    impl_->listening = protocol_name + " " + host + ":" + std::to_string(port);
    if (error)
        throw Error(impl_->listening, "", "'" + host + "' is not an IP address");
    const tcp::endpoint endpoint(address, port);
    impl_->acceptor.open(endpoint.protocol(), error);
    if (!error)
        impl_->acceptor.set_option(tcp::acceptor::reuse_address(true), error);
    if (!error)
        impl_->acceptor.bind(endpoint, error);
    if (!error)
        impl_->acceptor.listen(asio::socket_base::max_listen_connections, error);
    if (error)
        throw Error(impl_->listening, "", "cannot listen: " + error.message());
}

ProbeServer::~ProbeServer() = default;

uint16_t ProbeServer::port() const
{
    boost::system::error_code error;
    const auto endpoint = impl_->acceptor.local_endpoint(error);
    return error ? 0 : endpoint.port();
}

void ProbeServer::stop()
{
    asio::post(impl_->io, [impl = impl_.get()] { impl->finish(End::stopped); });
}

ProbeServer::End ProbeServer::serve_with(ByteProtocol& protocol, bool stop_on_signals)
{
    Impl& s = *impl_;
    s.several = false;
    s.open_session = [&s, &protocol] { return std::make_unique<Session>(s.io, nullptr, protocol); };
    return s.run(stop_on_signals);
}

ProbeServer::End ProbeServer::serve_clients(const SessionFactory& open_session, bool stop_on_signals)
{
    Impl& s = *impl_;
    s.several = true;
    s.open_session = [&s, &open_session] {
        std::unique_ptr<ByteProtocol> protocol = open_session();
        ByteProtocol& used = *protocol;
        return std::make_unique<Session>(s.io, std::move(protocol), used);
    };
    return s.run(stop_on_signals);
}

} // namespace mcuprof::vprobe
