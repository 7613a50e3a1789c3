"""libstdc++'s std::mt19937_64, std::uniform_real_distribution<float> and
std::normal_distribution<float>, bit for bit, so that the Python samples draw the same
initial weights as the C++ ones (samples/common/mnist_mlp.h MlpWeights::random,
samples/mnist_pipeline/network.h CnnWeights::random, samples/distributed_training/network.h
dist_initial_weights).

Reproduces the code of GCC 12's libstdc++ (Debian 12: /usr/include/c++/12/bits/random.h
and random.tcc) on x86-64, where float arithmetic is IEEE binary32 with no excess precision:
every step C++ does in float is done here in np.float32, in the same order. Only
std::log(float) is not reproduced but called: it is glibc's logf, through ctypes.

Not a sample itself: the Python samples import it from this folder.
"""
import ctypes

import numpy as np

_N, _M = 312, 156  # mt19937_64's state size and shift size
_MATRIX_A = np.uint64(0xB5026F5AA96619E9)
_UPPER_MASK = np.uint64(0xFFFFFFFF80000000)  # the top 64 - 31 bits
_LOWER_MASK = np.uint64(0x000000007FFFFFFF)
_INIT_MULTIPLIER = 6364136223846793005
_U64 = (1 << 64) - 1


def _u64(x):
    """The numpy uint64 scalar `x` (a shift amount or a mask)."""
    return np.uint64(x)


class Mt19937_64:
    """std::mt19937_64 (mersenne_twister_engine<uint_fast64_t, 64, 312, 156, 31, ...>).

    Mt19937_64(seed) is seed(result_type) (random.tcc); __call__ is operator()() and the state
    twist is _M_gen_rand(), vectorised over the three loops it runs. take(n) returns the next n
    outputs at once; peek(n) returns them without consuming them (the distributions use it to
    consume exactly the draws C++ consumes).
    """

    def __init__(self, seed):
        """Seeds the state as seed(result_type) does: x[0] = seed, then
        x[i] = 6364136223846793005 * (x[i-1] ^ (x[i-1] >> 62)) + i (mod 2^64)."""
        state = [seed & _U64]
        for i in range(1, _N):
            prev = state[-1]
            state.append((_INIT_MULTIPLIER * (prev ^ (prev >> 62)) + i) & _U64)
        self._state = np.array(state, dtype=np.uint64)
        self._ahead = np.empty(0, dtype=np.uint64)  # outputs generated but not yet consumed

    def __call__(self):
        """The next output, as a Python int (operator()())."""
        return int(self.take(1)[0])

    def take(self, n):
        """The next n outputs (np.uint64 array), consumed."""
        out = self.peek(n)
        self._ahead = self._ahead[n:]
        return out

    def peek(self, n):
        """The next n outputs (np.uint64 array), left unconsumed."""
        blocks = [self._ahead]
        have = self._ahead.size
        while have < n:
            self._twist()
            blocks.append(_temper(self._state))
            have += _N
        self._ahead = np.concatenate(blocks)
        return self._ahead[:n].copy()

    def _twist(self):
        """_M_gen_rand(): the next 312 state words. Each of its loops reads only words it has
        not written yet or words an earlier loop wrote, so each is one vector step."""
        x = self._state
        x[:_N - _M] = _twist_words(x[:_N - _M], x[1:_N - _M + 1], x[_M:])
        x[_N - _M:_N - 1] = _twist_words(x[_N - _M:_N - 1], x[_N - _M + 1:], x[:_M - 1])
        x[_N - 1:] = _twist_words(x[_N - 1:], x[:1], x[_M - 1:_M])


def _twist_words(word, next_word, far_word):
    """One _M_gen_rand() step per element: y = upper bits of word | lower bits of next_word;
    the result is far_word ^ (y >> 1) ^ (y odd ? 0xb5026f5aa96619e9 : 0)."""
    y = (word & _UPPER_MASK) | (next_word & _LOWER_MASK)
    odd = (y & _u64(1)).astype(bool)
    return far_word ^ (y >> _u64(1)) ^ np.where(odd, _MATRIX_A, _u64(0))


def _temper(x):
    """operator()()'s tempering of the state words x (np.uint64 array)."""
    z = x ^ ((x >> _u64(29)) & _u64(0x5555555555555555))
    z ^= (z << _u64(17)) & _u64(0x71D67FFFEDA60000)
    z ^= (z << _u64(37)) & _u64(0xFFF7EEE000000000)
    return z ^ (z >> _u64(43))


