#include "mcuprof/core/source_locator.h"

#include <llvm/DebugInfo/DIContext.h>
#include <llvm/DebugInfo/Symbolize/Symbolize.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include "mcuprof/core/demangle.h"
#include "mcuprof/core/dwarf_check.h"

namespace mcuprof::core {

struct SourceLocator::Impl {
    std::string elf_path;
    // The ELF as read and checked once; the symbolizer reads this object, not the path
    // again, so what it reads is what was checked (and no separate debug file is looked for).
    std::unique_ptr<llvm::MemoryBuffer> buffer;
    std::unique_ptr<llvm::object::ObjectFile> object;
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

namespace {

std::unique_ptr<llvm::MemoryBuffer> read_if_possible(const std::string& elf_path)
{
    auto buffer = llvm::MemoryBuffer::getFile(elf_path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
    if (!buffer)
        return nullptr;
    return std::move(*buffer);
}

} // namespace

SourceLocator::SourceLocator(std::string elf_path) : SourceLocator(read_if_possible(elf_path), elf_path) {}

std::unique_ptr<SourceLocator> SourceLocator::parse(std::string_view image, const std::string& name)
{
    return std::unique_ptr<SourceLocator>(new SourceLocator(
        llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(image.data(), image.size()), name), name));
}

SourceLocator::SourceLocator(std::unique_ptr<llvm::MemoryBuffer> image, const std::string& name)
    : impl_(std::make_unique<Impl>())
{
    impl_->elf_path = name;
    // A file that cannot be read or is no object file has no lines: every lookup is empty
    // (the symbol table's reader reports it). Corrupt debugging entries are an error here,
    // before LLVM reads them.
    if (!image) {
        impl_->broken = true;
        return;
    }
    impl_->buffer = std::move(image);
    auto object = llvm::object::ObjectFile::createObjectFile(impl_->buffer->getMemBufferRef());
    if (!object) {
        llvm::consumeError(object.takeError());
        impl_->broken = true;
        return;
    }
    impl_->object = std::move(*object);
    check_debug_entries(*impl_->object, impl_->elf_path);
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
