// The libstdc++ draws test_cxx_random.py compares samples/python/cxx_random.py with, one
// value per line in hex (uint64 outputs as 16 digits, floats as their 8-digit bit pattern).
//
//   cxx_random_reference raw <seed> <n>      n std::mt19937_64(seed) outputs
//   cxx_random_reference normal <seed> <n>   n draws of one normal_distribution<float>(0, 0.02),
//                                            then the engine's next output
//   cxx_random_reference uniform <seed> <n>  n draws of uniform_real_distribution<float>(-0.1, 0.1),
//                                            then the engine's next output
//   cxx_random_reference mlp <seed>          samples/common/mnist_mlp.h MlpWeights::random(seed):
//                                            W0, b0, W1, b1 in that order
//   cxx_random_reference canonical           generate_canonical<float, 24> of each uint64 read
//                                            (hex, one a line) from stdin
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

namespace {

void print_float(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  std::printf("%08" PRIx32 "\n", bits);
}

void print_u64(uint64_t u) { std::printf("%016" PRIx64 "\n", u); }

/// An engine replaying the given outputs, so generate_canonical sees chosen values.
struct Replay {
  using result_type = uint64_t;
  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return std::numeric_limits<uint64_t>::max(); }
  uint64_t value;
  uint64_t operator()() const { return value; }
};

/// MlpWeights::random(seed) of samples/common/mnist_mlp.h (784 * 32 + 32 + 32 * 10 + 10
/// draws of one distribution), without the plexus headers it includes.
void print_mlp(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (int64_t n : {784 * 32, 32, 32 * 10, 10})
    for (int64_t i = 0; i < n; ++i) print_float(normal(rng));
}

}  // namespace

int main(int argc, char** argv) {
  const char* kind = argc > 1 ? argv[1] : "";
  const uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 0;
  const long n = argc > 3 ? std::strtol(argv[3], nullptr, 10) : 0;
  std::mt19937_64 rng(seed);
  if (std::strcmp(kind, "raw") == 0) {
    for (long i = 0; i < n; ++i) print_u64(rng());
  } else if (std::strcmp(kind, "normal") == 0) {
    std::normal_distribution<float> normal(0.0f, 0.02f);
    for (long i = 0; i < n; ++i) print_float(normal(rng));
    print_u64(rng());
  } else if (std::strcmp(kind, "uniform") == 0) {
    std::uniform_real_distribution<float> uniform(-0.1f, 0.1f);
    for (long i = 0; i < n; ++i) print_float(uniform(rng));
    print_u64(rng());
  } else if (std::strcmp(kind, "mlp") == 0) {
    print_mlp(seed);
  } else if (std::strcmp(kind, "canonical") == 0) {
    Replay replay{};
    while (std::scanf("%" SCNx64, &replay.value) == 1)
      print_float(std::generate_canonical<float, std::numeric_limits<float>::digits>(replay));
  } else {
    std::fprintf(stderr, "usage: %s raw|normal|uniform <seed> <n> | mlp <seed> | canonical\n", argv[0]);
    return 2;
  }
  return 0;
}
