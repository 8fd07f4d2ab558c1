// The floor of a halting sampler over GDB RSP: the same three exchanges mcuprof makes per
// sample (interrupt and stop reply, 'g' and its reply, 'c'), on plain POSIX sockets, with
// nothing else: no target description, no random intervals, no recording.
//
//   rsp_floor PORT SAMPLES     prints "SAMPLES SECONDS"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

int connection = -1;
std::string pending;

void send_text(const std::string& s)
{
    if (::send(connection, s.data(), s.size(), MSG_NOSIGNAL) != ssize_t(s.size()))
        std::exit(3);
}

// Reads up to the end of the next packet ("$...#xx"), acknowledges it, returns its payload.
std::string next_packet()
{
    for (;;) {
        const size_t start = pending.find('$');
        if (start != std::string::npos) {
            const size_t hash = pending.find('#', start);
            if (hash != std::string::npos && hash + 2 < pending.size()) {
                std::string payload = pending.substr(start + 1, hash - start - 1);
                pending.erase(0, hash + 3);
                send_text("+");
                return payload;
            }
        }
        char buffer[4096];
        const ssize_t n = ::recv(connection, buffer, sizeof buffer, 0);
        if (n <= 0)
            std::exit(4);
        pending.append(buffer, size_t(n));
    }
}

} // namespace

int main(int argc, char** argv)
{
    if (argc != 3)
        return 1;
    connection = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(uint16_t(std::atoi(argv[1])));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(connection, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
        return 2;
    int one = 1;
    ::setsockopt(connection, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const long samples = std::atol(argv[2]);

    send_text("$?#3f");
    next_packet();   // may be an unsolicited stop reply on connection (QEMU)
    send_text("$c#63");
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < samples; ++i) {
        send_text("\x03");
        std::string stop;
        do
            stop = next_packet();
        while (stop.empty() || (stop[0] != 'T' && stop[0] != 'S'));
        send_text("$g#67");
        next_packet();
        send_text("$c#63");
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    send_text("\x03");
    next_packet();
    send_text("$D#44");
    std::printf("%ld %.6f\n", samples, seconds);
    return 0;
}
