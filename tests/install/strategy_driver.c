/*
 * Trains a two-stage program (block B1 on device 0, block B2 on device 1; gradient
 * accumulation 4, device iterations 2, three runs) under the execution strategy named on
 * the command line, then prints every loss and the weights as exact hex floats. Two
 * strategies train alike when the outputs are equal byte for byte (docs/plugins.md: a
 * schedule changes when steps run, not what they compute). Exits 1, printing Plexus's
 * message, when a call fails (e.g. a schedule that breaks a rule, unknown options).
 *
 * Usage: strategy_driver <strategy> [strategy options]
 */
#include <plexus/plexus.h>

#include <stdio.h>

enum { BATCH = 4, IN = 3, HIDDEN = 5, OUT = 2, MICRO_BATCHES = 4, ITERATIONS = 2, RUNS = 3 };
enum { ROWS = ITERATIONS * MICRO_BATCHES };

#define CHECK(call)                                                          \
  do {                                                                       \
    if ((call) != PLX_OK) {                                                  \
      fprintf(stderr, "strategy_driver: %s: %s\n", #call, plx_last_error()); \
      return 1;                                                              \
    }                                                                        \
  } while (0)

typedef struct program {
  plx_stream x_stream, labels_stream, loss_stream;
  plx_tensor w[2];
} program;

/* Fills `count` floats with a fixed pattern in [-0.5, 0.5). */
static void pattern(float* values, int count, int step, int modulus) {
  int i;
  for (i = 0; i < count; ++i) values[i] = (float)((i * step) % modulus) / (float)modulus - 0.5f;
}

/* x -> relu(x w1) in B1 on device 0; -> (.) w2 -> loss in B2 on device 1; SGD. */
static int build(plx_ir* ir, program* p) {
  const int64_t x_shape[2] = {BATCH, IN}, labels_shape[1] = {BATCH}, w1_shape[2] = {IN, HIDDEN},
                w2_shape[2] = {HIDDEN, OUT};
  const plx_attr sgd[2] = {plx_attr_float("a", 1.0), plx_attr_float("b", -0.1)};
  float w1[IN * HIDDEN], w2[HIDDEN * OUT];
  plx_tensor x, labels, t, loss, grads[2], in[2], updated;
  int i;
  pattern(w1, IN * HIDDEN, 7, 11);
  pattern(w2, HIDDEN * OUT, 5, 7);
  CHECK(plx_ir_begin_block(ir, "B1", 0));
  CHECK(plx_ir_add_h2d_stream(ir, "x", PLX_DTYPE_FLOAT32, x_shape, 2, &p->x_stream, &x));
  CHECK(plx_ir_add_variable(ir, "w1", PLX_DTYPE_FLOAT32, w1_shape, 2, w1, sizeof w1, &p->w[0]));
  in[0] = x;
  in[1] = p->w[0];
  CHECK(plx_ir_add_op(ir, "matmul", in, 2, NULL, 0, &t, 1, NULL));
  CHECK(plx_ir_add_op(ir, "relu", &t, 1, NULL, 0, &t, 1, NULL));
  CHECK(plx_ir_end_block(ir));
  CHECK(plx_ir_begin_block(ir, "B2", 1));
  CHECK(plx_ir_add_h2d_stream(ir, "labels", PLX_DTYPE_INT32, labels_shape, 1, &p->labels_stream, &labels));
  CHECK(plx_ir_add_variable(ir, "w2", PLX_DTYPE_FLOAT32, w2_shape, 2, w2, sizeof w2, &p->w[1]));
  in[0] = t;
  in[1] = p->w[1];
  CHECK(plx_ir_add_op(ir, "matmul", in, 2, NULL, 0, &t, 1, NULL));
  in[0] = t;
  in[1] = labels;
  CHECK(plx_ir_add_op(ir, "softmax_cross_entropy", in, 2, NULL, 0, &loss, 1, NULL));
  CHECK(plx_ir_add_d2h_stream(ir, "loss", loss, &p->loss_stream));
  CHECK(plx_ir_end_block(ir));
  CHECK(plx_ir_autodiff(ir, loss, p->w, 2, grads));
  for (i = 0; i < 2; ++i) {
    in[0] = p->w[i];
    in[1] = grads[i];
    CHECK(plx_ir_add_op(ir, "scaled_add_", in, 2, sgd, 2, &updated, 1, NULL));
  }
  return 0;
}

static int train_and_print(plx_session* session, const program* p) {
  static float x[ROWS * BATCH * IN], loss[ROWS], w1[IN * HIDDEN], w2[HIDDEN * OUT];
  static int32_t labels[ROWS * BATCH];
  const int64_t x_shape[3] = {ROWS, BATCH, IN}, labels_shape[2] = {ROWS, BATCH},
                loss_shape[2] = {ITERATIONS, MICRO_BATCHES};
  plx_host_array inputs[2], output;
  int i, run;
  pattern(x, ROWS * BATCH * IN, 13, 17);
  for (i = 0; i < ROWS * BATCH; ++i) labels[i] = (i * 3) % OUT;
  inputs[0].stream = p->x_stream;
  inputs[0].dtype = PLX_DTYPE_FLOAT32;
  inputs[0].data = x;
  inputs[0].shape = x_shape;
  inputs[0].rank = 3;
  inputs[1].stream = p->labels_stream;
  inputs[1].dtype = PLX_DTYPE_INT32;
  inputs[1].data = labels;
  inputs[1].shape = labels_shape;
  inputs[1].rank = 2;
  output.stream = p->loss_stream;
  output.dtype = PLX_DTYPE_FLOAT32;
  output.data = loss;
  output.shape = loss_shape;
  output.rank = 2;
  for (run = 0; run < RUNS; ++run) {
    CHECK(plx_session_run(session, inputs, 2, &output, 1));
    for (i = 0; i < ROWS; ++i) printf("loss %d.%d: %a\n", run, i, loss[i]);
  }
  CHECK(plx_session_read_variable(session, p->w[0], w1, sizeof w1));
  CHECK(plx_session_read_variable(session, p->w[1], w2, sizeof w2));
  for (i = 0; i < IN * HIDDEN; ++i) printf("w1[%d]: %a\n", i, w1[i]);
  for (i = 0; i < HIDDEN * OUT; ++i) printf("w2[%d]: %a\n", i, w2[i]);
  return 0;
}

int main(int argc, char** argv) {
  plx_ir* ir = NULL;
  plx_session* session = NULL;
  plx_session_options options;
  program p;
  int failed;
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: strategy_driver <strategy> [strategy options]\n");
    return 2;
  }
  CHECK(plx_ir_create(&ir));
  failed = build(ir, &p);
  if (!failed) {
    plx_session_options_init(&options);
    options.execution_strategy = argv[1];
    options.strategy_options = argc == 3 ? argv[2] : NULL;
    options.gradient_accumulation = MICRO_BATCHES;
    options.device_iterations = ITERATIONS;
    options.threads_per_device = 1;
    if (plx_session_create(ir, &options, &session) != PLX_OK) {
      fprintf(stderr, "strategy_driver: plx_session_create: %s\n", plx_last_error());
      failed = 1;
    }
  }
  plx_ir_destroy(ir);
  failed = failed || train_and_print(session, &p);
  plx_session_destroy(session);
  return failed;
}
