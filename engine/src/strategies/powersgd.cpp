#include "strategies/powersgd.h"

#include <algorithm>
#include <cmath>

#include "model/random.h"

namespace pd {

std::vector<PowerSgdBucket> powersgd_buckets(const ParamLayout& layout,
                                             const std::vector<GradBucket>& buckets,
                                             const RunConfig::PowerSgd& settings) {
    std::vector<PowerSgdBucket> out;
    for (const GradBucket& g : buckets) {
        PowerSgdBucket b;
        b.begin = g.begin;
        b.end = g.end;
        for (const TensorSpec& t : layout.tensors) {
            if (t.offset < g.begin || t.offset >= g.end) continue;
            PowerSgdTensor p;
            p.offset = t.offset;
            p.count = t.count;
            // torch's view(shape[0], -1): a weight [out, in] is out x in; a bias is a vector.
            p.n = t.cols;
            p.m = t.rows;
            p.rank = std::min({p.n, p.m, settings.rank});
            // _should_compress: (n + m) x rank x min_compression_rate < n x m.
            p.compress = t.rows > 1 &&
                         static_cast<double>(p.n + p.m) * p.rank * settings.min_compression_rate <
                             static_cast<double>(p.n) * p.m;
            if (p.compress) {
                b.p_count += static_cast<std::size_t>(p.n) * p.rank;
                b.q_count += static_cast<std::size_t>(p.m) * p.rank;
            } else {
                b.uncompressed_count += p.count;
            }
            b.tensors.push_back(p);
        }
        std::sort(b.tensors.begin(), b.tensors.end(),
                  [](const auto& x, const auto& y) { return x.offset < y.offset; });
        out.push_back(std::move(b));
    }
    return out;
}

void powersgd_random_q(std::uint64_t seed, int step, int bucket, int tensor, float* q,
                       std::size_t count) {
    Rng rng(
        mix_seed(seed, 0x9054e5dULL + static_cast<std::uint64_t>(step),
                 static_cast<std::uint64_t>(bucket) * 4096 + static_cast<std::uint64_t>(tensor)));
    for (std::size_t i = 0; i < count; ++i) q[i] = static_cast<float>(rng.normal());
}

namespace {

// Householder QR's thin Q: reflections H_k = I - 2 v v^T zero column k below the diagonal;
// Q = H_0 ... H_{cols-1} applied to the identity's first columns.
void householder_q(float* a, int rows, int cols) {
    const auto R = static_cast<std::size_t>(rows), C = static_cast<std::size_t>(cols);
    std::vector<double> r(a, a + R * C);
    std::vector<std::vector<double>> reflections;
    for (std::size_t k = 0; k < C && k < R; ++k) {
        std::vector<double> v(R - k);
        double norm = 0;
        for (std::size_t i = k; i < R; ++i) norm += r[i * C + k] * r[i * C + k];
        norm = std::sqrt(norm);
        for (std::size_t i = k; i < R; ++i) v[i - k] = r[i * C + k];
        v[0] += v[0] >= 0 ? norm : -norm;  // away from cancellation
        double vv = 0;
        for (double x : v) vv += x * x;
        if (vv > 0)
            for (double& x : v) x /= std::sqrt(vv);
        for (std::size_t j = k; j < C; ++j) {
            double dot = 0;
            for (std::size_t i = k; i < R; ++i) dot += v[i - k] * r[i * C + j];
            for (std::size_t i = k; i < R; ++i) r[i * C + j] -= 2 * dot * v[i - k];
        }
        reflections.push_back(std::move(v));
    }
    std::vector<double> q(R * C, 0.0);
    for (std::size_t j = 0; j < C && j < R; ++j) q[j * C + j] = 1.0;
    for (std::size_t k = reflections.size(); k-- > 0;) {
        const std::vector<double>& v = reflections[k];
        for (std::size_t j = 0; j < C; ++j) {
            double dot = 0;
            for (std::size_t i = k; i < R; ++i) dot += v[i - k] * q[i * C + j];
            for (std::size_t i = k; i < R; ++i) q[i * C + j] -= 2 * dot * v[i - k];
        }
    }
    for (std::size_t i = 0; i < R * C; ++i) a[i] = static_cast<float>(q[i]);
}

}  // namespace

void orthogonalize_columns(float* a, int rows, int cols) {
    if (cols > 2) {
        householder_q(a, rows, cols);
        return;
    }
    for (int i = 0; i < cols; ++i) {
        // col /= ||col|| (epsilon 0: a zero column becomes NaN, as torch's would)
        float norm2 = 0;
        for (int r = 0; r < rows; ++r) norm2 += a[r * cols + i] * a[r * cols + i];
        const float norm = std::sqrt(norm2);
        for (int r = 0; r < rows; ++r) a[r * cols + i] /= norm;
        // rest -= sum(col * rest) * col, every later column at once
        for (int j = i + 1; j < cols; ++j) {
            float dot = 0;
            for (int r = 0; r < rows; ++r) dot += a[r * cols + i] * a[r * cols + j];
            for (int r = 0; r < rows; ++r) a[r * cols + j] -= dot * a[r * cols + i];
        }
    }
}

PowerSgdReplica::PowerSgdReplica(const RunConfig& config,
                                 const std::vector<PowerSgdBucket>& buckets, Device& device)
    : config_(config), buckets_(buckets), device_(device), state_(buckets.size()) {}

void PowerSgdReplica::reduce(Communicator& comm, int index, float* grads, int step) {
    const PowerSgdBucket& b = buckets_[static_cast<std::size_t>(index)];
    const RunConfig::PowerSgd& ps = config_.powersgd;
    DeviceOps& ops = device_.ops();
    MemoryTracker& mem = device_.memory();
    float* input = grads + b.begin;
    const std::size_t length = b.end - b.begin;
    const int id = device_.id();
    // Before start_iter: DDP's plain all-reduce of the (already divided) gradients.
    if (step < ps.start_iter) {
        comm.all_reduce(id, input, length, step, "powersgd: plain all-reduce (before start)");
        return;
    }
    // torch's hook holds each replica's own mean gradient and divides by the world size
    // itself; the engine's gradients are divided already: multiplied back, the error feedback
    // and every factor are the hook's own numbers.
    const float world = static_cast<float>(comm.size());
    ops.scale(input, length, world);
    State& s = state_[static_cast<std::size_t>(index)];
    if (ps.error_feedback) {
        if (s.has_error)
            ops.add(input, s.error.data(), length);
        else
            s.error = Buffer(mem, MemoryCategory::gradients, length, Fill::zero);
        s.has_error = true;
        if (s.input.empty()) s.input = Buffer(mem, MemoryCategory::communication, length);
        ops.copy(s.input.data(), input, length);
    }
    // The tensors whole: concatenated, all-reduced, averaged, copied back.
    if (b.uncompressed_count > 0) {
        if (s.staging.empty())
            s.staging = Buffer(mem, MemoryCategory::communication, b.uncompressed_count);
        std::size_t at = 0;
        for (const PowerSgdTensor& t : b.tensors)
            if (!t.compress) {
                ops.copy(s.staging.data() + at, grads + t.offset, t.count);
                at += t.count;
            }
        comm.all_reduce(id, s.staging.data(), b.uncompressed_count, step,
                        "powersgd: uncompressed tensors");
        ops.scale(s.staging.data(), b.uncompressed_count, 1.0f / world);
        at = 0;
        for (const PowerSgdTensor& t : b.tensors)
            if (!t.compress) {
                ops.copy(grads + t.offset, s.staging.data() + at, t.count);
                at += t.count;
            }
    }
    if (b.p_count > 0) {
        // Qs: fresh standard normals, orthogonalised (the first step, or every step without
        // warm start), or the last step's averaged Qs, orthogonalised again.
        const bool randomize = !ps.warm_start || !s.has_q;
        if (s.q.empty()) {
            s.q = Buffer(mem, MemoryCategory::communication, b.q_count);
            s.p = Buffer(mem, MemoryCategory::communication, b.p_count);
        }
        s.has_q = true;
        std::size_t pq = 0, qq = 0;
        for (std::size_t k = 0; k < b.tensors.size(); ++k) {
            const PowerSgdTensor& t = b.tensors[k];
            if (!t.compress) continue;
            float* q = s.q.data() + qq;
            const std::size_t q_count = static_cast<std::size_t>(t.m) * t.rank;
            if (randomize)
                powersgd_random_q(config_.seed, step, index, static_cast<int>(k), q, q_count);
            orthogonalize_columns(q, t.m, t.rank);
            // P = M Q, M = W^T (n x m) for the engine's W [m, n].
            ops.gemm(true, false, t.n, t.rank, t.m, 1.0f, grads + t.offset, q, 0.0f,
                     s.p.data() + pq);
            pq += static_cast<std::size_t>(t.n) * t.rank;
            qq += q_count;
        }
        comm.all_reduce(id, s.p.data(), b.p_count, step, "powersgd: P = M Q");
        pq = qq = 0;
        for (const PowerSgdTensor& t : b.tensors) {
            if (!t.compress) continue;
            float* p = s.p.data() + pq;
            orthogonalize_columns(p, t.n, t.rank);
            // Q = M^T P = W P (m x r).
            ops.gemm(false, false, t.m, t.rank, t.n, 1.0f, grads + t.offset, p, 0.0f,
                     s.q.data() + qq);
            pq += static_cast<std::size_t>(t.n) * t.rank;
            qq += static_cast<std::size_t>(t.m) * t.rank;
        }
        comm.all_reduce(id, s.q.data(), b.q_count, step, "powersgd: Q = M^T P");
        ops.scale(s.q.data(), b.q_count, 1.0f / world);
        pq = qq = 0;
        for (const PowerSgdTensor& t : b.tensors) {
            if (!t.compress) continue;
            // M = P Q^T, so W = Q P^T (m x n).
            ops.gemm(false, true, t.m, t.n, t.rank, 1.0f, s.q.data() + qq, s.p.data() + pq, 0.0f,
                     grads + t.offset);
            pq += static_cast<std::size_t>(t.n) * t.rank;
            qq += static_cast<std::size_t>(t.m) * t.rank;
        }
    }
    if (ps.error_feedback) {
        // error = input copy - the result, for the whole bucket (the whole tensors too).
        ops.copy(s.error.data(), s.input.data(), length);
        ops.scale(input, length, -1.0f);
        ops.add(s.error.data(), input, length);
        ops.scale(input, length, -1.0f);
    }
    // `input` holds the average gradient, as a plain all-reduce of the divided gradients does.
}

}  // namespace pd
