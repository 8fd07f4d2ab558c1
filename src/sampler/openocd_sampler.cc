#include "mcuprof/sampler/openocd_sampler.h"

#include "mcuprof/target/openocd_halting_target.h"

namespace mcuprof::sources {

OpenocdSampler::OpenocdSampler(const OpenocdSamplerOptions& options)
    : LiveSampler(make_openocd_halting_target({options.tcl, options.timeout, options.pacing.pacing == Pacing::pcsr,
                                               options.extras.stacks.has_value(), options.pcsr_profile_gmon,
                                               options.pacing.resolved_seed()}),
                  options.pacing, options.extras, options.timeout)
{
}

} // namespace mcuprof::sources
