// The installed header-only C++ wrapper: a tiny graph run through plx::Session, and a
// misuse that surfaces as plx::Error with the C status and message.
#include <plexus/plexus.hpp>

#include <cstdio>
#include <string>
#include <vector>

int main() {
  try {
    plx::Ir ir;
    auto [x_stream, x] = ir.h2d_stream("x", PLX_DTYPE_FLOAT32, {2});
    const plx::Tensor y = ir.variable<float>("y", {2}, {1.0f, -4.0f});
    const plx::Stream out = ir.d2h_stream("out", ir.relu(ir.add(x, y)));
    plx::SessionOptions options;
    options.threads_per_device = 1;
    plx::Session session(ir, options);
    std::vector<float> xs = {2.0f, 3.0f}, result(2, -1.0f);
    session.run({plx::HostArray(x_stream, xs.data(), {2})}, {plx::HostArray(out, result.data(), {2})});
    if (result[0] != 3.0f || result[1] != 0.0f) {
      std::fprintf(stderr, "consumer_cpp: got [%g, %g], expected [3, 0]\n", result[0], result[1]);
      return 1;
    }
    try {
      ir.op1("no_such_op", {x});
      std::fprintf(stderr, "consumer_cpp: an unknown op was accepted\n");
      return 1;
    } catch (const plx::Error& e) {
      if (e.status() != PLX_ERR_UNKNOWN_OP || std::string(e.what()).find("no_such_op") == std::string::npos) {
        std::fprintf(stderr, "consumer_cpp: unexpected error %d: %s\n", e.status(), e.what());
        return 1;
      }
    }
  } catch (const plx::Error& e) {
    std::fprintf(stderr, "consumer_cpp: %s\n", e.what());
    return 1;
  }
  std::printf("consumer_cpp: ok\n");
  return 0;
}
