"""The cell URDF, generated from the cell description.

Fixtures (table, balance housing, load-cell pan, readout panel) and the
world-fixed cameras with their optical frames. The Panda itself comes from
franka_description on a full ROS 2 install; its base (panda_link0) sits at
the world origin. The balance pose is per instance (layout seed): pass the
instance's ``balance`` xy, or the description's nominal pose is used.

    python -m labference_ros.cell.urdf > urdf/weighing_cell.urdf
"""
from __future__ import annotations

import math
import sys
from xml.sax.saxutils import quoteattr

import numpy as np

from labference_ros.cell.description import CameraMount, CellDescription, weighing_cell

# ROS optical frame (z forward, x right, y down) from the MuJoCo/OpenGL camera
# frame (looks along -z, y up): a half turn about x.
OPTICAL_FROM_CAMERA_RPY = (math.pi, 0.0, 0.0)


def quat_to_matrix(q) -> np.ndarray:
    w, x, y, z = (float(v) for v in q)
    n = math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def matrix_to_rpy(r: np.ndarray) -> tuple[float, float, float]:
    """URDF rpy (fixed axes x, y, z: R = Rz(yaw) Ry(pitch) Rx(roll))."""
    pitch = math.asin(max(-1.0, min(1.0, -float(r[2, 0]))))
    if abs(math.cos(pitch)) > 1e-9:
        roll = math.atan2(float(r[2, 1]), float(r[2, 2]))
        yaw = math.atan2(float(r[1, 0]), float(r[0, 0]))
    else:  # gimbal lock: put the whole rotation about z into yaw
        roll = 0.0
        yaw = math.atan2(-float(r[0, 1]), float(r[1, 1]))
    return roll, pitch, yaw


def look_at_matrix(position, target, up=(0.0, 0.0, 1.0), image_x=None) -> np.ndarray:
    """Camera axes (columns x, y, z) for a camera looking along its -z at target."""
    pos, tgt = np.asarray(position, float), np.asarray(target, float)
    z = pos - tgt
    z /= np.linalg.norm(z)
    if image_x is None:
        x = np.cross(np.asarray(up, float), z)
        x /= np.linalg.norm(x)
    else:
        x = np.asarray(image_x, float)
    y = np.cross(z, x)
    return np.column_stack([x, y, z])


def camera_matrix(mount: CameraMount) -> np.ndarray:
    if mount.quaternion is not None:
        return quat_to_matrix(mount.quaternion)
    return look_at_matrix(mount.position, mount.look_at, image_x=mount.image_x_axis)


def display_matrix(cell: CellDescription) -> np.ndarray:
    """The readout panel's axes in the balance frame: tilted towards +x, read along +y."""
    tilt = math.radians(cell.balance.display_tilt_deg)
    normal = np.array([math.sin(tilt), 0.0, math.cos(tilt)])
    x_axis = np.array([0.0, 1.0, 0.0])
    return np.column_stack([x_axis, np.cross(normal, x_axis), normal])


def _f(v: float) -> str:
    text = f"{v:.12f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _origin(xyz=(0.0, 0.0, 0.0), rpy=(0.0, 0.0, 0.0)) -> str:
    out = f'<origin xyz="{" ".join(_f(v) for v in xyz)}"'
    if any(abs(a) > 1e-12 for a in rpy):
        out += f' rpy="{" ".join(_f(v) for v in rpy)}"'
    return out + "/>"


def _joint(name: str, parent: str, child: str, xyz=(0.0, 0.0, 0.0), rpy=(0.0, 0.0, 0.0)) -> list[str]:
    return [f'  <joint name={quoteattr(name)} type="fixed">',
            f'    <parent link={quoteattr(parent)}/>',
            f'    <child link={quoteattr(child)}/>',
            f"    {_origin(xyz, rpy)}",
            "  </joint>"]


def _box_link(name: str, material: str, centre, size) -> list[str]:
    geometry = f'<geometry><box size="{" ".join(_f(v) for v in size)}"/></geometry>'
    return [f"  <link name={quoteattr(name)}>",
            f"    <visual>{_origin(centre)}{geometry}<material name={quoteattr(material)}/></visual>",
            f"    <collision>{_origin(centre)}{geometry}</collision>",
            "  </link>"]


