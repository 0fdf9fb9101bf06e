"""The robot description published on /robot_description: the cell URDF with
the Franka Panda attached at the world origin (panda_link0 on the table top).

The cell URDF is read from a path (urdf/weighing_cell.urdf in the package), so
a regenerated cell file is picked up as it is; when it already contains the
Panda (panda_link0), it is published unchanged. The Panda's links come from
urdf/panda.urdf (generated from the simulator's Menagerie model by
labference_ros.sim.panda_urdf), whose meshes are package://labference/meshes/panda/*.
"""
from __future__ import annotations

import pathlib
import sys
import xml.etree.ElementTree as ET

PACKAGE = "labference"
CELL_URDF = "weighing_cell.urdf"
PANDA_URDF = "panda.urdf"
ROBOT_ROOT = "panda_link0"
REPO_URDF_DIR = pathlib.Path(__file__).resolve().parents[2] / "urdf"


def share_dir() -> pathlib.Path | None:
    """The package's installed share directory (ament index; in the embedded
    environment, the venv's share/labference), or None when not installed."""
    try:
        from ament_index_python.packages import get_package_share_directory

        return pathlib.Path(get_package_share_directory(PACKAGE))
    except (ImportError, LookupError, OSError):  # not indexed, or no AMENT_PREFIX_PATH
        pass
    venv_share = pathlib.Path(sys.prefix) / "share" / PACKAGE
    return venv_share if (venv_share / "package.xml").is_file() else None


def default_urdf_dir() -> pathlib.Path:
    """urdf/ of the installed package when it has one, else the source tree's."""
    share = share_dir()
    if share is not None and (share / "urdf" / CELL_URDF).is_file():
        return share / "urdf"
    return REPO_URDF_DIR


def compose(cell_urdf: str | pathlib.Path, panda_urdf: str | pathlib.Path | None = None) -> str:
    """URDF text of the cell with the Panda joined to its world link."""
    cell_path = pathlib.Path(cell_urdf)
    cell = ET.parse(cell_path).getroot()
    if any(link.get("name") == ROBOT_ROOT for link in cell.iter("link")):
        return ET.tostring(cell, encoding="unicode")
    panda_path = pathlib.Path(panda_urdf) if panda_urdf else cell_path.parent / PANDA_URDF
    panda = ET.parse(panda_path).getroot()
    root_links = {link.get("name") for link in cell.findall("link")}
    root_links -= {j.find("child").get("link") for j in cell.findall("joint")}
    if len(root_links) != 1:
        raise ValueError(f"{cell_path}: expected one root link, found {sorted(root_links)}")
    world = root_links.pop()
    known_materials = {m.get("name") for m in cell.findall("material")}
    for element in panda:
        if element.tag == "material" and element.get("name") in known_materials:
            continue
        cell.append(element)
    joint = ET.SubElement(cell, "joint", name=f"{world}_to_{ROBOT_ROOT}", type="fixed")
    ET.SubElement(joint, "parent", link=world)
    ET.SubElement(joint, "child", link=ROBOT_ROOT)
    ET.SubElement(joint, "origin", xyz="0 0 0", rpy="0 0 0")
    return ET.tostring(cell, encoding="unicode")


def mesh_uris(urdf_xml: str) -> list[str]:
    root = ET.fromstring(urdf_xml)
    return sorted({m.get("filename") for m in root.iter("mesh")})


def resolve_uri(uri: str, share: pathlib.Path | None = None) -> pathlib.Path:
    """package://labference/<rel> -> <share>/<rel>; other packages are refused."""
    prefix = f"package://{PACKAGE}/"
    if not uri.startswith(prefix):
        raise ValueError(f"mesh {uri!r} is not in package {PACKAGE}")
    share = share or share_dir()
    if share is None:
        raise FileNotFoundError(f"package {PACKAGE} is not installed (no share directory)")
    return share / uri[len(prefix):]


def link_names(urdf_xml: str) -> list[str]:
    return [link.get("name") for link in ET.fromstring(urdf_xml).iter("link")]
