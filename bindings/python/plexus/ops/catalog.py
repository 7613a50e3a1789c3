"""The registered ops as the runtime lists them (plx_runtime_get_ops) and their rows of
docs/ops.md (shipped in the package as ops.md), for plexus.ops' functions and docstrings."""
import functools
import json
import pathlib
import re

from plexus._lib import lib, read_text


class OpSchema:
    """One registered op: `name`, `min_inputs`, `max_inputs`, `attrs` (list of dicts with
    name, kind "int"/"float"/"ints"/"string", required, default), `inplace`,
    `differentiable`, `communicates`."""

    def __init__(self, entry):
        self.name = entry["name"]
        self.min_inputs, self.max_inputs = entry["min_inputs"], entry["max_inputs"]
        self.attrs = entry["attrs"]
        self.inplace, self.differentiable = entry["inplace"], entry["differentiable"]
        self.communicates = entry["communicates"]

    def attr(self, name):
        """The attribute spec (dict) named `name`, or None."""
        return next((a for a in self.attrs if a["name"] == name), None)

    def signature(self):
        """"name(x0, x1, [x2], attr=default, ...)" for docstrings."""
        inputs = [f"x{i}" for i in range(self.min_inputs)]
        if self.max_inputs - self.min_inputs > 3:  # variadic (concat, global_sq_norm): "[x1, ..., x63]"
            inputs.append(f"[x{self.min_inputs}, ..., x{self.max_inputs - 1}]")
        else:
            inputs += [f"[x{i}]" for i in range(self.min_inputs, self.max_inputs)]
        attrs = [a["name"] if a["required"] else f"{a['name']}={a['default']!r}" for a in self.attrs]
        return f"{self.name}({', '.join(inputs + attrs)})"


@functools.lru_cache(maxsize=None)
def schemas():
    """Every registered op's OpSchema, by name."""
    entries = json.loads(read_text(lib.plx_runtime_get_ops))["ops"]
    return {e["name"]: OpSchema(e) for e in entries}


@functools.lru_cache(maxsize=None)
def doc_rows():
    """op name -> its row of docs/ops.md ("inputs | attributes | output | grad"), when the
    package carries ops.md."""
    path = pathlib.Path(__file__).with_name("ops.md")
    rows = {}
    if not path.exists():
        return rows
    header = None
    for line in path.read_text().splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(cells[0]) <= set("-: "):
            continue
        for name in re.findall(r"`([a-z0-9_]+)`", cells[0]):
            rows[name] = "\n".join(f"    {h}: {c}" for h, c in zip(header[1:], cells[1:]))
    return rows


def docstring(schema, summary=None):
    """The docstring of plexus.ops.<name>: signature, docs/ops.md's row, the attributes."""
    lines = [schema.signature(), "", summary or f"The `{schema.name}` op (docs/ops.md), added to the inputs' graph."]
    row = doc_rows().get(schema.name)
    if row:
        lines += ["", "docs/ops.md:", row]
    lines += ["", "Inputs are Tensors (Python numbers and arrays become constants of the other inputs' dtype);",
              "attributes are keyword arguments, or positional after the inputs. Shapes and dtypes are",
              "checked here: ShapeMismatch, DTypeMismatch, InvalidArgument (an unknown or wrong",
              "attribute), InvalidGrouping. Returns a Tensor, a tuple for several outputs, None for none."]
    return "\n".join(lines)
