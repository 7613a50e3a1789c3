"""plexus.report.chrome_trace: a run's Chrome trace (a real one from plx_session_get_trace,
and synthetic ones) read into steps, and bad traces refused naming the file and the key."""
import pytest

from plexus.report import ReportInputError, load_trace
from report_fixtures import chrome_trace, recorded_trace, write_json


def test_a_recorded_trace_reads_into_its_steps(tmp_path):
    doc = recorded_trace(micro_batches=4, device_iterations=2, replicas=2)
    trace = load_trace(write_json(tmp_path / "run.json", doc))
    steps = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] in ("forward", "backward", "update")]
    assert len(trace.steps) == len(steps)
    # Per replica: 2 stages x 4 micro-batches x 2 iterations forwards, as many backwards.
    assert (trace.count("forward"), trace.count("backward")) == (2 * 2 * 4 * 2, 2 * 2 * 4 * 2)
    assert trace.stages() == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert trace.micro_batches() == [0, 1, 2, 3]
    assert {(s.stage, s.stage_name) for s in trace.steps} == {(0, "B1"), (1, "B2")}
    assert trace.bubble_fraction == doc["otherData"]["bubble_fraction"]
    assert trace.busy_fractions == doc["otherData"]["busy_fraction"] and trace.devices_per_replica == 2
    first = steps[0]
    assert (trace.steps[0].start_us, trace.steps[0].duration_us) == (first["ts"], first["dur"])


def test_updates_carry_no_micro_batch(tmp_path):
    trace = load_trace(write_json(tmp_path / "t.json", chrome_trace(stages=3, micro_batches=5, iterations=2)))
    updates = [s for s in trace.steps if s.kind == "update"]
    assert len(updates) == 3 * 2 and {s.micro_batch for s in updates} == {-1}
    assert trace.micro_batches() == [0, 1, 2, 3, 4] and {s.stage_name for s in updates} == {"S0", "S1", "S2"}


def _broken(tmp_path, change):
    doc = chrome_trace()
    change(doc)
    return write_json(tmp_path / "bad.json", doc)


def _first_step(doc):
    return next(i for i, e in enumerate(doc["traceEvents"]) if e.get("cat") == "forward")


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("traceEvents"), r"bad.json: missing key 'traceEvents'"),
    (lambda d: d["otherData"].pop("bubble_fraction"), r"bad.json: otherData: missing key 'bubble_fraction'"),
    (lambda d: d["otherData"]["busy_fraction"].__setitem__(1, "x"),
     r"bad.json: otherData.busy_fraction\[1\]: expected a number"),
    (lambda d: d["traceEvents"][_first_step(d)]["args"].pop("micro_batch"),
     r"bad.json: traceEvents\[\d+\].args: missing key 'micro_batch'"),
    (lambda d: d["traceEvents"][_first_step(d)].pop("dur"), r"bad.json: traceEvents\[\d+\]: missing key 'dur'"),
    (lambda d: d.update(traceEvents=[e for e in d["traceEvents"] if e.get("cat") not in ("forward", "backward")]),
     r"bad.json: traceEvents: no forward or backward step"),
])
def test_a_bad_trace_is_refused_naming_the_file_and_key(tmp_path, change, message):
    with pytest.raises(ReportInputError, match=message):
        load_trace(_broken(tmp_path, change))


def test_the_step_index_in_the_message_is_the_events(tmp_path):
    doc = chrome_trace()
    index = _first_step(doc)
    doc["traceEvents"][index]["ts"] = "late"
    with pytest.raises(ReportInputError, match=rf"bad.json: traceEvents\[{index}\].ts: expected a number"):
        load_trace(write_json(tmp_path / "bad.json", doc))
