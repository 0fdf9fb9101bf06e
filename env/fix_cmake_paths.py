"""Rewrite the build machine's absolute paths in the ROS wheels' CMake exports.

The ros-kilted wheels ship CMake export files naming the interpreter and numpy
include directories of the machine that built them; rosidl's Python generator
then fails to compile against this interpreter. Run after any ROS wheel install.
"""
from __future__ import annotations

import pathlib
import re
import sys
import sysconfig

import numpy

FOREIGN_NUMPY = re.compile(r"/opt/python/cp3\d+-cp3\d+t?/lib/python3\.\d+/site-packages/numpy/_core/include")
FOREIGN_PYTHON = re.compile(r"/opt/python/cp3\d+-cp3\d+t?/include/python3\.\d+t?")


def fix(prefix: pathlib.Path) -> int:
    python_include = sysconfig.get_paths()["include"]
    numpy_include = numpy.get_include()
    changed = 0
    for path in (prefix / "share").rglob("*.cmake"):
        text = path.read_text(errors="surrogateescape")
        new = FOREIGN_NUMPY.sub(numpy_include, text)
        new = FOREIGN_PYTHON.sub(python_include, new)
        if new != text:
            path.write_text(new, errors="surrogateescape")
            changed += 1
    return changed


if __name__ == "__main__":
    prefix = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else sys.prefix)
    print(f"fixed foreign include paths in {fix(prefix)} CMake files under {prefix}/share")
