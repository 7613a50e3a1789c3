import numpy as np
import plexus
from plexus import ops

rng = np.random.default_rng(0)
ir = plexus.Ir(replication=2)                      # 2 replicas, data parallel
with ir.main_graph:
    x_h2d = plexus.h2d_stream((8, 784), plexus.float32, name="x")
    y_h2d = plexus.h2d_stream((8,), plexus.int32, name="y")
    w = plexus.variable(rng.normal(0, 0.02, (784, 10)), plexus.float32, name="w")
    b = plexus.variable(np.zeros(10), plexus.float32, name="b")
    logits = ops.host_load(x_h2d) @ w + b
    loss = ops.softmax_cross_entropy(logits, ops.host_load(y_h2d))
    for p, g in zip((w, b), plexus.autodiff(loss, [w, b])):
        ops.collectives.replicated_all_reduce_(g, op="mean")
        ops.scaled_add_(p, g, b=-0.05)             # SGD: p <- p - lr * g
    loss_d2h = plexus.d2h_stream(loss, name="loss")

x = rng.normal(size=(10, 2, 8, 784)).astype(np.float32)  # [device_iterations, R, batch, ...]
y = x[..., :10].argmax(-1).astype(np.int32)              # labels the model can learn
with plexus.Session(ir, device_iterations=10) as session:
    for run in range(5):
        losses = session.run({x_h2d: x, y_h2d: y})[loss_d2h]  # [10, 2]: each step, each replica
        print(f"run {run}: loss {losses.mean():.4f}")
