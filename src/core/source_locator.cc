#include "mcuprof/core/source_locator.h"

#include <llvm/DebugInfo/DIContext.h>
#include <llvm/DebugInfo/Symbolize/Symbolize.h>
#include <optional>

#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>

#include "firmware_object.h"
#include "mcuprof/core/firmware.h"
#include "mcuprof/core/demangle.h"

namespace mcuprof::core {

struct SourceLocator::Impl {
    std::optional<Firmware> owned;   // parse(): the image this locator was given in memory
    // The image's object, checked once; the symbolizer reads this object, not the path
    // again, so what it reads is what was checked (and no separate debug file is looked for).
    const llvm::object::ObjectFile* object = nullptr;
    llvm::symbolize::LLVMSymbolizer symbolizer{make_options()};
    bool broken = false;   // the DWARF could not be read: every lookup is empty

    static llvm::symbolize::LLVMSymbolizer::Options make_options()
    {
        llvm::symbolize::LLVMSymbolizer::Options options;
        options.Demangle = false;   // demangled as c++filt does it (demangle.h), not by LLVM
        options.UseSymbolTable = true;
        options.RelativeAddresses = false;
        options.PathStyle = llvm::DILineInfoSpecifier::FileLineInfoKind::AbsoluteFilePath;
        return options;
    }
};

SourceLocator::SourceLocator(const Firmware& firmware) : impl_(std::make_unique<Impl>())
{
    // Corrupt debugging entries are an error here, before LLVM reads them.
    firmware.check_dwarf();
    impl_->object = &object_of(firmware);
}

std::unique_ptr<SourceLocator> SourceLocator::parse(std::string_view image, const std::string& name)
{
    Firmware firmware = Firmware::parse(image, name);
    auto locator = std::make_unique<SourceLocator>(firmware);
    locator->impl_->owned.emplace(std::move(firmware));   // the object stays where it was: behind the pimpl
    return locator;
}

SourceLocator::~SourceLocator() = default;

const std::vector<SourceFrame>& SourceLocator::frames(uint32_t address)
{
    auto cached = cache_.find(address);
    if (cached != cache_.end())
        return cached->second;

    std::vector<SourceFrame> chain;
    if (!impl_->broken) {
        llvm::object::SectionedAddress where{address, llvm::object::SectionedAddress::UndefSection};
        auto info = impl_->symbolizer.symbolizeInlinedCode(*impl_->object, where);
        if (!info) {
            llvm::consumeError(info.takeError());
            impl_->broken = true;
        } else {
            for (uint32_t i = 0; i < info->getNumberOfFrames(); ++i) {
                const llvm::DILineInfo& frame = info->getFrame(i);
                SourceFrame out;
                if (frame.FunctionName != llvm::DILineInfo::BadString)
                    out.symbol = frame.FunctionName;
                    out.function = demangle(out.symbol);
                if (frame.FileName != llvm::DILineInfo::BadString && frame.Line != 0) {
                    out.file = frame.FileName;
                    out.line = frame.Line;
                    out.column = frame.Column;
                }
                if (out.function.empty() && out.file.empty())
                    continue;
                chain.push_back(std::move(out));
            }
        }
    }
    return cache_.emplace(address, std::move(chain)).first->second;
}

std::string SourceLocator::line_of(const std::vector<SourceFrame>& frames)
{
    if (frames.empty() || frames.front().file.empty())
        return {};
    return frames.front().file + ":" + std::to_string(frames.front().line);
}

} // namespace mcuprof::core