def _uint64_to_float32(u):
    """float(u) for np.uint64 u, rounded to nearest even as C++ converts uint64_t to float.
    Values of up to 53 bits go through double exactly. Larger ones drop their 11 low bits into
    a sticky bit first (they still have more than 40 bits: the sticky bit is far below
    float's rounding bit, so rounding is unchanged), then scale back by 2^11 (exact)."""
    big = u >= _u64(1 << 53)
    sticky = ((u & _u64(0x7FF)) != 0).astype(np.uint64)
    narrowed = np.where(big, (u >> _u64(11)) | sticky, u)
    f = narrowed.astype(np.float64).astype(np.float32)
    return np.where(big, f * np.float32(2048.0), f)


def _canonical_float(u):
    """generate_canonical<float, 24>(mt19937_64) (random.tcc) for the engine outputs u: one
    output per value (m = 1 as the engine's range is 2^64), float(u) / 2^64 in float, and
    nextafter(1.0f, 0.0f) where that rounds up to 1."""
    c = _uint64_to_float32(u) / np.float32(2.0 ** 64)
    return np.where(c >= np.float32(1.0), np.nextafter(np.float32(1.0), np.float32(0.0)), c)


def uniform_float(rng, a, b, n):
    """n successive draws of std::uniform_real_distribution<float>(a, b)(rng), float32 array.

    random.h uniform_real_distribution::operator(): (canonical * (b - a)) + a in float, the
    canonical value from __detail::_Adaptor, i.e. generate_canonical<float, 24>. a and b are
    converted to float as the constructor does; consumes n engine outputs."""
    a, b = np.float32(a), np.float32(b)
    return _canonical_float(rng.take(n)) * (b - a) + a


def _signed_unit(c):
    """random.tcc's `result_type(2.0) * __aurng() - 1.0`: 2c in float, minus the double 1.0
    in double, rounded to float on assignment."""
    return ((np.float32(2.0) * c).astype(np.float64) - 1.0).astype(np.float32)


_libm = ctypes.CDLL("libm.so.6")
_libm.logf.restype = ctypes.c_float
_libm.logf.argtypes = [ctypes.c_float]


def _logf(x):
    """glibc's logf, elementwise over the float32 array x: std::log(float) calls it."""
    return np.array([_libm.logf(v) for v in x.tolist()], dtype=np.float32)


class NormalDistribution:
    """One std::normal_distribution<float>(mean, stddev) object: draw(rng, n) continues its
    sequence, including the second value of a pair that an odd n left saved.

    random.tcc normal_distribution::operator(): the Marsaglia polar method. Each pair takes
    two canonical floats x, y (2c - 1), rejected while r2 = x*x + y*y > 1 or r2 == 0; then
    mult = sqrt(-2 * log(r2) / r2), y * mult is returned and x * mult saved for the next call;
    each value is scaled as value * stddev + mean, all in float.
    """

    def __init__(self, mean, stddev):
        """The distribution's parameters, converted to float as the constructor does."""
        self.mean, self.stddev = np.float32(mean), np.float32(stddev)
        self._saved = None  # _M_saved when _M_saved_available

    def draw(self, rng, n):
        """The next n values (float32 array), consuming what n calls of operator() would."""
        head = [] if self._saved is None or n <= 0 else [self._saved]
        if head:
            self._saved = None
        pairs = _polar_pairs(rng, max(n - len(head) + 1, 0) // 2)
        unscaled = np.concatenate([np.array(head, dtype=np.float32), pairs])
        if unscaled.size > n:
            self._saved = unscaled[n]
        return unscaled[:n] * self.stddev + self.mean


def _polar_pairs(rng, count):
    """`count` accepted polar-method pairs, unscaled, interleaved as C++ uses them: y * mult
    (returned at once), then x * mult (saved). Consumes exactly the engine outputs C++ does,
    rejected pairs included."""
    chunks = []
    while count > 0:
        batch = int(count * 1.3) + 8  # pairs per try: about 4/pi of them are needed
        c = _canonical_float(rng.peek(2 * batch))
        x, y = _signed_unit(c[0::2]), _signed_unit(c[1::2])
        r2 = x * x + y * y
        accepted = np.flatnonzero((r2 <= np.float32(1.0)) & (r2 != np.float32(0.0)))[:count]
        rng.take(2 * (accepted[-1] + 1) if accepted.size else 2 * batch)
        x, y, r2 = x[accepted], y[accepted], r2[accepted]
        mult = np.sqrt(np.float32(-2.0) * _logf(r2) / r2)
        chunks.append(np.stack([y * mult, x * mult], axis=1).ravel())
        count -= accepted.size
    return np.concatenate(chunks) if chunks else np.empty(0, dtype=np.float32)


def normal_float(rng, mean, stddev, n):
    """n successive draws of one fresh std::normal_distribution<float>(mean, stddev)(rng),
    float32 array (see NormalDistribution; use one of those to continue a sequence)."""
    return NormalDistribution(mean, stddev).draw(rng, n)
