#pragma once
// One status line on standard error, rewritten in place, for long work (a live recording,
// reading a large file). Only on a terminal: a redirected standard error gets nothing.
#include <chrono>
#include <string>

namespace mcuprof::cli {

class Progress {
public:
    Progress();   // enabled when standard error is a terminal
    explicit Progress(bool enabled) : enabled_(enabled) {}
    ~Progress();
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    // Rewrites the line, at most every 100 ms (a terminal needs no more).
    void show(const std::string& text);
    // Ends the line, if one was shown, so that what follows starts on its own line.
    void end();

    // "[##########..........]  50 %  12.0 of 24.0 MB"
    static std::string bar(size_t done, size_t total);

private:
    bool enabled_;
    bool shown_ = false;
    std::chrono::steady_clock::time_point last_{};
};

} // namespace mcuprof::cli
