#include "mcuprof/error.h"

namespace mcuprof {
namespace {

std::string compose(const std::string& file, const std::string& place, const std::string& problem)
{
    std::string text = file;
    if (!place.empty())
        text += ", " + place;
    if (!text.empty())
        text += ": ";
    return text + problem;
}

} // namespace

Error::Error(std::string file, std::string place, const std::string& problem)
    : std::runtime_error(compose(file, place, problem)), file_(std::move(file)), place_(std::move(place)),
      problem_(problem)
{
}

} // namespace mcuprof
