#include "cpu/moe_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace pd::cpu {

namespace {
// routes[(token x top_k + j) x 3 + 0..2]: expert, slot (-1: dropped), gate.
constexpr int kRouteFields = 3;
std::size_t route_at(std::size_t token, int top_k, int j) {
    return (token * static_cast<std::size_t>(top_k) + static_cast<std::size_t>(j)) * kRouteFields;
}
}  // namespace

void moe_route(const float* logits, int seqs, int seq_len, int experts, int top_k, int capacity,
               float aux_weight, float* probs, float* routes, float* fractions, double* aux_sum) {
    const std::size_t e_count = static_cast<std::size_t>(experts);
    std::vector<int> order(e_count);
    std::vector<int> filled(e_count);
    for (int g = 0; g < seqs; ++g) {
        const std::size_t first = static_cast<std::size_t>(g) * static_cast<std::size_t>(seq_len);
        // Softmax per token, then its top_k experts (a stable sort: ties go to the lower index).
        for (int t = 0; t < seq_len; ++t) {
            const std::size_t token = first + static_cast<std::size_t>(t);
            const float* z = logits + token * e_count;
            float* p = probs + token * e_count;
            const float top = *std::max_element(z, z + experts);
            double sum = 0.0;
            for (int e = 0; e < experts; ++e) sum += std::exp(static_cast<double>(z[e] - top));
            for (int e = 0; e < experts; ++e)
                p[e] = static_cast<float>(std::exp(static_cast<double>(z[e] - top)) / sum);
            for (int e = 0; e < experts; ++e) order[static_cast<std::size_t>(e)] = e;
            std::stable_sort(order.begin(), order.end(), [p](int a, int b) { return p[a] > p[b]; });
            for (int j = 0; j < top_k; ++j) {
                float* r = routes + route_at(token, top_k, j);
                r[0] = static_cast<float>(order[static_cast<std::size_t>(j)]);
                r[1] = -1.0f;
                r[2] = p[order[static_cast<std::size_t>(j)]];
            }
        }
        // Slots in GShard's order: every token's first choice, then every second choice, ...
        std::fill(filled.begin(), filled.end(), 0);
        for (int j = 0; j < top_k; ++j)
            for (int t = 0; t < seq_len; ++t) {
                float* r = routes + route_at(first + static_cast<std::size_t>(t), top_k, j);
                const int e = static_cast<int>(r[0]);
                int& used = filled[static_cast<std::size_t>(e)];
                if (used >= capacity) continue;  // dropped: no room left in this sequence
                r[1] = static_cast<float>(
                    (static_cast<std::size_t>(e) * static_cast<std::size_t>(seqs) +
                     static_cast<std::size_t>(g)) *
                        static_cast<std::size_t>(capacity) +
                    static_cast<std::size_t>(used));
                ++used;
            }
        // The load-balancing loss (Switch Transformer's, with top-k choices): f_e is the share
        // of the sequence's choices (before capacity) that picked e, P_e its mean probability.
        float* f = fractions + static_cast<std::size_t>(g) * e_count;
        std::fill(f, f + experts, 0.0f);
        for (int t = 0; t < seq_len; ++t)
            for (int j = 0; j < top_k; ++j)
                f[static_cast<int>(
                    routes[route_at(first + static_cast<std::size_t>(t), top_k, j)])] += 1.0f;
        const float share = 1.0f / static_cast<float>(top_k * seq_len);
        double aux = 0.0;
        for (int e = 0; e < experts; ++e) {
            f[e] *= share;
            double mean_p = 0.0;
            for (int t = 0; t < seq_len; ++t)
                mean_p += probs[(first + static_cast<std::size_t>(t)) * e_count +
                                static_cast<std::size_t>(e)];
            aux += static_cast<double>(f[e]) * mean_p / seq_len;
        }
        if (aux_sum) *aux_sum += static_cast<double>(aux_weight) * experts * aux;
    }
}

void moe_dispatch(const float* x, const float* routes, int tokens, int top_k, int width,
                  float* dispatch) {
    const std::size_t w = static_cast<std::size_t>(width);
    for (std::size_t t = 0; t < static_cast<std::size_t>(tokens); ++t)
        for (int j = 0; j < top_k; ++j) {
            const float slot = routes[route_at(t, top_k, j) + 1];
            if (slot < 0) continue;
            std::copy_n(x + t * w, w, dispatch + static_cast<std::size_t>(slot) * w);
        }
}

