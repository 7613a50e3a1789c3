"""samples/python/cxx_random.py against libstdc++: cxx_random_reference.cpp, compiled here
with g++, prints the C++ draws and every value must match bit for bit."""
import functools
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "samples" / "python"))

import cxx_random  # noqa: E402  (found through the path above)

SEEDS = [0, 42, 7]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The path of cxx_random_reference.cpp compiled with g++ -std=c++20 -O2."""
    if shutil.which("g++") is None:
        pytest.skip("g++ not found: the libstdc++ reference draws cannot be built")
    binary = tmp_path_factory.mktemp("cxx_random") / "cxx_random_reference"
    subprocess.run(["g++", "-std=c++20", "-O2", str(HERE / "cxx_random_reference.cpp"), "-o", str(binary)],
                   check=True)
    return str(binary)


@functools.lru_cache(maxsize=None)
def run(binary, *args, stdin=None):
    """The reference program's output lines as Python ints (hex parsed)."""
    done = subprocess.run([binary, *args], input=stdin, capture_output=True, text=True, check=True)
    return tuple(int(line, 16) for line in done.stdout.split())


def bits(values):
    """The bit patterns of a float32 array, as Python ints."""
    return tuple(int(b) for b in np.asarray(values, dtype=np.float32).view(np.uint32))


@pytest.mark.parametrize("seed", SEEDS)
def test_raw_outputs(reference, seed):
    """The first 1000 outputs of Mt19937_64(seed), called one at a time."""
    rng = cxx_random.Mt19937_64(seed)
    assert tuple(rng() for _ in range(1000)) == run(reference, "raw", str(seed), "1000")


@pytest.mark.parametrize("seed", SEEDS)
def test_normal(reference, seed):
    """30,000 draws of normal(0, 0.02), and the engine left where C++ leaves it."""
    expected = run(reference, "normal", str(seed), "30000")
    rng = cxx_random.Mt19937_64(seed)
    assert bits(cxx_random.normal_float(rng, 0.0, 0.02, 30000)) == expected[:-1]
    assert rng() == expected[-1]


@pytest.mark.parametrize("seed", SEEDS)
def test_normal_in_odd_pieces(reference, seed):
    """The same 30,000 draws from one NormalDistribution in pieces, most of odd length: the
    value saved from a pair carries over to the next piece."""
    expected = run(reference, "normal", str(seed), "30000")
    rng = cxx_random.Mt19937_64(seed)
    normal = cxx_random.NormalDistribution(0.0, 0.02)
    pieces = [1, 1, 0, 2, 3, 7, 4, 999, 1000, 27983]
    assert sum(pieces) == 30000
    drawn = np.concatenate([normal.draw(rng, n) for n in pieces])
    assert bits(drawn) == expected[:-1]
    assert rng() == expected[-1]


@pytest.mark.parametrize("seed", SEEDS)
def test_uniform(reference, seed):
    """30,000 draws of uniform(-0.1, 0.1), and the engine left where C++ leaves it."""
    expected = run(reference, "uniform", str(seed), "30000")
    rng = cxx_random.Mt19937_64(seed)
    assert bits(cxx_random.uniform_float(rng, -0.1, 0.1, 30000)) == expected[:-1]
    assert rng() == expected[-1]


def test_mlp_weights(reference):
    """MlpWeights::random(42) (samples/common/mnist_mlp.h): W0 [784, 32], b0 [32], W1 [32, 10]
    and b1 [10], drawn in that order from one normal(0, 0.02)."""
    rng = cxx_random.Mt19937_64(42)
    normal = cxx_random.NormalDistribution(0.0, 0.02)
    w0 = normal.draw(rng, 784 * 32).reshape(784, 32)
    b0 = normal.draw(rng, 32)
    w1 = normal.draw(rng, 32 * 10).reshape(32, 10)
    b1 = normal.draw(rng, 10)
    drawn = np.concatenate([w0.ravel(), b0, w1.ravel(), b1])
    assert bits(drawn) == run(reference, "mlp", "42")


class _Replay:
    """An engine stand-in whose take(n) returns the given outputs."""

    def __init__(self, outputs):
        self.outputs = np.array(outputs, dtype=np.uint64)

    def take(self, n):
        """The first n of the outputs."""
        return self.outputs[:n]


def _rounding_edges():
    """uint64 values where float rounding is delicate: exact ties (even and odd), one above
    and below them, the 2^53 boundary, values rounding to 2^64 (canonical 1), and extremes."""
    top = 1 << 64
    values = {0, 1, top - 1, top - (1 << 39), top - (1 << 39) - 1, top - (1 << 40), (1 << 53) - 1,
              1 << 53, (1 << 53) + 1}
    for shift in range(0, 41):
        for mantissa in ((1 << 24) + 1, (1 << 24) + 3, (1 << 25) - 1):
            for delta in (-1, 0, 1):
                values.add((mantissa << shift) + delta)
    random = np.random.default_rng(0)
    for length in range(1, 65):
        values.update(int(v) >> (64 - length) for v in random.integers(0, top, size=20, dtype=np.uint64))
    return sorted(v for v in values if 0 <= v < top)


def test_canonical_rounding(reference):
    """generate_canonical<float, 24> (uniform(0, 1) returns it unchanged) at rounding edges."""
    outputs = _rounding_edges()
    expected = run(reference, "canonical", stdin="".join(f"{v:x}\n" for v in outputs))
    assert bits(cxx_random.uniform_float(_Replay(outputs), 0.0, 1.0, len(outputs))) == expected
