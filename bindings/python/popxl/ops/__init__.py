"""popxl.ops: every op of plexus.ops under its PopXL name, plus PopXL's host_store,
remote_code_load (no effect on a CPU: popxl.ops.code_loading), nll_loss and
nll_loss_with_softmax_grad (popxl.ops.losses), init (popxl.ops.init),
ops.call / call_with_info / repeat (popxl.ops.call), ops.collectives and ops.var_updates,
and the layer ops conv (popxl.ops.conv), max_pool and average_pool (popxl.ops.pool),
group_norm, scaled_add and io_tile_copy (their modules), over plexus.layers.
An unknown name raises plexus.UnknownOp with close names suggested."""
from plexus import ops as _plexus_ops
from popxl.streams import host_store
from popxl.ops.code_loading import remote_code_load
from popxl.ops.losses import nll_loss, nll_loss_with_softmax_grad
from popxl.ops.init import init
from popxl.ops import call as _call_module, collectives, var_updates  # noqa: F401
from popxl.ops.call import call, call_with_info, repeat, repeat_with_info, CallSiteInfo  # noqa: F401,E402
from popxl.ops.inplace_activations import relu_, gelu_  # noqa: F401,E402
from popxl.ops.var_updates import lamb_square  # noqa: F401,E402
from popxl.ops.conv import conv  # noqa: F401,E402
from popxl.ops.pool import max_pool, average_pool  # noqa: F401,E402
from popxl.ops.group_norm import group_norm, layer_norm  # noqa: F401,E402
from popxl.ops.scaled_add import scaled_add  # noqa: F401,E402
from popxl.ops.io_tile_copy import io_tile_copy  # noqa: F401,E402


def _install():
    namespace = globals()
    for name in dir(_plexus_ops):
        namespace.setdefault(name, getattr(_plexus_ops, name))


_install()


def __getattr__(name):
    return getattr(_plexus_ops, name)


__all__ = sorted(set(dir(_plexus_ops)) | {"host_store", "remote_code_load", "init", "nll_loss",
                                          "nll_loss_with_softmax_grad", "call", "call_with_info", "repeat",
                                          "repeat_with_info", "CallSiteInfo",
                                          "collectives", "var_updates", "relu_", "gelu_", "lamb_square",
                                          "conv", "max_pool", "average_pool", "group_norm", "layer_norm", "scaled_add",
                                          "io_tile_copy"})
