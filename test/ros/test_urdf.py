"""The cell URDF is well formed: one root, every joint joins existing links."""
import pathlib
import xml.etree.ElementTree as ET

URDF = pathlib.Path(__file__).resolve().parents[2] / "urdf" / "weighing_cell.urdf"


def test_cell_urdf_is_a_tree_rooted_at_world_with_the_load_cell_frame():
    root = ET.parse(URDF).getroot()
    links = {link.get("name") for link in root.findall("link")}
    children = {}
    for joint in root.findall("joint"):
        parent, child = joint.find("parent").get("link"), joint.find("child").get("link")
        assert parent in links and child in links, joint.get("name")
        assert child not in children, f"{child} has two parents"
        children[child] = parent
    assert links - set(children) == {"world"}
    assert "pan_load_cell" in links  # frame_id of /balance/wrench
