#include "mcuprof/sampler/rsp_sampler.h"

#include "mcuprof/target/rsp_halting_target.h"

namespace mcuprof::sources {

RspHaltingSampler::RspHaltingSampler(const RspSamplerOptions& options)
    : LiveSampler(make_rsp_halting_target({options.gdb, options.timeout, options.extras.stacks.has_value()}),
                  options.pacing, options.extras, options.timeout)
{
}

} // namespace mcuprof::sources
