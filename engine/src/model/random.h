// Small, portable, seedable randomness: the same numbers on every machine and compiler
// (std::normal_distribution is implementation-defined, so it is not used).
#pragma once

#include <cmath>
#include <cstdint>

namespace pd {

inline std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

inline std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t a, std::uint64_t b) {
    std::uint64_t s = seed ^ (a * 0xd1b54a32d192ed03ULL);
    splitmix64(s);
    s ^= b * 0x8cb92ba72f3d8dd7ULL;
    return splitmix64(s);
}

class Rng {
  public:
    explicit Rng(std::uint64_t seed) : state_(seed) {}
    double uniform() {  // (0, 1)
        return (static_cast<double>(splitmix64(state_) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    }
    double normal() {  // Box-Muller
        const double u1 = uniform(), u2 = uniform();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }

  private:
    std::uint64_t state_;
};

}  // namespace pd
