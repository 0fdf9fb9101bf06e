"""Instance lists for campaign tests whose instances are stand-ins for the fake
launcher: each carries a certificate that matches it (a lock refuses an
uncertified instance; test_certification.py certifies real ones)."""
from labference_ros.core.certificates import CERTIFIED, instance_sha256


def certified_list(items) -> dict:
    certs = {i["instance_id"]: {"instance_id": i["instance_id"], "instance_sha256": instance_sha256(i),
                                "verdict": CERTIFIED, "program": {"system": "stand-in"}} for i in items}
    return {"schema": 1, "instances": list(items), "certification": {"schema": 1, "certificates": certs}}
