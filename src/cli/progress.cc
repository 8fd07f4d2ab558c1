#include "progress.h"

#include <cstdio>

#include <unistd.h>

namespace mcuprof::cli {

Progress::Progress() : enabled_(::isatty(STDERR_FILENO) != 0) {}

Progress::~Progress()
{
    end();
}

void Progress::show(const std::string& text)
{
    if (!enabled_)
        return;
    const auto now = std::chrono::steady_clock::now();
    if (shown_ && now - last_ < std::chrono::milliseconds(100))
        return;
    last_ = now;
    shown_ = true;
    // \r returns to the start of the line, \033[K clears what a longer text left (ECMA-48 EL).
    std::fprintf(stderr, "\r%s\033[K", text.c_str());
    std::fflush(stderr);
}

void Progress::end()
{
    if (shown_)
        std::fprintf(stderr, "\n");
    shown_ = false;
}

std::string Progress::bar(size_t done, size_t total)
{
    constexpr int width = 30;
    const double fraction = total > 0 ? double(done) / double(total) : 0;
    const int filled = int(fraction * width + 0.5);
    char text[128];
    std::snprintf(text, sizeof text, "[%s%s] %3.0f %%  %.1f of %.1f MB",
                  std::string(size_t(filled), '#').c_str(), std::string(size_t(width - filled), '.').c_str(),
                  100 * fraction, double(done) / 1e6, double(total) / 1e6);
    return text;
}

} // namespace mcuprof::cli
