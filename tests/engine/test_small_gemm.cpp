// The engine's own product kernel (cpu/small_gemm.h): against double precision for every
// transpose it takes, shapes with leftover rows and columns (fixed and 150 random ones), alpha
// and beta (beta 0 over a NaN-filled C), the same bits on AVX2 and AVX-512, which shapes it takes,
// a product split across the intra-op pool equal bit for bit to one call, the packed blocks
// of large products equal bit for bit to the in-place kernel, and attention's strided
// one-thread products equal to gemm() on contiguous copies.
#include <QtTest>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <vector>

#include "cpu/intra_op_pool.h"
#include "cpu/kernels.h"
#include "cpu/small_gemm.h"

using namespace pd;
using cpu::SmallGemmIsa;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

namespace {

std::vector<float> random_floats(std::size_t n, unsigned seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(gen);
    return v;
}

struct Product {
    bool ta, tb;
    int m, n, k;
    float alpha, beta;
};

// m and n with and without leftovers past 6 rows and 16 / 32 columns, k of 1 upwards.
const Product kProducts[] = {
    {false, false, 64, 512, 128, 1.0f, 0.0f}, {true, false, 128, 512, 64, 1.0f, 1.0f},
    {false, true, 64, 128, 512, 1.0f, 0.0f},  {false, false, 13, 37, 9, 0.5f, 1.0f},
    {true, false, 7, 50, 33, 1.0f, 0.0f},     {false, true, 11, 21, 5, 1.0f, 1.0f},
    {false, false, 1, 16, 1, 2.0f, 0.5f},     {true, false, 5, 33, 1, 1.0f, 0.0f},
    {false, true, 6, 47, 17, 1.0f, 0.0f}};

// The fixed products, then 150 seeded random ones (sizes 1 to 70, any transpose but both):
// every leftover of rows, columns and k, each buffer exactly its size (so the sanitizer run
// sees any read or write past an operand).
std::vector<Product> products_to_check() {
    std::vector<Product> all(std::begin(kProducts), std::end(kProducts));
    std::mt19937 gen(42);
    std::uniform_int_distribution<int> size(1, 70), kind(0, 2), scale(0, 2);
    const float betas[] = {0.0f, 1.0f, -0.5f};
    for (int i = 0; i < 150; ++i) {
        const int t = kind(gen);
        all.push_back({t == 1, t == 2, size(gen), size(gen), size(gen),
                       scale(gen) == 0 ? 0.75f : 1.0f, betas[scale(gen)]});
    }
    return all;
}

std::vector<SmallGemmIsa> isas_this_cpu_runs() {
    std::vector<SmallGemmIsa> isas;
    for (const SmallGemmIsa isa : {cpu::SmallGemmIsa::avx2, cpu::SmallGemmIsa::avx512})
        if (cpu::cpu_runs(isa)) isas.push_back(isa);
    return isas;
}

// C after the product, from C's starting values c0 (NaN where beta is 0: never read).
std::vector<float> run(SmallGemmIsa isa, const Product& p, const std::vector<float>& a,
                       const std::vector<float>& b, std::vector<float> c) {
    cpu::small_gemm(isa, p.ta, p.tb, p.m, p.n, p.k, p.alpha, a.data(), p.ta ? p.m : p.k, b.data(),
                    p.tb ? p.k : p.n, p.beta, c.data(), p.n);
    return c;
}

}  // namespace

