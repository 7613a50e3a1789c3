/*
 * The program of docs/tutorial-c.md, which quotes all of it, piece by piece.
 *
 * Trains a two-layer perceptron on synthetic data (points in 4-D labelled by a fixed
 * linear "teacher", so it needs no download) with plain SGD on 2 replicas, through the
 * Plexus C API only, twice: with its layers written as ops, then as two calls of Linear
 * graphs. Exits 0 when, both times, the loss of the last run is at most a quarter of the
 * first step's and the trained weights, read back to the host, classify fresh points at
 * least 90 % right, and the two builds train to the same weights bit for bit; otherwise,
 * or on any Plexus error, prints why and exits 1.
 *
 * Build against an installed Plexus:
 *   cc -std=c99 tutorial.c $(pkg-config --cflags --libs plexus) -o tutorial
 */
#include <plexus/plexus.h>

#include <stdio.h>
#include <string.h>

enum {
  REPLICAS = 2,   /* replication factor: copies of the program, each on its own device */
  BATCH = 16,     /* samples per replica per step */
  FEATURES = 4,   /* input size */
  HIDDEN = 16,    /* hidden layer size */
  CLASSES = 3,    /* output size */
  STEPS = 25,     /* device iterations: steps per plx_session_run call */
  RUNS = 12,      /* plx_session_run calls */
  TEST_SAMPLES = 1000,
  WEIGHTS = FEATURES * HIDDEN + HIDDEN + HIDDEN * CLASSES + CLASSES /* w1, b1, w2, b2 */
};
#define LEARNING_RATE 0.2
#define REQUIRED_LOSS_DROP 4.0
#define REQUIRED_ACCURACY 0.9

/* The teacher: a point's label is the class c maximising sum_f x[f] * TEACHER[f][c]. */
static const float TEACHER[FEATURES][CLASSES] = {
    {1.0f, -0.5f, -0.5f}, {-0.5f, 1.0f, -0.5f}, {0.5f, 0.5f, -1.0f}, {-1.0f, 0.0f, 1.0f}};

/* A small deterministic generator (the data and the initial weights are the same on
 * every machine): uniform in [-1, 1). */
static unsigned long long random_state = 12345;
static float uniform(void) {
  random_state = random_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((random_state >> 40) & 0xFFFFFF) / 8388608.0f - 1.0f;
}

/* Fills `count` points x[count][FEATURES] and their teacher labels. */
static void make_samples(float* x, int32_t* labels, int64_t count) {
  int64_t i;
  int f, c;
  for (i = 0; i < count; ++i) {
    float best = -1e30f;
    for (f = 0; f < FEATURES; ++f) x[i * FEATURES + f] = uniform();
    for (c = 0; c < CLASSES; ++c) {
      float score = 0.0f;
      for (f = 0; f < FEATURES; ++f) score += x[i * FEATURES + f] * TEACHER[f][c];
      if (score > best) {
        best = score;
        labels[i] = c;
      }
    }
  }
}

/* Every Plexus call returns a plx_status; on error plx_last_error() says what was wrong. */
static int report(const char* call, plx_status status) {
  fprintf(stderr, "tutorial: %s failed: %s: %s\n", call, plx_status_name(status), plx_last_error());
  return 1;
}

