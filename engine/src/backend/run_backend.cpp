#include <thread>

#include "backend/device_backend.h"
#include "pd/error.h"
#include "pd/run.h"
#include "pd/run_config.h"
#include "pd/run_context.h"

#if PD_HAVE_CUDA_TOOLKIT
#include "cuda/cuda_backend.h"
#endif

namespace pd {

namespace {
class CpuRunBackend final : public RunBackend {
  public:
    CpuRunBackend(int threads, ProductInputs inputs) : threads_(threads), inputs_(inputs) {}
    std::unique_ptr<DeviceBackend> make_device(int) override {
        return make_cpu_device_backend(threads_, inputs_);
    }

  private:
    int threads_;
    ProductInputs inputs_;
};
}  // namespace

std::string backend_unavailable_reason(BackendKind backend) {
    if (backend == BackendKind::cpu) return {};
#if PD_HAVE_CUDA_TOOLKIT
    return cuda_unavailable_reason();
#else
    return "this build of ParallelDeck has no CUDA backend (the CUDA toolkit was not found when "
           "it was built)";
#endif
}

std::unique_ptr<RunBackend> make_run_backend(const RunConfig& config, RunContext& ctx) {
    if (config.backend == BackendKind::cpu)
        return std::make_unique<CpuRunBackend>(
            resolve_intra_op_threads(config, ctx.clock(), std::thread::hardware_concurrency()),
            config.bf16_products ? ProductInputs::bf16
            : config.tf32        ? ProductInputs::tf32
                                 : ProductInputs::fp32);
#if PD_HAVE_CUDA_TOOLKIT
    return make_cuda_run_backend(config, ctx);
#else
    (void)ctx;
    PD_THROW(BadInput, "backend",
             "'cuda' is not available: " + backend_unavailable_reason(config.backend));
#endif
}

}  // namespace pd
