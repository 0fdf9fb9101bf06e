#!/usr/bin/env bash
# colcon build of this package in the embedded environment, as on a full ROS 2
# install: a workspace WS (default build/colcon_ws) with src/labference holding
# the repository's files (the venv itself must not sit inside a colcon source tree).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV="$ROOT/.venv"
WS=$(realpath -m "${1:-$ROOT/build/colcon_ws}")
rm -rf "$WS/src/labference"
mkdir -p "$WS/src/labference"
(cd "$ROOT" && git ls-files -co --exclude-standard | tar -cf - -T -) | tar -xf - -C "$WS/src/labference"
cd "$WS"
PATH="$VENV/bin:$PATH" CMAKE_PREFIX_PATH="$VENV" AMENT_PREFIX_PATH="$VENV" \
  "$VENV/bin/colcon" build --event-handlers console_direct- \
  --cmake-args -DBUILD_TESTING=OFF -DPython3_EXECUTABLE="$VENV/bin/python"