#define CHECK(call)                                         \
  do {                                                      \
    plx_status status_ = (call);                            \
    if (status_ != PLX_OK) return report(#call, status_);   \
  } while (0)

/* The model's tensors and streams. */
typedef struct model {
  plx_stream x_stream, labels_stream, loss_stream;
  plx_tensor x, labels, loss;
  plx_tensor params[4]; /* w1 [FEATURES, HIDDEN], b1 [HIDDEN], w2 [HIDDEN, CLASSES], b2 [CLASSES] */
} model;

/* Adds an op with two inputs and no attributes; its one output goes to *out. */
static plx_status op2(plx_ir* ir, const char* op, plx_tensor a, plx_tensor b, plx_tensor* out) {
  const plx_tensor inputs[2] = {a, b};
  return plx_ir_add_op(ir, op, inputs, 2, NULL, 0, out, 1, NULL);
}

/* Sets count values drawn uniformly from [-scale, scale). */
static void fill_uniform(float* values, int count, float scale) {
  int i;
  for (i = 0; i < count; ++i) values[i] = scale * uniform();
}

/* The two layers as calls of Linear graphs (section 12). */
static int layers_from_graphs(plx_ir* ir, const model* m, plx_tensor* logits);

static int build_forward(plx_ir* ir, model* m, int use_graphs) {
  static float w1[FEATURES * HIDDEN], b1[HIDDEN], w2[HIDDEN * CLASSES], b2[CLASSES]; /* biases 0 */
  const int64_t x_shape[2] = {BATCH, FEATURES}, labels_shape[1] = {BATCH};
  const int64_t w1_shape[2] = {FEATURES, HIDDEN}, b1_shape[1] = {HIDDEN};
  const int64_t w2_shape[2] = {HIDDEN, CLASSES}, b2_shape[1] = {CLASSES};
  plx_tensor t;

  CHECK(plx_ir_set_replication_factor(ir, REPLICAS)); /* first: before any tensor */
  CHECK(plx_ir_add_h2d_stream(ir, "x", PLX_DTYPE_FLOAT32, x_shape, 2, &m->x_stream, &m->x));
  CHECK(plx_ir_add_h2d_stream(ir, "labels", PLX_DTYPE_INT32, labels_shape, 1, &m->labels_stream, &m->labels));
  fill_uniform(w1, FEATURES * HIDDEN, 0.5f);
  fill_uniform(w2, HIDDEN * CLASSES, 0.5f);
  CHECK(plx_ir_add_variable(ir, "w1", PLX_DTYPE_FLOAT32, w1_shape, 2, w1, sizeof w1, &m->params[0]));
  CHECK(plx_ir_add_variable(ir, "b1", PLX_DTYPE_FLOAT32, b1_shape, 1, b1, sizeof b1, &m->params[1]));
  CHECK(plx_ir_add_variable(ir, "w2", PLX_DTYPE_FLOAT32, w2_shape, 2, w2, sizeof w2, &m->params[2]));
  CHECK(plx_ir_add_variable(ir, "b2", PLX_DTYPE_FLOAT32, b2_shape, 1, b2, sizeof b2, &m->params[3]));

  if (use_graphs) {
    CHECK(layers_from_graphs(ir, m, &t));                           /* section 12 */
  } else {
    CHECK(op2(ir, "matmul", m->x, m->params[0], &t));               /* [BATCH, HIDDEN] */
    CHECK(op2(ir, "add", t, m->params[1], &t));                     /* + b1, broadcast */
    CHECK(plx_ir_add_op(ir, "relu", &t, 1, NULL, 0, &t, 1, NULL));
    CHECK(op2(ir, "matmul", t, m->params[2], &t));                  /* [BATCH, CLASSES] */
    CHECK(op2(ir, "add", t, m->params[3], &t));                     /* the logits */
  }
  CHECK(op2(ir, "softmax_cross_entropy", t, m->labels, &m->loss));  /* f32 [], the batch mean */
  CHECK(plx_ir_add_d2h_stream(ir, "loss", m->loss, &m->loss_stream));
  return 0;
}

static int build_update(plx_ir* ir, const model* m) {
  const plx_attr mean = plx_attr_string("op", "mean");
  const plx_attr sgd[2] = {plx_attr_float("a", 1.0), plx_attr_float("b", -LEARNING_RATE)};
  plx_tensor grads[4];
  int i;

  CHECK(plx_ir_autodiff(ir, m->loss, m->params, 4, grads));
  for (i = 0; i < 4; ++i) {
    plx_tensor inputs[2], updated;
    inputs[0] = m->params[i];
    CHECK(plx_ir_add_op(ir, "replicated_all_reduce_", &grads[i], 1, &mean, 1, &inputs[1], 1, NULL));
    CHECK(plx_ir_add_op(ir, "scaled_add_", inputs, 2, sgd, 2, &updated, 1, NULL)); /* p = p - lr g */
  }
  return 0;
}

static int create_session(const plx_ir* ir, plx_session** session) {
  plx_session_options options;
  plx_session_options_init(&options);
  options.device_iterations = STEPS;
  options.threads_per_device = 1; /* compute threads per device: 2 replicas, 2 devices */
  CHECK(plx_session_create(ir, &options, session));
  return 0;
}

/* Asks the session for a stream's host array shape, prints it and compares it with
 * `expected`; returns 0 when they are equal. */
static int check_host_shape(const plx_session* session, plx_stream stream, const char* name,
                            const int64_t* expected, size_t expected_rank) {
  int64_t shape[PLX_MAX_RANK + 2];
  size_t rank = 0, i;
  int same;
  CHECK(plx_session_get_host_shape(session, stream, shape, PLX_MAX_RANK + 2, &rank));
  same = rank == expected_rank;
  printf("host array of %-6s [", name);
  for (i = 0; i < rank; ++i) {
    printf(i ? ", %lld" : "%lld", (long long)shape[i]);
    same = same && shape[i] == expected[i];
  }
  printf("]\n");
  if (!same) fprintf(stderr, "tutorial: the session expects another host shape for %s\n", name);
  return !same;
}

static plx_host_array host_array(plx_stream stream, plx_dtype dtype, void* data, const int64_t* shape,
                                 size_t rank) {
  plx_host_array a;
  a.stream = stream;
  a.dtype = dtype;
  a.data = data;
  a.shape = shape;
  a.rank = rank;
  return a;
}

/* RUNS runs of STEPS steps on fresh data; *first_loss is the loss of step 0 on replica 0,
 * *last_loss the mean over the last run's steps and replicas. */
static int train(plx_session* session, const model* m, float* first_loss, float* last_loss) {
  static float x[STEPS][REPLICAS][BATCH][FEATURES];
  static int32_t labels[STEPS][REPLICAS][BATCH];
  static float loss[STEPS][REPLICAS];
  const int64_t x_shape[4] = {STEPS, REPLICAS, BATCH, FEATURES};
  const int64_t labels_shape[3] = {STEPS, REPLICAS, BATCH};
  const int64_t loss_shape[2] = {STEPS, REPLICAS};
  plx_host_array inputs[2], output;
  int run, i, r;

  if (check_host_shape(session, m->x_stream, "x", x_shape, 4) ||
      check_host_shape(session, m->labels_stream, "labels", labels_shape, 3) ||
      check_host_shape(session, m->loss_stream, "loss", loss_shape, 2)) {
    return 1;
  }
  inputs[0] = host_array(m->x_stream, PLX_DTYPE_FLOAT32, x, x_shape, 4);
  inputs[1] = host_array(m->labels_stream, PLX_DTYPE_INT32, labels, labels_shape, 3);
  output = host_array(m->loss_stream, PLX_DTYPE_FLOAT32, loss, loss_shape, 2);

  for (run = 0; run < RUNS; ++run) {
    double sum = 0.0;
    make_samples(&x[0][0][0][0], &labels[0][0][0], STEPS * REPLICAS * BATCH);
    CHECK(plx_session_run(session, inputs, 2, &output, 1));
    for (i = 0; i < STEPS; ++i) {
      for (r = 0; r < REPLICAS; ++r) sum += loss[i][r];
    }
    if (run == 0) *first_loss = loss[0][0];
    *last_loss = (float)(sum / (STEPS * REPLICAS));
    printf("run %2d: mean loss %.4f\n", run, *last_loss);
  }
  return 0;
}

/* Classifies TEST_SAMPLES fresh points on the host with the trained weights `w`
 * (w1, b1, w2, b2 read from the session); returns the fraction right. */
static double host_accuracy(float* const w[4]) {
  static float x[TEST_SAMPLES * FEATURES];
  static int32_t labels[TEST_SAMPLES];
  int64_t i, right = 0;
  int h, c, f;
  make_samples(x, labels, TEST_SAMPLES);
  for (i = 0; i < TEST_SAMPLES; ++i) {
    float hidden[HIDDEN], best = -1e30f;
    int guess = 0;
    for (h = 0; h < HIDDEN; ++h) {
      hidden[h] = w[1][h];
      for (f = 0; f < FEATURES; ++f) hidden[h] += x[i * FEATURES + f] * w[0][f * HIDDEN + h];
      if (hidden[h] < 0.0f) hidden[h] = 0.0f;
    }
    for (c = 0; c < CLASSES; ++c) {
      float logit = w[3][c];
      for (h = 0; h < HIDDEN; ++h) logit += hidden[h] * w[2][h * CLASSES + c];
      if (logit > best) {
        best = logit;
        guess = c;
      }
    }
    right += guess == labels[i];
  }
  return (double)right / TEST_SAMPLES;
}

static int read_back_and_test(const plx_session* session, const model* m, float* weights, double* accuracy) {
  float* const w1 = weights;
  float* const b1 = w1 + FEATURES * HIDDEN;
  float* const w2 = b1 + HIDDEN;
  float* const b2 = w2 + HIDDEN * CLASSES;
  float* const values[4] = {w1, b1, w2, b2};
  const size_t bytes[4] = {sizeof(float) * FEATURES * HIDDEN, sizeof(float) * HIDDEN, sizeof(float) * HIDDEN * CLASSES,
                           sizeof(float) * CLASSES};
  int64_t shape[PLX_MAX_RANK + 1];
  size_t rank = 0;
  int i;

  CHECK(plx_session_get_variable_shape(session, m->params[2], shape, PLX_MAX_RANK + 1, &rank));
  printf("w2 reads as [%lld, %lld]: one value for all replicas\n", (long long)shape[0], (long long)shape[1]);
  for (i = 0; i < 4; ++i) CHECK(plx_session_read_variable(session, m->params[i], values[i], bytes[i]));
  printf("b2 = [%.3f, %.3f, %.3f]\n", b2[0], b2[1], b2[2]);
  *accuracy = host_accuracy(values);
  return 0;
}

/* A Linear layer as a graph: inputs x [BATCH, in], w [in, out], b [out]; output x w + b. */
static int linear_graph(plx_ir* ir, const char* name, int64_t in, int64_t out, plx_graph* graph) {
  const int64_t x_shape[2] = {BATCH, in}, w_shape[2] = {in, out}, b_shape[1] = {out};
  plx_tensor x, w, b, y;
  CHECK(plx_ir_create_graph(ir, name, graph));
  CHECK(plx_graph_add_input(ir, *graph, "x", PLX_DTYPE_FLOAT32, x_shape, 2, &x));
  CHECK(plx_graph_add_input(ir, *graph, "w", PLX_DTYPE_FLOAT32, w_shape, 2, &w));
  CHECK(plx_graph_add_input(ir, *graph, "b", PLX_DTYPE_FLOAT32, b_shape, 1, &b));
  CHECK(plx_ir_begin_graph(ir, *graph)); /* ops added now belong to the graph */
  CHECK(op2(ir, "matmul", x, w, &y));
  CHECK(op2(ir, "add", y, b, &y));
  CHECK(plx_ir_end_graph(ir));
  CHECK(plx_graph_add_output(ir, *graph, y));
  return 0;
}

/* Calls graph g on (x, w, b); its one output goes to *y. */
static plx_status call3(plx_ir* ir, plx_graph g, plx_tensor x, plx_tensor w, plx_tensor b, plx_tensor* y) {
  const plx_tensor inputs[3] = {x, w, b};
  return plx_ir_call(ir, g, inputs, 3, NULL, y, 1, NULL, NULL);
}

static int layers_from_graphs(plx_ir* ir, const model* m, plx_tensor* logits) {
  plx_graph fc1, fc2;
  plx_tensor t;
  CHECK(linear_graph(ir, "fc1", FEATURES, HIDDEN, &fc1));
  CHECK(linear_graph(ir, "fc2", HIDDEN, CLASSES, &fc2));
  CHECK(call3(ir, fc1, m->x, m->params[0], m->params[1], &t));
  CHECK(plx_ir_add_op(ir, "relu", &t, 1, NULL, 0, &t, 1, NULL));
  CHECK(call3(ir, fc2, t, m->params[2], m->params[3], logits));
  return 0;
}

/* Builds, trains and checks the network (its layers as ops, or with use_graphs as calls
 * of Linear graphs) and leaves the trained weights in weights[WEIGHTS]. */
static int run(int use_graphs, float* weights) {
  plx_ir* ir = NULL;
  plx_session* session = NULL;
  model m;
  float first_loss = 0.0f, last_loss = 0.0f;
  double accuracy = 0.0;
  int failed;

  random_state = 12345; /* the same data and initial weights for both builds */
  CHECK(plx_ir_create(&ir));
  failed = build_forward(ir, &m, use_graphs) || build_update(ir, &m) || create_session(ir, &session);
  plx_ir_destroy(ir); /* the session copied what it needs */
  failed = failed || train(session, &m, &first_loss, &last_loss) || read_back_and_test(session, &m, weights, &accuracy);
  plx_session_destroy(session);
  if (failed) return 1;

  printf("loss %.4f -> %.4f (%.1fx lower), accuracy on the host %.1f %%\n", first_loss, last_loss,
         first_loss / last_loss, 100.0 * accuracy);
  if (!(last_loss * REQUIRED_LOSS_DROP <= first_loss) || accuracy < REQUIRED_ACCURACY) {
    fprintf(stderr, "tutorial: expected the loss %.0fx lower and an accuracy of at least %.0f %%\n",
            REQUIRED_LOSS_DROP, 100.0 * REQUIRED_ACCURACY);
    return 1;
  }
  return 0;
}

int main(void) {
  static float flat[WEIGHTS], graphs[WEIGHTS];

  printf("Plexus C API %u (this program was built against %d)\n", (unsigned)plx_version(), PLX_API_VERSION);
  if (run(0, flat)) return 1;
  printf("again, with the layers as calls of Linear graphs:\n");
  if (run(1, graphs)) return 1;
  if (memcmp(flat, graphs, sizeof flat) != 0) {
    fprintf(stderr, "tutorial: the two builds trained to different weights\n");
    return 1;
  }
  printf("both builds trained to the same weights, bit for bit\n");
  printf("tutorial: ok\n");
  return 0;
}
