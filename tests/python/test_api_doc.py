"""docs/python.md documents the packages as they are: every public name of `plexus`,
`plexus.layers`, `plexus.report` and `popxl`, every public method and property of their classes, the special
forms of plexus.ops and the collectives appear in it (as `name`), and every op of the
runtime's catalog is in docs/ops.md. So a new function or class fails this test until the
reference has it."""
import inspect
import os
import pathlib
import re

import plexus
import popxl
import poptorch
import popxl.ops.var_updates
import popxl.utils
import plexus.layers
import plexus.report
from plexus import ops
from plexus.ops import catalog

ROOT = pathlib.Path(os.environ.get("PLEXUS_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
# Submodules re-exported by import side effect: documented through their contents.
MODULES = {"callbacks", "context", "data", "dtypes", "errors", "graph", "ir", "module", "ops", "session", "streams",
           "tensor", "variables", "blocks", "capture", "executor", "lowering", "lowering_norm", "options", "update", "composed_optimizers",
           "prefetch", "layers"}


def documented_words():
    text = (ROOT / "docs/python.md").read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```$", "", text, flags=re.S | re.M)  # code spans only, not fenced blocks
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", " ".join(re.findall(r"`([^`]+)`", text))))


def public_names(module=plexus):
    names = {n for n in dir(module) if not n.startswith("_") and n not in MODULES}
    names.discard("annotations")
    return names


# The popxl and poptorch packages' own modules; popxl.ops also holds every catalog op (docs/ops.md).
POPXL = (popxl, popxl.ops.var_updates, popxl.utils, poptorch, poptorch.optim, plexus.report, plexus.layers)
POPXL_OPS_OWN = {"host_store", "remote_code_load", "call", "call_with_info", "repeat", "CallSiteInfo", "conv", "max_pool",
                 "average_pool", "group_norm", "layer_norm", "scaled_add", "io_tile_copy"}


def test_every_public_name_is_documented():
    words = documented_words()
    names = public_names() | POPXL_OPS_OWN
    for module in POPXL:
        names |= public_names(module)
    missing = sorted(n for n in names if n not in words)
    assert not missing, f"docs/python.md does not mention {missing}"


def test_every_public_member_is_documented():
    words = documented_words()
    missing = []
    for module in (plexus,) + POPXL:
        for name in public_names(module):
            cls = getattr(module, name)
            if not inspect.isclass(cls) or issubclass(cls, plexus.Error):
                continue
            for member in vars(cls):
                if not member.startswith("_") and member not in words:
                    missing.append(f"{name}.{member}")
    assert not missing, f"docs/python.md does not mention {sorted(missing)}"


def test_special_ops_and_collectives_are_documented():
    words = documented_words()
    special = ["host_load", "remote_load", "remote_store", "cast", "add_op"]
    collectives = [n for n in dir(ops.collectives) if not n.startswith("_")]
    missing = [n for n in special + collectives if n not in words]
    assert not missing, f"docs/python.md does not mention {missing}"


def test_every_catalog_op_is_in_ops_md():
    text = (ROOT / "docs/ops.md").read_text(encoding="utf-8")
    missing = [n for n in catalog.schemas() if f"`{n}`" not in text]
    assert not missing, f"docs/ops.md does not list {missing}"
