"""pip install --no-build-isolation ./bindings/python

Builds the cffi extension against an installed Plexus (found by $PLEXUS_PREFIX, else
pkg-config's plexus.pc) with Debian's setuptools and python3-cffi; nothing is downloaded.
docs/ops.md is copied into the package for the ops' docstrings when building from the
repository."""
import pathlib
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = pathlib.Path(__file__).resolve().parent
OPS_MD = HERE.parent.parent / "docs" / "ops.md"


class BuildWithOpsDoc(build_py):
    """build_py that also ships docs/ops.md as plexus/ops/ops.md."""

    def run(self):
        super().run()
        if OPS_MD.exists():
            target = pathlib.Path(self.build_lib) / "plexus" / "ops" / "ops.md"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(OPS_MD, target)


# The extension's link line (-L and RUNPATH) names the installed Plexus, which the build's
# timestamps do not see: always rebuild it, or a second `pip install` against another
# prefix would reuse the extension linked to the first from bindings/python/build/.
setup(
    name="plexus",
    version="0.1.0",
    description="Plexus: the IPU programming model (PopXL) on CPUs, over Plexus's C ABI",
    packages=["plexus", "plexus.ops", "plexus.report", "popxl", "popxl.ops", "poptorch"],
    python_requires=">=3.9",
    install_requires=["numpy", "cffi>=1.15"],
    # plexus-report draws with matplotlib (Debian's python3-matplotlib, seen by a venv made
    # with --system-site-packages); only the report needs it.
    extras_require={"report": ["matplotlib"]},
    entry_points={"console_scripts": ["plexus-report = plexus.report.cli:main"]},
    setup_requires=["cffi>=1.15"],
    cffi_modules=["plexus/_ffi_build.py:ffibuilder"],
    cmdclass={"build_py": BuildWithOpsDoc},
    options={"build_ext": {"force": True}},
    zip_safe=False,
)