class TestSmallGemm : public QObject {
    Q_OBJECT
  private slots:
    void matches_double_precision() {
        const auto isas = isas_this_cpu_runs();
        if (isas.empty()) QSKIP("this CPU has neither AVX2 with FMA nor AVX-512: no own kernel");
        for (const SmallGemmIsa isa : isas)
            for (const Product& p : products_to_check()) {
                const auto a = random_floats(static_cast<std::size_t>(p.m) * p.k, 1);
                const auto b = random_floats(static_cast<std::size_t>(p.k) * p.n, 2);
                auto c0 = random_floats(static_cast<std::size_t>(p.m) * p.n, 3);
                if (p.beta == 0.0f) std::fill(c0.begin(), c0.end(), kNaN);
                const auto c = run(isa, p, a, b, c0);
                for (int i = 0; i < p.m; ++i)
                    for (int j = 0; j < p.n; ++j) {
                        double sum = 0, magnitude = 0;
                        for (int q = 0; q < p.k; ++q) {
                            const double x = p.ta ? a[q * p.m + i] : a[i * p.k + q];
                            const double y = p.tb ? b[j * p.k + q] : b[q * p.n + j];
                            sum += x * y;
                            magnitude += std::fabs(x * y);
                        }
                        const std::size_t at = static_cast<std::size_t>(i) * p.n + j;
                        const double want =
                            p.alpha * sum + (p.beta == 0.0f ? 0.0 : p.beta * c0[at]);
                        // fp32 sums of k products: at most about k ulps of the magnitude.
                        const double bound =
                            1e-7 * (p.k + 2) * (std::fabs(p.alpha) * magnitude + std::fabs(want)) +
                            1e-30;
                        if (!(std::fabs(c[at] - want) <= bound))
                            QFAIL(qPrintable(QString("isa %1, %2%3 %4x%5x%6: C[%7][%8] = %9, "
                                                     "double precision gives %10")
                                                 .arg(static_cast<int>(isa))
                                                 .arg(p.ta ? "T" : "N")
                                                 .arg(p.tb ? "T" : "N")
                                                 .arg(p.m)
                                                 .arg(p.n)
                                                 .arg(p.k)
                                                 .arg(i)
                                                 .arg(j)
                                                 .arg(double(c[at]))
                                                 .arg(want)));
                    }
            }
    }

    // The instruction set changes no bit: each element is the same in-order sum of fused
    // multiply-adds, so a run's numbers do not depend on which CPU it ran on.
    void same_bits_with_avx2_and_avx512() {
        if (isas_this_cpu_runs().size() < 2) QSKIP("this CPU lacks AVX-512: one kernel only");
        for (const Product& p : products_to_check()) {
            const auto a = random_floats(static_cast<std::size_t>(p.m) * p.k, 4);
            const auto b = random_floats(static_cast<std::size_t>(p.k) * p.n, 5);
            const auto c0 = random_floats(static_cast<std::size_t>(p.m) * p.n, 6);
            const auto c2 = run(cpu::SmallGemmIsa::avx2, p, a, b, c0);
            const auto c5 = run(cpu::SmallGemmIsa::avx512, p, a, b, c0);
            QVERIFY2(std::memcmp(c2.data(), c5.data(), c2.size() * sizeof(float)) == 0,
                     qPrintable(QString("%1x%2x%3").arg(p.m).arg(p.n).arg(p.k)));
        }
    }

    void takes_cache_sized_products_only() {
        if (cpu::small_gemm_isa() == cpu::SmallGemmIsa::none)
            QSKIP("no own kernel in this process (CPU or PD_SMALL_GEMM)");
        QVERIFY(cpu::small_gemm_suits(false, false, 64, 512, 128));  // a card's products
        QVERIFY(cpu::small_gemm_suits(true, false, 128, 512, 64));
        QVERIFY(cpu::small_gemm_suits(false, true, 64, 128, 512));
        QVERIFY(!cpu::small_gemm_suits(true, true, 64, 128, 512));  // both transposed
        // Narrow products too (a classifier head's 10 columns), on AVX2's 16-column panels.
        QVERIFY(cpu::small_gemm_suits(false, false, 64, 10, 128));
        QVERIFY(cpu::small_gemm_suits(true, false, 128, 1, 64));
        QVERIFY(cpu::small_gemm_isa_for(10) == cpu::SmallGemmIsa::avx2);
        QCOMPARE(cpu::small_gemm_isa_for(512), cpu::small_gemm_isa());
        // Larger products: the own kernel too (packed), unless PD_LARGE_GEMM=blas.
        QVERIFY(cpu::fits_in_cache(64, 512, 128));
        QVERIFY(!cpu::fits_in_cache(256, 2048, 512));  // 8 x 512's forward
        QVERIFY(!cpu::fits_in_cache(256, 512, 64));    // C of 512 KiB
        // In place wherever A stays in cache, whatever B and C: a few rows against wide weights.
        QVERIFY(cpu::in_place_pays(4, 256));     // ZeRO's 4 rows a device x 256 -> 1024
        QVERIFY(cpu::in_place_pays(256, 64));    // C of 512 KiB, A of 64 KiB
        QVERIFY(!cpu::in_place_pays(256, 512));  // A of 512 KiB
        QVERIFY(!cpu::in_place_pays(16, 2048));  // a panel of B' past 128 KiB
        QCOMPARE(cpu::small_gemm_suits(false, false, 256, 2048, 512),
                 qgetenv("PD_LARGE_GEMM") != "blas");
    }

