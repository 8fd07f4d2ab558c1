#include "mcuprof/sampler/child_process.h"

#include <cerrno>
#include <cstring>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mcuprof/inputs/error.h"

namespace mcuprof::sources {

ChildProcess::ChildProcess(const std::vector<std::string>& args, const std::string& log_path) : log_path_(log_path)
{
    // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
    std::vector<char*> argv;
    for (const std::string& a : args)
        argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (log < 0 || null < 0)
        throw Error(log_path, "", "cannot create " + args[0] + "'s log: " + std::strerror(errno));
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
        ::setpgid(0, 0);                      // a terminal's Ctrl-C goes to mcuprof alone
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);   // mcuprof killed: the child goes too
        if (::getppid() != parent)            // mcuprof died before the line above
            ::_exit(127);
        ::dup2(null, STDIN_FILENO);
        ::dup2(null, STDOUT_FILENO);
        ::dup2(log, STDERR_FILENO);
        ::execvp(argv[0], argv.data());
        const char* why = std::strerror(errno);
        const char prefix[] = "cannot run ";
        (void)!::write(STDERR_FILENO, prefix, sizeof prefix - 1);
        (void)!::write(STDERR_FILENO, argv[0], std::strlen(argv[0]));
        (void)!::write(STDERR_FILENO, ": ", 2);
        (void)!::write(STDERR_FILENO, why, std::strlen(why));
        ::_exit(127);
    }
    const int fork_errno = errno;
    ::close(log);
    ::close(null);
    if (pid_ < 0)
        throw Error(args[0], "", std::string("cannot start: ") + std::strerror(fork_errno));
}

ChildProcess::~ChildProcess()
{
    stop(std::chrono::seconds(5));
}

bool ChildProcess::running()
{
    if (status_ || pid_ <= 0)
        return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        status_ = status;
        return false;
    }
    return true;
}

bool ChildProcess::wait(std::chrono::milliseconds timeout)
{
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (running()) {
        if (std::chrono::steady_clock::now() >= deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

void ChildProcess::stop(std::chrono::milliseconds grace)
{
    if (!running())
        return;
    if (grace.count() > 0) {
        ::kill(pid_, SIGTERM);
        if (wait(grace))
            return;
    }
    ::kill(pid_, SIGKILL);
    int status = 0;
    if (::waitpid(pid_, &status, 0) == pid_)
        status_ = status;
}

std::string ChildProcess::how_it_ended() const
{
    if (!status_)
        return "still runs";
    if (WIFEXITED(*status_))
        return "exited with status " + std::to_string(WEXITSTATUS(*status_));
    return "was killed by signal " + std::to_string(WTERMSIG(*status_));
}

bool ChildProcess::exited_cleanly() const
{
    return status_ && WIFEXITED(*status_) && WEXITSTATUS(*status_) == 0;
}

std::string command_line(const std::vector<std::string>& args)
{
    std::string line;
    for (const std::string& a : args)
        line += (line.empty() ? "" : " ") + a;
    return line;
}

uint16_t free_loopback_port(const std::string& what)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        throw Error(what, "port", std::string("cannot open a socket: ") + std::strerror(errno));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    uint16_t port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0)
        port = ntohs(address.sin_port);
    ::close(fd);
    if (port == 0)
        throw Error(what, "port", "no free TCP port on 127.0.0.1");
    return port;
}

} // namespace mcuprof::sources
