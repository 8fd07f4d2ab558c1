#include "mcuprof/target/tcl_script.h"

#include <sstream>
#include <stdexcept>

#include "mcuprof/link/error.h"

namespace mcuprof::sources::tcl {

std::string number(uint64_t value)
{
    return std::to_string(value);
}

std::string braced(std::string_view text)
{
    return "{" + std::string(text) + "}";
}

std::string bracketed(std::string_view command)
{
    return "[" + std::string(command) + "]";
}

std::string quoted(std::string_view text)
{
    return "\"" + std::string(text) + "\"";
}

std::string expr(std::string_view expression)
{
    return bracketed("expr " + braced(expression));
}

std::string command(std::initializer_list<std::string_view> words)
{
    std::string text;
    for (std::string_view word : words) {
        if (!text.empty())
            text += ' ';
        text += word;
    }
    return text;
}

std::string caught(std::string_view command, std::string_view variable, std::string_view fallback)
{
    return "if " + braced(bracketed("catch " + braced(command) + " " + std::string(variable))) + " " +
           braced("set " + std::string(variable) + " " + std::string(fallback));
}

Script::Script(std::initializer_list<std::string_view> commands)
{
    for (std::string_view c : commands)
        *this << c;
}

Script& Script::operator<<(std::string_view command)
{
    if (!text_.empty())
        text_ += "; ";
    text_ += command;
    return *this;
}

Script& Script::operator<<(const Script& more)
{
    if (!more.empty())
        *this << std::string_view(more.text());
    return *this;
}

std::string braced(const Script& script)
{
    return braced(std::string_view(script.text()));
}

std::string captured(const Script& script)
{
    return "capture " + braced(script);
}

std::string local(const Script& script)
{
    return "apply " + braced("{} " + braced(script));
}

std::string on_target(std::string_view name)
{
    return name.empty() ? std::string() : braced(name) + " ";
}

std::string read_words(std::string_view on, std::string_view address, std::string_view count)
{
    return std::string(on) + command({"read_memory", address, "32", count});
}

std::string write_words(std::string_view on, std::string_view address, std::string_view data)
{
    return std::string(on) + command({"write_memory", address, "32", data});
}

std::string read_words(std::string_view on, uint32_t address, uint32_t count)
{
    return read_words(on, number(address), number(count));
}

std::string write_word(std::string_view on, uint32_t address, uint32_t value)
{
    return write_words(on, number(address), number(value));
}

std::vector<uint32_t> parse_words(const std::string& text, const std::string& peer,
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

uint32_t parse_word(const std::string& text, const std::string& peer, const std::string& what)
{
    const std::vector<uint32_t> words = parse_words(text, peer, what);
    if (words.size() != 1)
        throw transport::Error(transport::Error::Kind::protocol, peer, what,
                               "read_memory gave " + std::to_string(words.size()) + " words, not 1");
    return words[0];
}

} // namespace mcuprof::sources::tcl