    // The pool splits C into row or column blocks; each block's elements are the same sums.
    void split_across_threads_gives_the_same_bits() {
        if (cpu::small_gemm_isa() == cpu::SmallGemmIsa::none)
            QSKIP("no own kernel in this process (CPU or PD_SMALL_GEMM)");
        cpu::init_blas_threads();
        cpu::IntraOpPool one(1), three(3);
        for (const Product& p : {Product{false, false, 64, 512, 128, 1.0f, 1.0f},
                                 Product{true, false, 512, 128, 64, 1.0f, 0.0f},
                                 Product{false, true, 128, 64, 256, 1.0f, 0.0f}}) {
            QVERIFY(cpu::small_gemm_suits(p.ta, p.tb, p.m, p.n, p.k));
            const auto a = random_floats(static_cast<std::size_t>(p.m) * p.k, 7);
            const auto b = random_floats(static_cast<std::size_t>(p.k) * p.n, 8);
            auto c1 = random_floats(static_cast<std::size_t>(p.m) * p.n, 9), c3 = c1;
            cpu::gemm(one, p.ta, p.tb, p.m, p.n, p.k, p.alpha, a.data(), b.data(), p.beta,
                      c1.data());
            cpu::gemm(three, p.ta, p.tb, p.m, p.n, p.k, p.alpha, a.data(), b.data(), p.beta,
                      c3.data());
            QVERIFY(std::memcmp(c1.data(), c3.data(), c1.size() * sizeof(float)) == 0);
        }
    }
    // Issue 50: products beyond the caches run in packed blocks (k in blocks of 256, rows of
    // 144, columns of 1024). The sums so far are kept in fp32 between k blocks, so each element
    // is the same in-order sum: the same bits as the in-place kernel, which matches double
    // precision above. Shapes with leftovers in every blocked dimension, every transpose, alpha
    // and beta (beta 0 over NaN), and the small products too.
    void packed_blocks_give_the_in_place_bits() {
        const auto isas = isas_this_cpu_runs();
        if (isas.empty()) QSKIP("this CPU has neither AVX2 with FMA nor AVX-512: no own kernel");
        std::vector<Product> products = products_to_check();
        products.push_back({false, false, 301, 1100, 700, 1.0f, 1.0f});
        products.push_back({true, false, 150, 333, 530, 0.5f, -0.5f});
        products.push_back({false, true, 149, 1030, 257, 1.0f, 0.0f});
        products.push_back({false, false, 7, 2049, 1000, 1.0f, 0.0f});
        for (const SmallGemmIsa isa : isas)
            for (const Product& p : products) {
                const auto a = random_floats(static_cast<std::size_t>(p.m) * p.k, 11);
                const auto b = random_floats(static_cast<std::size_t>(p.k) * p.n, 12);
                auto c0 = random_floats(static_cast<std::size_t>(p.m) * p.n, 13);
                if (p.beta == 0.0f) std::fill(c0.begin(), c0.end(), kNaN);
                const auto in_place = run(isa, p, a, b, c0);
                auto packed = c0;
                cpu::packed_gemm(isa, p.ta, p.tb, p.m, p.n, p.k, p.alpha, a.data(),
                                 p.ta ? p.m : p.k, b.data(), p.tb ? p.k : p.n, p.beta,
                                 packed.data(), p.n);
                QVERIFY2(
                    std::memcmp(in_place.data(), packed.data(), packed.size() * sizeof(float)) == 0,
                    qPrintable(QString("isa %1, %2%3 %4x%5x%6")
                                   .arg(static_cast<int>(isa))
                                   .arg(p.ta ? "T" : "N")
                                   .arg(p.tb ? "T" : "N")
                                   .arg(p.m)
                                   .arg(p.n)
                                   .arg(p.k)));
            }
    }

