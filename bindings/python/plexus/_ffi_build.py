"""Builds plexus._plexus_ffi, the cffi extension (API mode, out of line) over libplexus.so.

The declarations cffi compiles against are read from the installed C headers
(<plexus/types.h>, <plexus/plexus.h>) rather than written a second time: comments,
preprocessor conditionals and the header-only inline helpers are dropped, integer
#defines are kept. The compiler then checks every struct layout against the real header.

Used by setup.py (``cffi_modules``, through ``ffibuilder``, found from pkg-config or
$PLEXUS_PREFIX) and by the CMake build tree (``python3 _ffi_build.py --include-dir ...``).
"""
import argparse
import os
import pathlib
import re
import subprocess

import cffi

MODULE = "plexus._plexus_ffi"
HEADERS = ("plexus/types.h", "plexus/plexus.h")


def _strip_preprocessor(text):
    """Drops comments, #if blocks for C++/Windows/compilers, includes and guards; keeps
    `#define NAME <integer>`, and declares `#define NAME "string"` as a constant string."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    out, skip = [], []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#"):
            directive = s[1:].strip()
            if directive.startswith(("if", "elif", "else")):
                # Every conditional in the headers is a guard or a platform switch: keep
                # only the include guard's body (#ifndef PLEXUS_..._H).
                keep = directive.startswith("ifndef PLEXUS_")
                if directive.startswith(("elif", "else")):
                    keep = False
                    skip.pop()
                skip.append(not keep)
            elif directive.startswith("endif"):
                skip.pop()
            elif not any(skip) and re.match(r"define\s+PLX_[A-Z0-9_]+\s+-?\d+\s*$", directive):
                out.append("#" + directive)
            elif not any(skip) and (m := re.match(r"define\s+(PLX_[A-Z0-9_]+)\s+\"[^\"]*\"\s*$", directive)):
                out.append(f"static const char *const {m.group(1)};")  # a string macro: API mode reads its value
            continue
        if not any(skip):
            out.append(line)
    return "\n".join(out)


def _strip_inline_functions(text):
    """Removes `static inline` helpers (plx_attr_int, ...), which Python does not need."""
    result, i = [], 0
    for m in re.finditer(r"static\s+inline\b", text):
        if m.start() < i:
            continue
        result.append(text[i:m.start()])
        depth, j = 0, text.index("{", m.end())
        while True:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
            if depth == 0:
                break
        i = j
    result.append(text[i:])
    return "".join(result)


def cdef_from_headers(include_dir):
    """The cdef text for the headers under `include_dir` (a folder holding plexus/)."""
    parts = []
    for header in HEADERS:
        text = (pathlib.Path(include_dir) / header).read_text()
        text = _strip_inline_functions(_strip_preprocessor(text))
        text = re.sub(r"\bPLX_API\b", "", text)
        text = re.sub(r"PLX_DEPRECATED\([^)]*\)", "", text)
        parts.append(text)
    return "\n".join(parts) + _PYTHON_CALLBACKS


# C entry points that call back into Python (plexus/_callbacks.py defines them with
# @ffi.def_extern); user_data is a cffi handle of the Python object to call.
_PYTHON_CALLBACKS = """
extern "Python" plx_status _plexus_fill(void*, plx_stream, int64_t, int64_t, void*, size_t);
extern "Python" plx_status _plexus_deliver(void*, plx_stream, int64_t, int64_t, const void*, size_t);
extern "Python" void _plexus_run_complete(void*, plx_status, const char*);
"""


def make_ffibuilder(include_dir, library_dir, runtime_dirs=()):
    """A cffi FFI that compiles MODULE against the headers in `include_dir` and
    libplexus.so in `library_dir`, with `runtime_dirs` as its RUNPATH."""
    ffi = cffi.FFI()
    ffi.cdef(cdef_from_headers(include_dir))
    ffi.set_source(
        MODULE,
        '#define PLX_NO_DEPRECATION_WARNINGS\n#include <plexus/plexus.h>\n',
        include_dirs=[str(include_dir)],
        library_dirs=[str(library_dir)],
        libraries=["plexus"],
        extra_link_args=[f"-Wl,-rpath,{d}" for d in runtime_dirs] + ["-Wl,--enable-new-dtags"],
    )
    return ffi


def _pkg_config_dirs():
    """(include dir, library dir) of an installed Plexus: $PLEXUS_PREFIX, else pkg-config."""
    prefix = os.environ.get("PLEXUS_PREFIX")
    if prefix:
        libdir = next((p for p in (pathlib.Path(prefix) / d for d in ("lib", "lib64"))
                       if (p / "libplexus.so").exists()), pathlib.Path(prefix) / "lib")
        return pathlib.Path(prefix) / "include", libdir
    try:
        inc = subprocess.run(["pkg-config", "--variable=includedir", "plexus"], check=True,
                             capture_output=True, text=True).stdout.strip()
        lib = subprocess.run(["pkg-config", "--variable=libdir", "plexus"], check=True,
                             capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit("plexus: cannot find an installed Plexus (set PLEXUS_PREFIX to its install prefix, or "
                         "PKG_CONFIG_PATH so that `pkg-config plexus` finds it): " + str(e))
    return pathlib.Path(inc), pathlib.Path(lib)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Build plexus._plexus_ffi in a folder.")
    parser.add_argument("--include-dir", required=True, help="folder holding plexus/plexus.h")
    parser.add_argument("--library-dir", required=True, help="folder holding libplexus.so")
    parser.add_argument("--output-dir", required=True, help="folder the package's parent is in")
    args = parser.parse_args()
    builder = make_ffibuilder(args.include_dir, args.library_dir, [os.path.abspath(args.library_dir)])
    builder.compile(tmpdir=args.output_dir, verbose=False)
elif __name__ == "__cffi__":  # setup.py's cffi_modules
    _inc, _lib = _pkg_config_dirs()
    ffibuilder = make_ffibuilder(_inc, _lib, [str(_lib)])
