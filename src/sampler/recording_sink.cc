#include "mcuprof/sampler/recording_sink.h"

namespace mcuprof::sources {

RecordingSink::RecordingSink(RecordingWriter& writer, std::function<void(uint64_t samples)> flushed)
    : writer_(writer), flushed_callback_(std::move(flushed))
{
}

void RecordingSink::sample(const LiveSample& s)
{
    writer_.sample(s);
    ++samples_;
    const auto now = std::chrono::steady_clock::now();
    if (now - flushed_ >= std::chrono::milliseconds(100)) {
        writer_.flush();
        flushed_ = now;
        if (flushed_callback_)
            flushed_callback_(samples_);
    }
}

void RecordingSink::event(const std::string& kind, const std::string& message)
{
    writer_.notice(kind, message);
    writer_.flush();
}

void RecordingSink::task(uint32_t control_block, const std::string& name)
{
    writer_.task(control_block, name);
}

RunHeader recording_header(const SampleSource& source, const core::ImageSet& images)
{
    RunHeader header = source.run_header();
    header.images = firmware_fields(images);
    header.started =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    return header;
}

} // namespace mcuprof::sources