    // Attention's products, one per sequence and head, run on the calling thread on operands
    // that are a head's columns of wider rows: the same bits as gemm() on contiguous copies.
    void a_strided_product_on_one_thread_gives_gemm_bits() {
        if (cpu::small_gemm_isa() == cpu::SmallGemmIsa::none)
            QSKIP("no own kernel in this process (CPU or PD_SMALL_GEMM)");
        cpu::init_blas_threads();
        cpu::IntraOpPool one(1);
        const int seq = 37, heads = 3, d = 20, ld = heads * d, head = 1;
        const auto q = random_floats(static_cast<std::size_t>(seq) * ld, 21);
        const auto k = random_floats(static_cast<std::size_t>(seq) * ld, 22);
        std::vector<float> qh, kh;  // the head's columns, contiguous
        for (int r = 0; r < seq; ++r)
            for (int c = 0; c < d; ++c) {
                qh.push_back(q[static_cast<std::size_t>(r) * ld + head * d + c]);
                kh.push_back(k[static_cast<std::size_t>(r) * ld + head * d + c]);
            }
        // Scores q k^T (NT), then out = P v into the head's columns of wider rows (NN, ldc).
        std::vector<float> strided(static_cast<std::size_t>(seq) * seq, kNaN), whole = strided;
        cpu::gemm_on_this_thread(false, true, seq, seq, d, 0.25f, q.data() + head * d, ld,
                                 k.data() + head * d, ld, 0.0f, strided.data(), seq);
        cpu::gemm(one, false, true, seq, seq, d, 0.25f, qh.data(), kh.data(), 0.0f, whole.data());
        QVERIFY(std::memcmp(strided.data(), whole.data(), whole.size() * sizeof(float)) == 0);
        std::vector<float> out(static_cast<std::size_t>(seq) * ld, 1.0f), out_h(qh.size(), 1.0f);
        cpu::gemm_on_this_thread(false, false, seq, d, seq, 1.0f, whole.data(), seq,
                                 k.data() + head * d, ld, 1.0f, out.data() + head * d, ld);
        cpu::gemm(one, false, false, seq, d, seq, 1.0f, whole.data(), kh.data(), 1.0f,
                  out_h.data());
        for (int r = 0; r < seq; ++r) {
            QVERIFY(std::memcmp(out.data() + static_cast<std::size_t>(r) * ld + head * d,
                                out_h.data() + static_cast<std::size_t>(r) * d,
                                d * sizeof(float)) == 0);
            QCOMPARE(out[static_cast<std::size_t>(r) * ld], 1.0f);  // other heads untouched
        }
    }

    // A large product split across the pool: each part packed on its own, the same bits.
    void a_large_product_split_across_threads_gives_the_same_bits() {
        if (cpu::small_gemm_isa() == cpu::SmallGemmIsa::none)
            QSKIP("no own kernel in this process (CPU or PD_SMALL_GEMM)");
        cpu::init_blas_threads();
        cpu::IntraOpPool one(1), three(3);
        for (const Product& p : {Product{false, false, 256, 2048, 512, 1.0f, 1.0f},
                                 Product{true, false, 512, 2048, 256, 1.0f, 0.0f},
                                 Product{false, true, 256, 512, 2048, 1.0f, 0.0f}}) {
            QVERIFY(!cpu::in_place_pays(p.m, p.k));
            const auto a = random_floats(static_cast<std::size_t>(p.m) * p.k, 7);
            const auto b = random_floats(static_cast<std::size_t>(p.k) * p.n, 8);
            auto c1 = random_floats(static_cast<std::size_t>(p.m) * p.n, 9), c3 = c1;
            cpu::gemm(one, p.ta, p.tb, p.m, p.n, p.k, p.alpha, a.data(), b.data(), p.beta,
                      c1.data());
            cpu::gemm(three, p.ta, p.tb, p.m, p.n, p.k, p.alpha, a.data(), b.data(), p.beta,
                      c3.data());
            QVERIFY(std::memcmp(c1.data(), c3.data(), c1.size() * sizeof(float)) == 0);
        }
    }
};

QTEST_APPLESS_MAIN(TestSmallGemm)
#include "test_small_gemm.moc"
