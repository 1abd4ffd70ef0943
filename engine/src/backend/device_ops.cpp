#include "backend/device_ops.h"

#include "pd/error.h"

namespace pd {

namespace {
[[noreturn]] void no_kernel(const char* kernel) {
    throw Error(std::string(kernel) +
                    " has no kernel on this backend (the transformer runs on "
                    "the CPU backend)",
                __FILE__, __LINE__);
}
}  // namespace

GradientCheck DeviceOps::check_gradients(const float*, std::size_t) {
    throw Error("gradient checks (fp16 loss scaling, clip_grad_norm) run on the CPU backend only",
                __FILE__, __LINE__);
}
void DeviceOps::scale(float*, std::size_t, float) {
    throw Error("in-place scaling (fp16 loss scaling, clip_grad_norm) runs on the CPU backend only",
                __FILE__, __LINE__);
}

Fp8CastStats DeviceOps::cast_fp8(Fp8Encoding, float, const float*, float*, std::size_t) {
    throw Error("FP8 casts run on the CPU backend only", __FILE__, __LINE__);
}
void DeviceOps::scaled_linear_forward(const float*, const float*, const float*, int, int, int,
                                      float, float*) {
    throw Error("FP8 products run on the CPU backend only", __FILE__, __LINE__);
}
void DeviceOps::scaled_linear_backward(const float*, const float*, const float*, const float*, int,
                                       int, int, float, float, float*, float*, float*, GradWrite) {
    throw Error("FP8 products run on the CPU backend only", __FILE__, __LINE__);
}

void DeviceOps::layer_norm_forward(const float*, const float*, const float*, int, int, float*,
                                   float*) {
    no_kernel("LayerNorm");
}
void DeviceOps::layer_norm_backward(const float*, const float*, const float*, const float*, int,
                                    int, float*, float*, float*) {
    no_kernel("LayerNorm backward");
}
void DeviceOps::attention_forward(const float*, const float*, const float*, int, int, int, int,
                                  float*, float*) {
    no_kernel("attention");
}
void DeviceOps::attention_backward(const float*, const float*, const float*, const float*,
                                   const float*, int, int, int, int, float*, float*, float*) {
    no_kernel("attention backward");
}

void DeviceOps::attention_block_forward(const float*, const float*, const float*, int, int, int,
                                        int, int, const int*, const int*, float*, float*, float*) {
    no_kernel("ring attention");
}
void DeviceOps::attention_block_finish(float*, float*, const float*, int, int, int, int) {
    no_kernel("ring attention");
}
void DeviceOps::attention_block_backward(const float*, const float*, const float*, const float*,
                                         const float*, const float*, int, int, int, int, int,
                                         const int*, const int*, float*, float*, float*) {
    no_kernel("ring attention backward");
}

void DeviceOps::moe_route(const float*, int, int, int, int, int, float, float*, float*, float*,
                          double*) {
    no_kernel("MoE routing");
}
void DeviceOps::moe_dispatch(const float*, const float*, int, int, int, float*) {
    no_kernel("MoE dispatch");
}
void DeviceOps::moe_combine(const float*, const float*, int, int, int, float*) {
    no_kernel("MoE combine");
}
void DeviceOps::moe_combine_backward(const float*, const float*, const float*, int, int, int,
                                     float*, float*) {
    no_kernel("MoE combine backward");
}
void DeviceOps::moe_dispatch_backward(const float*, const float*, int, int, int, float*) {
    no_kernel("MoE dispatch backward");
}
void DeviceOps::moe_router_backward(const float*, const float*, const float*, const float*, int,
                                    int, int, int, float, float*) {
    no_kernel("MoE router backward");
}

}  // namespace pd
