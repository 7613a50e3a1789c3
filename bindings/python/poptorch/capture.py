"""Capturing a torch.nn.Module's forward as a Plexus graph: torch.fx traces the forward on
the first call (PopTorch traces it too), each node is tagged with the Block it was traced
in, and each node is lowered (lowering.py) inside that block's plexus.Block. Parameters
and buffers become variables; the forward's tensor arguments become host-to-device
streams of one micro-batch. An operation with no lowering raises UnsupportedOp naming
the op, the module path and the model's source line."""
import inspect
import os

import numpy as np
import torch
import torch.fx

import plexus
from plexus import ops
from poptorch import blocks, lowering


class _Tracer(torch.fx.Tracer):
    """fx's tracer that records, per node, the Block it was made in (a `with Block`, or the
    last BeginBlock module entered) and the module path of the call."""

    def __init__(self):
        super().__init__()
        self.record_stack_traces = True
        self._begun = None
        self._path = []

    def call_module(self, m, forward, args, kwargs):
        begun = getattr(m, "_poptorch_begin_block", None)
        if begun is not None:
            self._begun = (begun.user_id, begun.ipu_id)
        self._path.append(self.path_of_module(m))
        try:
            return super().call_module(m, forward, args, kwargs)
        finally:
            self._path.pop()

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        node.meta["poptorch_block"] = blocks.current_block() or self._begun
        node.meta["poptorch_path"] = self._path[-1] if self._path else ""
        return node


def trace(module, args):
    """(fx GraphModule, names of the forward's tensor arguments) of `module` called with
    `args`: the forward's other parameters with defaults are fixed to them."""
    signature = inspect.signature(module.forward)
    bound = signature.bind(*args)
    concrete = {name: p.default for name, p in signature.parameters.items()
                if name not in bound.arguments and p.default is not inspect.Parameter.empty}
    graph = _Tracer().trace(module, concrete_args=concrete or None)
    return torch.fx.GraphModule(module, graph), list(bound.arguments)


# Frames of torch and of this package are not the model's source line.
_NOT_USER = tuple(os.path.realpath(os.path.dirname(m.__file__)) + os.sep for m in (torch, blocks))


def where(node):
    """"module '<path>', File "<file>", line <n>, in <function>" for errors: the innermost
    frame of the trace that is neither torch's nor poptorch's (fx records innermost first),
    i.e. the model's line that made the node."""
    path = node.meta.get("poptorch_path") or "<top>"
    frames = [l.strip() for l in (node.stack_trace or "").splitlines() if l.strip().startswith("File ")]
    user = [l for l in frames if not os.path.realpath(l.split('"')[1] if '"' in l else "").startswith(_NOT_USER)]
    at = (user or frames or ["unknown source line"])[0]
    return f"module '{path}', {at}"


class Lowering:
    """Lowers one traced graph into the current plexus graph: `inputs` {placeholder name:
    plexus Tensor}, `module` the traced module (for parameters), `training` (dropout),
    `seed`. After run(): `outputs` (the forward's return value with Tensors), `blocks`
    ({block: ipu_id} in first-use order), `params` ({torch Parameter: Variable})."""

    def __init__(self, module, inputs, training, seed):
        self.module, self.inputs, self.training, self.seed = module, inputs, training, seed
        self.params, self.blocks, self.outputs, self.block_of = {}, {}, None, {}
        self._block = None

    def param(self, p):
        """The variable of torch parameter or buffer `p` (one per tensor, shared)."""
        if p not in self.params:
            name = next((n for n, q in list(self.module.named_parameters()) + list(self.module.named_buffers())
                         if q is p), f"param{len(self.params)}")
            self.params[p] = plexus.variable(p.detach().cpu().numpy().astype(np.float32), plexus.float32, name=name)
        return self.params[p]

    def run(self, graph_module):
        env = {}
        for node in graph_module.graph.nodes:
            if node.op == "output":
                self.outputs = torch.fx.node.map_arg(node.args[0], lambda n: env[n])
                break
            block = node.meta.get("poptorch_block") or self._block
            self._block = block
            if block is None:
                env[node] = self._lower(graph_module, node, env)
                continue
            self.blocks.setdefault(block[0], block[1])
            with plexus.Block(block[0]):
                env[node] = self._lower(graph_module, node, env)
            if isinstance(env[node], plexus.Tensor):
                self.block_of[env[node]] = block[0]
        return self

    def store(self, outputs):
        """`outputs` with each Tensor replaced by a device-to-host stream stored in the block
        that made it. Raises TypeError for a value that is not a tensor, tuple or list."""
        if isinstance(outputs, (tuple, list)):
            return type(outputs)(self.store(o) for o in outputs)
        if outputs is None:
            return None
        if not isinstance(outputs, plexus.Tensor):
            raise TypeError(f"poptorch: the model returned {type(outputs).__name__}; return tensors, tuples or lists")
        block = self.block_of.get(outputs)
        if block is None:
            return plexus.d2h_stream(outputs)
        with plexus.Block(block):
            return plexus.d2h_stream(outputs)

    def _lower(self, gm, node, env):
        args = torch.fx.node.map_arg(node.args, lambda n: env[n])
        kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n])
        try:
            return self._dispatch(gm, node, args, kwargs)
        except lowering.Unsupported as e:
            raise UnsupportedOp(f"poptorch: {e} ({where(node)})") from None
        except (plexus.Error, TypeError, ValueError) as e:
            raise type(e)(f"poptorch: {node.target} failed ({where(node)}): {e}") from None

    def _dispatch(self, gm, node, args, kwargs):
        if node.op == "placeholder":  # a concrete argument (a default fixed by trace()) is not read
            return self.inputs.get(node.target)
        if node.op == "get_attr":
            return self.param(_attr(gm, node.target))
        if node.op == "call_module":
            m = gm.get_submodule(node.target)
            fn = lowering.MODULES.get(type(m))
            if fn is None:
                raise lowering.Unsupported(f"module {type(m).__module__}.{type(m).__name__} is not supported")
            return fn(m, self, *args, **kwargs)
        if node.op == "call_function":
            fn = lowering.FUNCTIONS.get(node.target)
            if fn is None:
                raise lowering.Unsupported(f"function {getattr(node.target, '__name__', node.target)} is not supported")
            return fn(*args, **kwargs)
        fn = lowering.METHODS.get(node.target)
        if fn is None:
            raise lowering.Unsupported(f"tensor method .{node.target}() is not supported")
        return fn(*args, **kwargs)


def _attr(gm, target):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


class UnsupportedOp(plexus.Unsupported):
    """A traced operation Plexus has no lowering for: names the op, module path and line."""
