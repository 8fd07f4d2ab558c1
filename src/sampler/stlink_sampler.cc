#include "mcuprof/sampler/stlink_sampler.h"

#include "mcuprof/target/stlink_halting_target.h"

namespace mcuprof::sources {

StlinkSampler::StlinkSampler(const StlinkSamplerOptions& options)
    : LiveSampler(make_stlink_halting_target(
                      {options.server, options.timeout, options.usb_serial, options.pacing.pacing == Pacing::pcsr,
                       options.halt_shared}),
                  options.pacing, options.extras,
                  options.timeout)
{
}

} // namespace mcuprof::sources
