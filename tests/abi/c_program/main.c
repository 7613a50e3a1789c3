/*
 * A plain C99 host program over the installed Plexus C API: builds
 *   h = relu(x @ w + b)
 * with x fed by a host-to-device stream and h read back through a device-to-host stream,
 * runs it for two device iterations and checks every value. Exit status 0 when all is
 * as expected, 1 otherwise (the message says what differed).
 */
#include <plexus/plexus.h>

#include <stdio.h>

#define STEPS 2
#define ROWS 2
#define INNER 3
#define COLS 2

static int failed(const char* what, plx_status status) {
  fprintf(stderr, "c_program: %s failed: %s: %s\n", what, plx_status_name(status), plx_last_error());
  return 1;
}

#define CHECK(call)                                       \
  do {                                                    \
    plx_status status_ = (call);                          \
    if (status_ != PLX_OK) return failed(#call, status_); \
  } while (0)

static int run(plx_ir* ir) {
  const int64_t x_shape[2] = {ROWS, INNER};
  const int64_t w_shape[2] = {INNER, COLS};
  const int64_t b_shape[1] = {COLS};
  const float w_data[INNER * COLS] = {1.0f, -1.0f, 0.5f, 2.0f, -2.0f, 0.25f};
  const float b_data[COLS] = {0.5f, -1.0f};
  float x_data[STEPS * ROWS * INNER];
  float h_data[STEPS * ROWS * COLS];
  const int64_t x_host_shape[3] = {STEPS, ROWS, INNER};
  const int64_t h_host_shape[3] = {STEPS, ROWS, COLS};
  plx_stream x_stream = 0, h_stream = 0;
  plx_tensor x = 0, w = 0, b = 0, xw = 0, sum = 0, h = 0;
  plx_tensor inputs[2];
  size_t count = 0;
  plx_session_options options;
  plx_session* session = NULL;
  plx_host_array in, out;
  int64_t host_shape[PLX_MAX_RANK + 1];
  size_t host_rank = 0;
  int i, s, r, c, k, mismatches = 0;

  CHECK(plx_ir_add_h2d_stream(ir, "x", PLX_DTYPE_FLOAT32, x_shape, 2, &x_stream, &x));
  CHECK(plx_ir_add_variable(ir, "w", PLX_DTYPE_FLOAT32, w_shape, 2, w_data, sizeof w_data, &w));
  CHECK(plx_ir_add_variable(ir, "b", PLX_DTYPE_FLOAT32, b_shape, 1, b_data, sizeof b_data, &b));
  inputs[0] = x;
  inputs[1] = w;
  CHECK(plx_ir_add_op(ir, "matmul", inputs, 2, NULL, 0, &xw, 1, &count));
  inputs[0] = xw;
  inputs[1] = b;
  CHECK(plx_ir_add_op(ir, "add", inputs, 2, NULL, 0, &sum, 1, &count));
  CHECK(plx_ir_add_op(ir, "relu", &sum, 1, NULL, 0, &h, 1, &count));
  CHECK(plx_ir_add_d2h_stream(ir, "h", h, &h_stream));

  plx_session_options_init(&options);
  options.device_iterations = STEPS;
  options.threads_per_device = 1;
  CHECK(plx_session_create(ir, &options, &session));

  CHECK(plx_session_get_host_shape(session, x_stream, host_shape, PLX_MAX_RANK + 1, &host_rank));
  if (host_rank != 3 || host_shape[0] != STEPS || host_shape[1] != ROWS || host_shape[2] != INNER) {
    fprintf(stderr, "c_program: host shape of x has rank %zu, expected [%d,%d,%d]\n", host_rank, STEPS, ROWS, INNER);
    plx_session_destroy(session);
    return 1;
  }

  for (i = 0; i < STEPS * ROWS * INNER; ++i) x_data[i] = (float)(i % 5) - 1.5f;
  for (i = 0; i < STEPS * ROWS * COLS; ++i) h_data[i] = -100.0f;
  in.stream = x_stream;
  in.dtype = PLX_DTYPE_FLOAT32;
  in.data = x_data;
  in.shape = x_host_shape;
  in.rank = 3;
  out.stream = h_stream;
  out.dtype = PLX_DTYPE_FLOAT32;
  out.data = h_data;
  out.shape = h_host_shape;
  out.rank = 3;
  {
    plx_status status = plx_session_run(session, &in, 1, &out, 1);
    if (status != PLX_OK) {
      plx_session_destroy(session);
      return failed("plx_session_run", status);
    }
  }
  plx_session_destroy(session);

  for (s = 0; s < STEPS; ++s) {
    for (r = 0; r < ROWS; ++r) {
      for (c = 0; c < COLS; ++c) {
        float expected = b_data[c];
        float got = h_data[(s * ROWS + r) * COLS + c];
        for (k = 0; k < INNER; ++k) expected += x_data[(s * ROWS + r) * INNER + k] * w_data[k * COLS + c];
        if (expected < 0.0f) expected = 0.0f;
        float diff = got > expected ? got - expected : expected - got;
        if (!(diff <= 1e-5f)) { /* also catches NaN */
          fprintf(stderr, "c_program: h[%d][%d][%d] = %g, expected %g\n", s, r, c, (double)got, (double)expected);
          ++mismatches;
        }
      }
    }
  }
  return mismatches == 0 ? 0 : 1;
}

int main(void) {
  plx_ir* ir = NULL;
  plx_status status;
  int result;
  if (plx_version() != PLX_API_VERSION) {
    fprintf(stderr, "c_program: library API version %u, header %d\n", (unsigned)plx_version(), PLX_API_VERSION);
    return 1;
  }
  status = plx_ir_create(&ir);
  if (status != PLX_OK) return failed("plx_ir_create", status);
  result = run(ir);
  plx_ir_destroy(ir);
  if (result == 0) printf("c_program: ok\n");
  return result;
}
