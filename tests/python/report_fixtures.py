"""Inputs of plexus.report's tests, built from small synthetic data: memory reports in the
schema of docs/profiling.md (version 1) and Chrome traces as core/runtime/trace.cpp writes
them, plus readers of the SVG and HTML the report writes."""
import html.parser
import json
import re
import xml.etree.ElementTree as ET

KINDS = ["variables", "activations", "gradients", "optimizer_state", "stream_slots", "scratch"]


def memory_device(device, num_steps, stages, seed):
    """A device of a memory report whose steps' bytes follow from (device, step, seed), with
    the peak's step, bytes and tensors consistent with them (the schema's invariants)."""
    steps = []
    for s in range(num_steps):
        sizes = {k: (seed * 7 + device * 5 + s * (i + 1) * 3) % 11 * 1024 * (i + 1) for i, k in enumerate(KINDS)}
        sizes["variables"] = 40960 + 4096 * device
        steps.append({"step": s, "label": f"fwd stage {stages[0]} mb 0: op {s}", "stage": stages[s % len(stages)],
                      "bytes": sizes})
    totals = [sum(st["bytes"].values()) for st in steps]
    peak = max(range(num_steps), key=lambda s: totals[s])
    tensors = [{"name": f"t{peak}_{i}", "kind": KINDS[i % len(KINDS)], "bytes": 1000 * (9 - i)} for i in range(8)]
    return {"device": device, "stages": stages, "arena_bytes": totals[peak] + 4096,
            "planned_peak_bytes": totals[peak], "variable_bytes": steps[0]["bytes"]["variables"],
            "remote_buffer_bytes": 1024 * device, "offloaded_bytes": 512 * (device + 1), "kinds": list(KINDS),
            "steps": steps, "peak": {"step": peak, "bytes": totals[peak], "tensors": tensors},
            "variables": [{"name": "W0", "device_bytes": 20480, "remote_bytes": 0, "shard_over": 2}]}


def memory_report(num_devices=2, num_steps=12, seed=1):
    """A memory report (dict) of `num_devices` devices, device d holding stage d."""
    return {"schema": "plexus.memory_report", "version": 1, "replication_factor": 2,
            "devices": [memory_device(d, num_steps + d, [d], seed) for d in range(num_devices)]}


def chrome_trace(stages=2, micro_batches=4, iterations=2, replicas=1):
    """A Chrome trace of a fill-drain pipeline: per iteration, every stage's forwards then
    backwards (each 100 us, stage s starting s slots late) and an update, plus a transfer
    inside every forward; otherData as trace.cpp writes it."""
    events, busy = [], []
    for r in range(replicas):
        for s in range(stages):
            events.append({"name": "process_name", "ph": "M", "pid": r, "tid": s, "args": {"name": f"replica {r}"}})
            events.append({"name": "thread_name", "ph": "M", "pid": r, "tid": s, "args": {"name": f"device {s}"}})
            busy.append(_stage_events(events, r, s, stages, micro_batches, iterations))
    run_us = iterations * (2 * (micro_batches + stages - 1) + 1) * 100.0
    busy = [b / run_us for b in busy]
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"run_seconds": run_us * 1e-6, "busy_fraction": busy,
                          "bubble_fraction": 1 - sum(busy) / len(busy)}}


def _stage_events(events, r, s, stages, micro_batches, iterations):
    busy, slot = 0.0, 100.0
    for it in range(iterations):
        base = it * (2 * (micro_batches + stages - 1) + 1) * slot
        for m in range(micro_batches):
            fwd = base + (s + m) * slot
            bwd = base + (micro_batches + stages - 1 + (stages - 1 - s) + m) * slot
            for kind, ts in (("forward", fwd), ("backward", bwd)):
                events.append(_x(f"{kind[0].upper()} S{s} mb{m}", kind, r, s, ts, slot, s, m, it))
            events.append(_x(f"transfer mb{m}", "transfer", r, s, fwd, 10.0, s, m, it))
            busy += 2 * slot
        events.append(_x(f"U S{s}", "update", r, s, base + 2 * (micro_batches + stages - 1) * slot, 50.0, s, -1, it))
        busy += 50.0
    return busy


