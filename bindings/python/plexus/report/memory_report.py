"""The memory report JSON of a compiled session (schema "plexus.memory_report", version 1;
docs/profiling.md), read and checked into plain objects for the plots and the page.

Bytes are planned device bytes of one replica's devices (host bytes for remote buffers and
offloaded tensors), as the C ABI's memory report call writes them."""
from dataclasses import dataclass
import pathlib

from plexus.report.json_input import Where, check_value, member, read_json

SCHEMA = "plexus.memory_report"
VERSION = 1
# The numbers of a device that the page's table shows, in its column order.
DEVICE_TOTALS = ("arena_bytes", "planned_peak_bytes", "variable_bytes", "remote_buffer_bytes", "offloaded_bytes")


@dataclass
class Step:
    """One step of a device's schedule: `label` (what runs), `stage` (int) and `bytes`, a
    dict kind -> planned bytes live at that step (every kind of the device present)."""
    label: str
    stage: int
    bytes: dict


@dataclass
class LiveTensor:
    """A tensor live at a device's peak: `name`, `kind` (one of the device's kinds), `bytes`."""
    name: str
    kind: str
    bytes: int


@dataclass
class DeviceMemory:
    """One virtual device of a replica: `device` (index), `stages` (list of int), the totals
    of DEVICE_TOTALS as attributes (bytes), `kinds` (list of str, the series order), `steps`
    (list of Step), `peak_step` (index into steps; -1 for a device with no step), `peak_bytes`, `peak_tensors` (list of
    LiveTensor, largest first) and `variables` (the schema's dicts, unchanged)."""
    device: int
    stages: list
    arena_bytes: int
    planned_peak_bytes: int
    variable_bytes: int
    remote_buffer_bytes: int
    offloaded_bytes: int
    kinds: list
    steps: list
    peak_step: int
    peak_bytes: int
    peak_tensors: list
    variables: list

    def series(self, kind):
        """The planned bytes of `kind` at each step, a list of int of len(steps)."""
        return [step.bytes[kind] for step in self.steps]


@dataclass
class MemoryReport:
    """A checked memory report: `label` (names it in files and on the page), `path` (the
    file), `replication_factor` and `devices` (list of DeviceMemory, in device order)."""
    label: str
    path: str
    replication_factor: int
    devices: list


def load_memory_report(path, label=None):
    """Reads and checks the memory report JSON at `path`; `label` defaults to the file's
    stem. Returns a MemoryReport. Raises ReportInputError naming the file and the key when
    the file is missing or not JSON, its "schema" or "version" is not this renderer's
    ("plexus.memory_report", 1), a key of the schema is missing or has the wrong type, a step
    lacks one of its device's kinds, or the peak's step is outside the schedule."""
    doc = read_json(path)
    top = Where(path)
    if member(doc, "schema", top, "string") != SCHEMA:
        top.key("schema").fail(f"expected \"{SCHEMA}\", found \"{doc['schema']}\"")
    if member(doc, "version", top, "int") != VERSION:
        top.key("version").fail(f"this renderer reads version {VERSION}, found {doc['version']}")
    devices = member(doc, "devices", top, "array")
    if not devices:
        top.key("devices").fail("no devices")
    return MemoryReport(label=label or pathlib.Path(path).stem, path=str(path),
                        replication_factor=member(doc, "replication_factor", top, "count"),
                        devices=[_device(d, top.key("devices").index(i)) for i, d in enumerate(devices)])


def _device(obj, where):
    kinds = member(obj, "kinds", where, "array")
    for i, kind in enumerate(kinds):
        check_value(kind, where.key("kinds").index(i), "string")
    if not kinds:
        where.key("kinds").fail("no kinds")
    steps = [_step(s, where.key("steps").index(i), kinds) for i, s in enumerate(member(obj, "steps", where, "array"))]
    peak = member(obj, "peak", where, "object")
    peak_step = member(peak, "step", where.key("peak"), "int")
    if not (0 <= peak_step < len(steps) or peak_step == -1 == len(steps) - 1):
        where.key("peak").key("step").fail(f"step {peak_step} is outside the schedule's {len(steps)} steps"
                                           + (" (-1 only for a device with no step)" if peak_step == -1 else ""))
    stages = member(obj, "stages", where, "array")
    for i, stage in enumerate(stages):
        check_value(stage, where.key("stages").index(i), "int")
    totals = {key: member(obj, key, where, "count") for key in DEVICE_TOTALS}
    return DeviceMemory(device=member(obj, "device", where, "count"), stages=stages, **totals, kinds=kinds,
                        steps=steps, peak_step=peak_step, peak_bytes=member(peak, "bytes", where.key("peak"), "count"),
                        peak_tensors=_peak_tensors(peak, where.key("peak")),
                        variables=member(obj, "variables", where, "array"))


def _step(obj, where, kinds):
    sizes = member(obj, "bytes", where, "object")
    return Step(label=member(obj, "label", where, "string"), stage=member(obj, "stage", where, "int"),
                bytes={kind: member(sizes, kind, where.key("bytes"), "count") for kind in kinds})


def _peak_tensors(peak, where):
    tensors = []
    for i, t in enumerate(member(peak, "tensors", where, "array")):
        at = where.key("tensors").index(i)
        tensors.append(LiveTensor(name=member(t, "name", at, "string"), kind=member(t, "kind", at, "string"),
                                  bytes=member(t, "bytes", at, "count")))
    return sorted(tensors, key=lambda t: -t.bytes)
