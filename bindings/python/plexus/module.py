"""Layers as graphs (PopXL popxl.Module; user guide "Graphs", "Application example:
MNIST"): a subclass defines build(), Ir.create_graph(module, ...) turns it into a graph,
and the graph_input tensors build() kept on self (self.W, self.b) key ops.call's
inputs_dict."""
from plexus.graph import gcg


class Module:
    """A callable layer: override build(*args, **kwargs), which adds ops to the current
    graph and returns None, a Tensor or Tensors. Calling the module calls build;
    create_graph makes a subgraph of it in the current graph's Ir. Not thread-safe."""

    def __call__(self, *args, **kwargs):
        """build(*args, **kwargs): the module's ops inlined in the current graph."""
        return self.build(*args, **kwargs)

    def build(self, *args, **kwargs):
        """The layer's ops. Raises NotImplementedError unless a subclass overrides it."""
        raise NotImplementedError("Your popxl.Module must override `build` method")

    def create_graph(self, *args, **kwargs):
        """gcg().ir.create_graph(self, *args, **kwargs): a subgraph of build (Ir.create_graph)."""
        return gcg().ir.create_graph(self, *args, **kwargs)