def _camera(name: str, parent: str, mount: CameraMount) -> list[str]:
    """A camera frame (MuJoCo convention, as the simulator's camera) and its ROS optical frame."""
    rpy = matrix_to_rpy(camera_matrix(mount))
    return ([f"  <link name={quoteattr(name + '_camera')}/>"]
            + _joint(f"{parent}_to_{name}_camera", parent, f"{name}_camera", mount.position, rpy)
            + [f"  <link name={quoteattr(name + '_camera_optical_frame')}/>"]
            + _joint(f"{name}_camera_to_optical", f"{name}_camera", f"{name}_camera_optical_frame",
                     rpy=OPTICAL_FROM_CAMERA_RPY))


def generate_urdf(cell: CellDescription, balance_xy=None) -> str:
    b = cell.balance
    bx, by = balance_xy if balance_xy is not None else b.nominal_xy
    t = cell.table
    lines = ['<?xml version="1.0"?>',
             "<!-- Generated from labference_ros/cell/weighing_cell.yaml by",
             "     `python -m labference_ros.cell.urdf`; do not edit by hand.",
             "     The weighing cell around the arm: table, balance housing, load-cell pan,",
             "     readout panel and the world-fixed cameras (frames as the simulator's cameras,",
             "     which look along -z with +y up, plus a ROS optical frame each). The Panda",
             "     comes from franka_description on a full ROS 2 install (panda_link0 at the",
             "     world origin); the wrist camera is on its hand. The balance pose is per",
             "     instance: this file uses the cell's nominal pose. -->",
             f"<robot name={quoteattr(cell.name)}>",
             f'  <material name="table_wood"><color rgba="{" ".join(_f(v) for v in t.rgba)}"/></material>',
             '  <material name="balance_grey"><color rgba="0.85 0.86 0.88 1"/></material>',
             '  <material name="pan_steel"><color rgba="0.8 0.8 0.82 1"/></material>',
             '  <material name="panel_black"><color rgba="0.02 0.02 0.02 1"/></material>',
             '  <link name="world"/>']
    lines += _box_link("table", "table_wood", t.centre, [2 * v for v in t.half_size])
    lines += _joint("world_to_table", "world", "table")
    lines += _box_link("balance_body", "balance_grey", (0.0, 0.0, b.housing_height / 2),
                       (2 * b.housing_half_x, 2 * b.housing_half_y, b.housing_height))
    lines += _joint("table_to_balance", "table", "balance_body", (bx, by, 0.0))
    # The load cell: the pan is rigidly supported; its support wrench is
    # published on /balance/wrench in this frame (z opposes gravity).
    pan_geometry = f'<geometry><cylinder radius="{_f(b.pan_radius)}" length="{_f(b.pan_thickness)}"/></geometry>'
    pan_centre = _origin((0.0, 0.0, -b.pan_thickness / 2))
    lines += ['  <link name="pan_load_cell">',
              f'    <visual>{pan_centre}{pan_geometry}<material name="pan_steel"/></visual>',
              f"    <collision>{pan_centre}{pan_geometry}</collision>",
              "  </link>"]
    lines += _joint("balance_to_pan", "balance_body", "pan_load_cell", (0.0, 0.0, b.pan_top_z))
    lines += ['  <link name="balance_display">',
              f'    <visual><origin xyz="0 0 0"/><geometry><box size="0.1 0.034 0.001"/></geometry>'
              '<material name="panel_black"/></visual>',
              "  </link>"]
    lines += _joint("balance_to_display", "balance_body", "balance_display", b.display_position,
                    matrix_to_rpy(display_matrix(cell)))
    for name, mount in cell.cameras.items():
        if mount.parent == "world":
            lines += _camera(name, "world", mount)
        elif mount.parent == "balance_display":
            lines += _camera(name, "balance_display", mount)
        # Cameras on the robot (the wrist) belong to the robot's description.
    lines.append("</robot>")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(generate_urdf(weighing_cell()))  # urdf/weighing_cell.urdf