void moe_combine(const float* y, const float* routes, int tokens, int top_k, int width,
                 float* out) {
    const std::size_t w = static_cast<std::size_t>(width);
    for (std::size_t t = 0; t < static_cast<std::size_t>(tokens); ++t) {
        float* o = out + t * w;
        std::fill(o, o + w, 0.0f);
        for (int j = 0; j < top_k; ++j) {
            const float* r = routes + route_at(t, top_k, j);
            if (r[1] < 0) continue;
            const float* row = y + static_cast<std::size_t>(r[1]) * w;
            for (std::size_t i = 0; i < w; ++i) o[i] += r[2] * row[i];
        }
    }
}

void moe_combine_backward(const float* y, const float* routes, const float* dout, int tokens,
                          int top_k, int width, float* dy, float* dgate) {
    const std::size_t w = static_cast<std::size_t>(width);
    for (std::size_t t = 0; t < static_cast<std::size_t>(tokens); ++t) {
        const float* d = dout + t * w;
        for (int j = 0; j < top_k; ++j) {
            const float* r = routes + route_at(t, top_k, j);
            float& dg = dgate[t * static_cast<std::size_t>(top_k) + static_cast<std::size_t>(j)];
            dg = 0.0f;
            if (r[1] < 0) continue;
            const std::size_t slot = static_cast<std::size_t>(r[1]);
            const float* row = y + slot * w;
            float* drow = dy + slot * w;
            double dot = 0.0;
            for (std::size_t i = 0; i < w; ++i) {
                drow[i] = r[2] * d[i];
                dot += static_cast<double>(d[i]) * row[i];
            }
            dg = static_cast<float>(dot);
        }
    }
}

void moe_dispatch_backward(const float* ddispatch, const float* routes, int tokens, int top_k,
                           int width, float* dx) {
    const std::size_t w = static_cast<std::size_t>(width);
    for (std::size_t t = 0; t < static_cast<std::size_t>(tokens); ++t)
        for (int j = 0; j < top_k; ++j) {
            const float slot = routes[route_at(t, top_k, j) + 1];
            if (slot < 0) continue;
            const float* g = ddispatch + static_cast<std::size_t>(slot) * w;
            float* o = dx + t * w;
            for (std::size_t i = 0; i < w; ++i) o[i] += g[i];
        }
}

void moe_router_backward(const float* probs, const float* routes, const float* fractions,
                         const float* dgate, int seqs, int seq_len, int experts, int top_k,
                         float aux_scale, float* dlogits) {
    const std::size_t e_count = static_cast<std::size_t>(experts);
    std::vector<float> dp(e_count);
    for (int g = 0; g < seqs; ++g) {
        const float* f = fractions + static_cast<std::size_t>(g) * e_count;
        for (int t = 0; t < seq_len; ++t) {
            const std::size_t token =
                static_cast<std::size_t>(g) * static_cast<std::size_t>(seq_len) +
                static_cast<std::size_t>(t);
            // d(aux)/dp_e = weight x experts x f_e / (sequences x seq_len): aux_scale x f_e.
            for (std::size_t e = 0; e < e_count; ++e) dp[e] = aux_scale * f[e];
            for (int j = 0; j < top_k; ++j) {
                const float* r = routes + route_at(token, top_k, j);
                if (r[1] < 0) continue;  // a dropped choice's gate multiplied nothing
                dp[static_cast<std::size_t>(r[0])] +=
                    dgate[token * static_cast<std::size_t>(top_k) + static_cast<std::size_t>(j)];
            }
            const float* p = probs + token * e_count;
            double dot = 0.0;
            for (std::size_t e = 0; e < e_count; ++e) dot += static_cast<double>(p[e]) * dp[e];
            float* dz = dlogits + token * e_count;
            for (std::size_t e = 0; e < e_count; ++e)
                dz[e] = p[e] * (dp[e] - static_cast<float>(dot));
        }
    }
}

}  // namespace pd::cpu