def recorded_trace(micro_batches=4, device_iterations=2, replicas=1):
    """A real Chrome trace (plx_session_get_trace, through Session.trace()) of one run of a
    two-stage pipelined MLP (blocks B1, B2; plain SGD) with `micro_batches` micro-batches per
    step, `device_iterations` steps and `replicas` replicas."""
    import numpy as np
    import plexus
    from plexus import ops
    rng = np.random.default_rng(0)
    ir = plexus.Ir(replication=replicas)
    with ir.main_graph:
        x = plexus.h2d_stream((8, 16), plexus.float32, name="x")
        w0 = plexus.variable(rng.standard_normal((16, 16)).astype(np.float32), name="W0")
        w1 = plexus.variable(rng.standard_normal((16, 4)).astype(np.float32), name="W1")
        with plexus.Block("B1"):
            h = ops.relu(ops.matmul(ops.host_load(x), w0))
        with plexus.Block("B2"):
            loss = ops.reduce_mean(ops.matmul(h, w1))
            plexus.d2h_stream(loss, name="loss")
        for w, g in zip((w0, w1), plexus.autodiff(loss, [w0, w1])):
            ops.scaled_add_(w, g, b=-0.01)
    with plexus.Session(ir, stages=[["B1"], ["B2"]], gradient_accumulation=micro_batches,
                        device_iterations=device_iterations, threads_per_device=1, profile=True) as session:
        replica_dims = (replicas,) if replicas > 1 else ()   # the host-array shape rule, docs/python.md
        session.run({x: np.ones((device_iterations * micro_batches,) + replica_dims + (8, 16), np.float32)})
        return session.trace()


def _x(name, cat, pid, tid, ts, dur, stage, mb, it):
    return {"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            "args": {"stage": stage, "micro_batch": mb, "iteration": it}}


def write_json(path, doc):
    """Writes `doc` as JSON to `path`; returns path."""
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def svg_ids(svg_text):
    """Every id attribute in an SVG document (or fragment wrapped in one root), in order."""
    root = ET.fromstring(svg_text)
    return [e.get("id") for e in root.iter() if e.get("id")]


def svg_texts(svg_text, group_id=None):
    """The text of every <text> element of an SVG (svg.fonttype "none" keeps text as text),
    or of those inside the element with id `group_id`."""
    root = ET.fromstring(svg_text)
    if group_id is not None:
        root = next(e for e in root.iter() if e.get("id") == group_id)
    return ["".join(e.itertext()) for e in root.iter() if e.tag.endswith("}text") or e.tag == "text"]


class TableCells(html.parser.HTMLParser):
    """The cells of the page's tables that carry data-key: {(table id, row key, data-key):
    (data-value, shown text)}."""

    def __init__(self):
        super().__init__()
        self.cells, self._table, self._row, self._cell, self._text = {}, None, None, None, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id")
        elif tag == "tr":
            self._row = a.get("data-row")
        elif tag == "td" and "data-key" in a:
            self._cell, self._text = (a["data-key"], a.get("data-value")), []

    def handle_data(self, data):
        if self._cell:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "td" and self._cell:
            key, value = self._cell
            self.cells[(self._table, self._row, key)] = (value, "".join(self._text).strip())
            self._cell = None


def table_cells(page):
    """TableCells(...).cells of the HTML text `page`."""
    parser = TableCells()
    parser.feed(page)
    return parser.cells


def shown_int(text):
    """The integer at the start of a cell's text ("123,456 (120.6 KiB)" -> 123456)."""
    return int(re.match(r"[\d,]+", text).group(0).replace(",", ""))
