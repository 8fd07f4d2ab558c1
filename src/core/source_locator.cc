#include "mcuprof/core/source_locator.h"

#include <optional>

#include <llvm/DebugInfo/DIContext.h>
#include <llvm/DebugInfo/DWARF/DWARFCompileUnit.h>
#include <llvm/DebugInfo/DWARF/DWARFContext.h>
#include <llvm/DebugInfo/Symbolize/SymbolizableObjectFile.h>

#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>

#include "firmware_object.h"
#include "mcuprof/core/firmware.h"
#include "mcuprof/core/demangle.h"

namespace mcuprof::core {

struct SourceLocator::Impl {
    std::optional<Firmware> owned;   // parse(): the image this locator was given in memory
    const Firmware* firmware = nullptr;
    // The symbolizer's module for the image's object (what llvm-symbolizer builds per file),
    // over a DWARF context kept here too: the locator asks it which unit holds an address, so
    // that the unit is checked before the module reads it. The object is the image's, not
    // the path read again: what it reads is what was checked (and no separate debug file is
    // looked for).
    std::unique_ptr<llvm::symbolize::SymbolizableObjectFile> module;
    llvm::DWARFContext* dwarf = nullptr;   // owned by `module`
    bool broken = false;                   // the symbolizer could not read the image: every lookup is empty

    void build()
    {
        const llvm::object::ObjectFile& object = object_of(*firmware);
        auto context = llvm::DWARFContext::create(object);   // as llvm-symbolizer makes it
        dwarf = context.get();
        auto made = llvm::symbolize::SymbolizableObjectFile::create(&object, std::move(context),
                                                                    /*UntagAddresses=*/false);
        if (!made) {
            llvm::consumeError(made.takeError());
            dwarf = nullptr;
            broken = true;
            return;
        }
        module = std::move(*made);
    }
};

SourceLocator::SourceLocator(const Firmware& firmware) : impl_(std::make_unique<Impl>())
{
    // The unit headers now (corrupt ones are an error here); each unit's entries before the
    // first lookup that reads them.
    firmware.check_dwarf_units();
    impl_->firmware = &firmware;
}

std::unique_ptr<SourceLocator> SourceLocator::parse(std::string_view image, const std::string& name)
{
    Firmware firmware = Firmware::parse(image, name);
    auto locator = std::make_unique<SourceLocator>(firmware);
    locator->impl_->owned.emplace(std::move(firmware));   // the object stays where it was: behind the pimpl
    locator->impl_->firmware = &*locator->impl_->owned;
    return locator;
}

SourceLocator::~SourceLocator() = default;

const std::vector<SourceFrame>& SourceLocator::frames(uint32_t address)
{
    auto cached = cache_.find(address);
    if (cached != cache_.end())
        return cached->second;

    if (!impl_->module && !impl_->broken)
        impl_->build();
    std::vector<SourceFrame> chain;
    if (!impl_->broken) {
        // Finding the unit reads every unit's own entry (checked with the headers); the lookup
        // then reads the unit's entries, and those of the units they refer to.
        if (const llvm::DWARFCompileUnit* unit = impl_->dwarf->getCompileUnitForCodeAddress(address))
            impl_->firmware->check_dwarf_unit_at(unit->getOffset());
        // As llvm-symbolizer asks: absolute file names, linkage names (demangled as c++filt
        // does it, demangle.h), the symbol table's name for the outermost frame.
        const llvm::DILineInfoSpecifier names(llvm::DILineInfoSpecifier::FileLineInfoKind::AbsoluteFilePath,
                                              llvm::DILineInfoSpecifier::FunctionNameKind::LinkageName);
        llvm::object::SectionedAddress where{address, llvm::object::SectionedAddress::UndefSection};
        const llvm::DIInliningInfo info = impl_->module->symbolizeInlinedCode(where, names, /*UseSymbolTable=*/true);
        for (uint32_t i = 0; i < info.getNumberOfFrames(); ++i) {
            const llvm::DILineInfo& frame = info.getFrame(i);
            SourceFrame out;
            if (frame.FunctionName != llvm::DILineInfo::BadString) {
                out.symbol = frame.FunctionName;
                out.function = demangle(out.symbol);
            }
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
    return cache_.emplace(address, std::move(chain)).first->second;
}

std::string SourceLocator::line_of(const std::vector<SourceFrame>& frames)
{
    if (frames.empty() || frames.front().file.empty())
        return {};
    return frames.front().file + ":" + std::to_string(frames.front().line);
}

} // namespace mcuprof::core
