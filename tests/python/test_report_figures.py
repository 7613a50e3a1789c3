"""plexus.report.figures: byte and percent texts, and the report's matplotlib settings
applied only inside its drawing functions."""
import matplotlib

from plexus.report.figures import STYLE, format_bytes, format_percent, styled


def test_bytes_read_in_binary_units():
    assert [format_bytes(n) for n in (0, 512, 1023, 1024, 1536, 10 << 20, (5 << 30) // 2)] == [
        "0 B", "512 B", "1023 B", "1.00 KiB", "1.50 KiB", "10.0 MiB", "2.50 GiB"]
    assert [format_bytes(n, compact=True) for n in (5 << 10, 2.5 * (1 << 20), 100 << 10)] == [
        "5 KiB", "2.5 MiB", "100 KiB"]


def test_percents_have_one_decimal():
    assert [format_percent(f) for f in (0.0, 0.7953800548986754, 1.0)] == ["0.0%", "79.5%", "100.0%"]


def test_the_style_holds_inside_styled_functions_only():
    before = matplotlib.rcParams["svg.fonttype"]

    @styled
    def inside():
        return matplotlib.rcParams["svg.fonttype"], matplotlib.rcParams["svg.hashsalt"]
    assert inside() == (STYLE["svg.fonttype"], STYLE["svg.hashsalt"]) == ("none", "plexus-report")
    assert matplotlib.rcParams["svg.fonttype"] == before
