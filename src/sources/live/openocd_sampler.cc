#include "mcuprof/sources/openocd_sampler.h"

#include <sstream>

#include "openocd_halting_target.h"
#include "mcuprof/link/error.h"

namespace mcuprof::sources {

std::vector<uint32_t> OpenocdSampler::parse_words(const std::string& text, const std::string& peer,
                                                  const std::string& what)
{
    std::vector<uint32_t> words;
    std::istringstream in(text);
    std::string word;
    while (in >> word) {
        try {
            size_t used = 0;
            const unsigned long long v = std::stoull(word, &used, 0);
            if (used != word.size() || v > 0xFFFFFFFFull)
                throw std::invalid_argument(word);
            words.push_back(uint32_t(v));
        } catch (const std::exception&) {
            throw transport::Error(transport::Error::Kind::protocol, peer, what, "not a 32-bit word: '" + word + "'");
        }
    }
    return words;
}

uint32_t OpenocdSampler::parse_word(const std::string& text, const std::string& peer, const std::string& what)
{
    const std::vector<uint32_t> words = parse_words(text, peer, what);
    if (words.size() != 1)
        throw transport::Error(transport::Error::Kind::protocol, peer, what,
                               "read_memory gave " + std::to_string(words.size()) + " words, not 1");
    return words[0];
}

OpenocdSampler::OpenocdSampler(const OpenocdSamplerOptions& options)
    : LiveSampler(make_openocd_halting_target(options), options.pacing, options.extras, options.timeout)
{
}

} // namespace mcuprof::sources
