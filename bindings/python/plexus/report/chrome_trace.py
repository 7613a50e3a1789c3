"""A run's Chrome trace (Trace Event JSON as plx_session_get_trace and the samples' --profile
write it; core/runtime/trace.cpp) read and checked into the steps of a pipeline diagram.

The trace holds one "X" event per span of a device: category "forward", "backward" or
"update" for the steps of a stage on a micro-batch (args: stage, micro_batch, iteration),
"transfer" and "collective" inside them; "pid" is the replica, "tid" the device of that
replica; "otherData" holds busy_fraction (per device, index replica * devices per replica +
device) and bubble_fraction (1 - their mean). Times are microseconds from the run's start."""
from dataclasses import dataclass
import re

from plexus.report.json_input import Where, check_value, member, read_json

STEP_KINDS = ("forward", "backward", "update")
_STAGE_NAME = re.compile(r"^[FBU] (.+?)(?: mb-?\d+)?$")


@dataclass
class TraceStep:
    """One forward, backward or update step of the trace: `kind` (one of STEP_KINDS),
    `replica`, `device`, `stage` (int), `stage_name` (the name in the event, e.g. "B1"),
    `micro_batch` (-1 for updates), `iteration`, `start_us` and `duration_us` (microseconds
    from the run's start)."""
    kind: str
    replica: int
    device: int
    stage: int
    stage_name: str
    micro_batch: int
    iteration: int
    start_us: float
    duration_us: float


@dataclass
class PipelineTrace:
    """A checked trace: `path`, `steps` (list of TraceStep in the file's order),
    `bubble_fraction` and `busy_fractions` (list of float, per device of every replica) from
    otherData, `run_seconds`, and `devices_per_replica` (the number of distinct "tid")."""
    path: str
    steps: list
    bubble_fraction: float
    busy_fractions: list
    run_seconds: float
    devices_per_replica: int

    def stages(self):
        """The distinct (replica, stage) pairs of the steps, sorted."""
        return sorted({(s.replica, s.stage) for s in self.steps})

    def micro_batches(self):
        """The distinct micro-batch numbers of the forward and backward steps, sorted."""
        return sorted({s.micro_batch for s in self.steps if s.kind != "update"})

    def count(self, kind):
        """How many steps of `kind` ("forward", "backward" or "update") the trace holds."""
        return sum(1 for s in self.steps if s.kind == kind)


def load_trace(path):
    """Reads and checks the Chrome trace at `path`. Returns a PipelineTrace. Raises
    ReportInputError naming the file and the key when the file is missing or not JSON, is
    not an object with "traceEvents" (array) and "otherData" (with "bubble_fraction" and
    "busy_fraction"), a step event lacks ts, dur, pid, tid or args' stage, micro_batch or
    iteration, or the trace has no forward or backward step."""
    doc = read_json(path)
    top = Where(path)
    events = member(doc, "traceEvents", top, "array")
    other = member(doc, "otherData", top, "object")
    busy = member(other, "busy_fraction", top.key("otherData"), "array")
    for i, value in enumerate(busy):
        check_value(value, top.key("otherData").key("busy_fraction").index(i), "number")
    steps = [_step(e, top.key("traceEvents").index(i)) for i, e in enumerate(events) if _is_step(e)]
    if not any(s.kind != "update" for s in steps):
        top.key("traceEvents").fail("no forward or backward step (\"X\" events of category forward or backward)")
    return PipelineTrace(path=str(path), steps=steps,
                         bubble_fraction=member(other, "bubble_fraction", top.key("otherData"), "number"),
                         busy_fractions=busy, run_seconds=other.get("run_seconds", 0.0),
                         devices_per_replica=len({e.get("tid") for e in events if isinstance(e, dict)}))


def _is_step(event):
    return isinstance(event, dict) and event.get("ph") == "X" and event.get("cat") in STEP_KINDS


def _step(event, where):
    args = member(event, "args", where, "object")
    name = member(event, "name", where, "string")
    stage = member(args, "stage", where.key("args"), "int")
    match = _STAGE_NAME.match(name)
    return TraceStep(kind=event["cat"], replica=member(event, "pid", where, "count"),
                     device=member(event, "tid", where, "count"), stage=stage,
                     stage_name=match.group(1) if match else str(stage),
                     micro_batch=member(args, "micro_batch", where.key("args"), "int"),
                     iteration=member(args, "iteration", where.key("args"), "int"),
                     start_us=member(event, "ts", where, "number"), duration_us=member(event, "dur", where, "number"))
