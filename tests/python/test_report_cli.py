"""plexus.report's command line (python3 -m plexus.report, the plexus-report entry point):
--help, the files it writes, and clear errors (exit status 2, the file and the key named)."""
import subprocess
import sys

import pytest

from plexus.report import main
from plexus.report.render import parse_memory_argument
from report_fixtures import chrome_trace, memory_report, write_json


def _run(*args):
    return subprocess.run([sys.executable, "-m", "plexus.report", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def test_help_names_every_option():
    out = _run("--help")
    assert out.returncode == 0 and out.stdout.startswith("usage: plexus-report")
    for option in ("--memory", "--trace", "--out", "--top-tensors"):
        assert option in out.stdout


def test_the_module_writes_the_pictures_and_the_page(tmp_path):
    m = write_json(tmp_path / "m.json", memory_report(num_devices=2))
    t = write_json(tmp_path / "t.json", chrome_trace())
    out = _run("--memory", f"rts={m}", "--trace", t, "--out", tmp_path / "rep")
    assert out.returncode == 0, out.stderr
    names = ["memory-rts.png", "memory-rts.svg", "pipeline.png", "pipeline.svg", "index.html"]
    assert out.stdout.split() == [str(tmp_path / "rep" / n) for n in names]
    assert all((tmp_path / "rep" / n).stat().st_size > 1000 for n in names)


def test_the_default_output_folder_is_report(tmp_path, monkeypatch):
    write_json(tmp_path / "m.json", memory_report(num_devices=1))
    monkeypatch.chdir(tmp_path)
    assert main(["--memory", "m.json"]) == 0
    assert (tmp_path / "report" / "memory-m.svg").exists() and (tmp_path / "report" / "index.html").exists()


@pytest.mark.parametrize("args, message", [
    ([], "plexus-report: error: nothing to draw: give --memory REPORT.json and/or --trace TRACE.json"),
    (["--memory", "{missing}"], "plexus-report: error: {missing}: cannot read: No such file or directory"),
    (["--trace", "{memory}"], "plexus-report: error: {memory}: missing key 'traceEvents'"),
    (["--memory", "{trace}"], "plexus-report: error: {trace}: missing key 'schema'"),
    (["--memory", "{memory}", "--memory", "{memory}"],
     "plexus-report: error: --memory: label 'm' names two reports (give LABEL=FILE)"),
    (["--memory", "=x.json"], "plexus-report: error: --memory =x.json: expected [LABEL=]FILE"),
])
def test_bad_inputs_exit_2_naming_the_file_and_key(tmp_path, capsys, args, message):
    files = {"missing": tmp_path / "missing.json", "memory": write_json(tmp_path / "m.json", memory_report()),
             "trace": write_json(tmp_path / "t.json", chrome_trace())}
    argv = [a.format(**files) for a in args]
    assert main(argv + ["--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message.format(**files)), err
    assert not (tmp_path / "out").exists(), "nothing is written when an input is bad"


def test_a_negative_top_tensors_is_a_usage_error(tmp_path):
    out = _run("--memory", tmp_path / "m.json", "--top-tensors", "-1")
    assert out.returncode == 2 and "--top-tensors -1: expected a count >= 0" in out.stderr


def test_memory_arguments_take_an_optional_label(tmp_path):
    assert parse_memory_argument("a/b/rts.json") == ("rts", "a/b/rts.json")
    assert parse_memory_argument("no rts=x/m.json") == ("no rts", "x/m.json")
    odd = write_json(tmp_path / "a=b.json", {})
    assert parse_memory_argument(str(odd)) == ("a=b", str(odd))
