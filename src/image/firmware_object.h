#pragma once
// Inside the core only: the LLVM object behind a core::Firmware, for the readers that hand it
// to LLVM (symbols, source locator, data layout, call frames). Not a public header: no LLVM
// type leaves the core.
#include <llvm/Object/ELFObjectFile.h>

#include "mcuprof/image/firmware.h"

namespace mcuprof::core {

const llvm::object::ELF32LEObjectFile& object_of(const Firmware& firmware);

} // namespace mcuprof::core
