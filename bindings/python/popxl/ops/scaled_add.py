"""popxl.ops.scaled_add: PopXL's a * X + b * Y into a new tensor (the in-place form,
scaled_add_, is the runtime's op)."""
from plexus import ops
from plexus.graph import gcg
from plexus.tensor import Tensor
from popxl.ops.utils import check_in_graph
from popxl.ops.var_updates import _check_like, _check_float32, _scalar


def scaled_add(X, Y, a=1.0, b=1.0):
    """a * X + b * Y, a new float32 tensor of X's shape (PopXL ops.scaled_add): X * a
    and Y * b rounded to float32, then added (a factor 1.0 given as a float is not
    multiplied). No broadcasting.

    X, Y: float32 Tensors of one shape, of the current graph. a, b: floats, or
    one-element float32 Tensors of the current graph (read at run time). Differentiable
    with respect to X, Y and Tensor factors. Raises TypeError / ValueError (not a Tensor
    of the current graph, a factor neither a float nor a Tensor), DTypeMismatch,
    ShapeMismatch (naming the argument)."""
    factors = {name: f for name, f in (("a", a), ("b", b)) if isinstance(f, Tensor)}
    check_in_graph(gcg(), X=X, Y=Y, **factors)
    _check_float32("scaled_add", "X", X)
    _check_like("scaled_add", "Y", Y, X, "X")
    terms = []
    for name, t, f in (("a", X, a), ("b", Y, b)):
        scaled = t if not isinstance(f, Tensor) and f == 1.0 else ops.mul(t, _scalar("scaled_add", name, f, X))
        terms.append(scaled)
    return ops.add(*terms)
