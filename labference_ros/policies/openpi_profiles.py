"""Request/response profiles for OpenPI-protocol policy servers.

A profile says how a PolicyObservation becomes the request map a server's
input transform reads (which camera fills which image slot, composites,
resize-with-pad, HWC or CHW, nested keys, state vectors) and which action
convention its replies use (core.action_conversion). Presets:

- `droid`: OpenPI's DROID policies. Two image slots
  (observation/exterior_image_1_left, observation/wrist_image_left), joint
  position (7) and gripper position normalised 0..1 with 1 = closed,
  224x224 resize-with-pad; replies are 7 normalised joint velocities plus
  the gripper position, one row per 15 Hz step, executed as DROID's robot
  does (0.2 rad per step at most, an over-range row scaled as a whole), 8
  rows per request, the gripper closed above 0.5 (openpi's DROID example).
  `action_space: "joint_position"` takes absolute joint targets per step
  instead (sim-evals, RoboArena).
- `roboarena`: a RoboArena policy server (DROID layout): its
  PolicyServerConfig arrives first and is checked against the profile,
  requests carry `endpoint` ("reset" at the episode's start, then "infer")
  and `session_id` when the server asks for it; every returned row runs
  (RoboArena executes the whole chunk) at 15 Hz, in the declared
  `action_space` (default "joint_position", RoboArena's default).
- `libero`: LIBERO-style fine-tuning layout (observation/image,
  observation/wrist_image, observation/state = 7 joints + gripper width),
  replies in the project's joint-position convention.
- `joint_position`: the project's own convention (all three cameras at full
  size, joint positions and the gripper width in m, absolute joint targets).
- `aliased`: everything given by the user.

Every registered camera is either in a slot or named in `drop_cameras`:
a model with fewer slots than the task has evidence cameras gets a
composite (e.g. "front+display": the display inset into the front view) or
an explicit, recorded drop, never a silent one.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from PIL import Image

from labference_ros.core.action_conversion import (DROID_CONTROL_RATE_HZ, DROID_OPEN_LOOP_HORIZON,
                                                   DROID_VELOCITY_SCALE_RAD_S, GRIPPER_CLOSED_1, GRIPPER_WIDTH_M,
                                                   ActionConversion, ConversionError, make_conversion)
from labference_ros.core.action_spec import ActionSpec
from labference_ros.core.ee_conversion import GRIPPER_SIGN_CLOSED_POSITIVE, axis_angle_from_rotation, \
    ee_delta_conversion
from labference_ros.core.observation import REGISTERED_CAMERAS, PolicyObservation

PROFILES = ("joint_position", "droid", "roboarena", "libero", "libero_ee", "aliased")
PROTOCOLS = ("openpi", "roboarena")
# sim_time: the observation's public sim time (s), for servers that pace a plan by it.
# ee_*: the hand (TCP) pose in the robot base frame from the cell's robot model (LIBERO's
# state: position, axis-angle, the two finger positions).
STATE_FIELDS = {"joint_position": 7, "gripper_width_m": 1, "gripper_closed_1": 1, "sim_time": 1,
                "ee_position": 3, "ee_axis_angle": 3, "gripper_fingers": 2}
POSE_FIELDS = ("ee_position", "ee_axis_angle")
EXTRA_SOURCES = ("sim_time",)
IMAGE_LAYOUTS = ("HWC", "CHW")
INSET_CORNERS = ("top_left", "top_right", "bottom_left", "bottom_right")


class ProfileError(ValueError):
    """A profile configuration that cannot be built (named cause)."""


def resize_with_pad(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """Fit an HxWx3 uint8 image into height x width keeping its aspect
    ratio (bilinear), centred on zeros: the resize OpenPI's examples apply
    before sending (openpi_client.image_tools.resize_with_pad)."""
    h, w = image.shape[:2]
    if (h, w) == (height, width):
        return image
    ratio = max(w / width, h / height)
    new_h, new_w = int(h / ratio), int(w / ratio)
    resized = np.asarray(Image.fromarray(image).resize((new_w, new_h), resample=Image.BILINEAR))
    out = np.zeros((height, width, image.shape[2]), dtype=image.dtype)
    top, left = max(0, int((height - new_h) / 2)), max(0, int((width - new_w) / 2))
    out[top:top + new_h, left:left + new_w] = resized
    return out


@dataclass(frozen=True)
class ImageSlot:
    """One model image slot: a camera, or a composite of two cameras.
    source: "cam", "base+inset" (inset scaled, aspect kept, into a corner
    of base) or "left|right" (side by side, right scaled to left's height)."""
    key: tuple[str, ...]
    source: str
    resize: tuple[int, int] | None = None
    layout: str = "HWC"
    inset_scale: float = 0.4
    inset_corner: str = "top_right"

    def __post_init__(self) -> None:
        if self.layout not in IMAGE_LAYOUTS:
            raise ProfileError(f"image layout must be one of {IMAGE_LAYOUTS}, got {self.layout!r}")
        if self.inset_corner not in INSET_CORNERS:
            raise ProfileError(f"inset corner must be one of {INSET_CORNERS}, got {self.inset_corner!r}")
        if not 0 < self.inset_scale <= 1:
            raise ProfileError("inset scale must be in (0, 1]")
        unknown = [c for c in self.cameras if c not in REGISTERED_CAMERAS]
        if unknown or not self.cameras:
            raise ProfileError(f"image slot {'/'.join(self.key)!r}: unknown camera(s) {unknown or self.source!r}; "
                               f"registered: {list(REGISTERED_CAMERAS)}")
        if self.resize is not None and (len(self.resize) != 2 or min(self.resize) < 1):
            raise ProfileError(f"resize must be [height, width], got {self.resize!r}")

    @property
    def composite(self) -> str:
        return "inset" if "+" in self.source else "side_by_side" if "|" in self.source else "none"

    @property
    def cameras(self) -> tuple[str, ...]:
        return tuple(c.strip() for c in self.source.replace("|", "+").split("+"))

    def render(self, images: dict[str, np.ndarray]) -> np.ndarray:
        cams = self.cameras
        missing = [c for c in cams if c not in images]
        if missing:
            raise ProfileError(f"image slot {'/'.join(self.key)!r} needs camera(s) {missing}")
        if self.composite == "inset":
            img = self._inset(images[cams[0]], images[cams[1]])
        elif self.composite == "side_by_side":
            a, b = images[cams[0]], images[cams[1]]
            if a.shape[0] != b.shape[0]:
                b = np.asarray(Image.fromarray(b).resize(
                    (round(b.shape[1] * a.shape[0] / b.shape[0]), a.shape[0]), resample=Image.BILINEAR))
            img = np.concatenate([a, b], axis=1)
        else:
            img = images[cams[0]]
        if self.resize is not None:
            img = resize_with_pad(img, *self.resize)
        img = np.ascontiguousarray(img, dtype=np.uint8)
        return np.ascontiguousarray(img.transpose(2, 0, 1)) if self.layout == "CHW" else img

    def _inset(self, base: np.ndarray, inset: np.ndarray) -> np.ndarray:
        h, w = base.shape[:2]
        # The inset keeps its own aspect ratio: its height is inset_scale of the base's.
        ih = max(1, round(h * self.inset_scale))
        iw = min(w, max(1, round(ih * inset.shape[1] / inset.shape[0])))
        small = np.asarray(Image.fromarray(inset).resize((iw, ih), resample=Image.BILINEAR))
        out = base.copy()
        top = 0 if self.inset_corner.startswith("top") else h - ih
        left = 0 if self.inset_corner.endswith("left") else w - iw
        out[top:top + ih, left:left + iw] = small
        return out

    def describe(self) -> dict:
        d = {"key": "/".join(self.key) if len(self.key) == 1 else list(self.key), "cameras": list(self.cameras),
             "composite": self.composite, "resize_with_pad": list(self.resize) if self.resize else None,
             "layout": self.layout}
        if self.composite == "inset":
            d.update(inset_scale=self.inset_scale, inset_corner=self.inset_corner)
        return d


@dataclass(frozen=True)
class StateEntry:
    key: tuple[str, ...]
    fields: tuple[str, ...]
    dtype: str = "float64"

    def __post_init__(self) -> None:
        bad = [f for f in self.fields if f not in STATE_FIELDS]
        if bad or not self.fields:
            raise ProfileError(f"state {'/'.join(self.key)!r}: unknown field(s) {bad or '(none)'}; "
                               f"known: {sorted(STATE_FIELDS)}")
        if self.dtype not in ("float32", "float64"):
            raise ProfileError(f"state dtype must be float32 or float64, got {self.dtype!r}")

    def value(self, obs: PolicyObservation, open_width_m: float, pose=None) -> np.ndarray:
        parts = []
        for f in self.fields:
            if f == "ee_position":
                parts.append(pose[0])
            elif f == "ee_axis_angle":
                parts.append(axis_angle_from_rotation(pose[1]))
            elif f == "gripper_fingers":
                parts.append([obs.gripper_width / 2.0, -obs.gripper_width / 2.0])
            elif f == "joint_position":
                parts.append(obs.joint_positions)
            elif f == "gripper_width_m":
                parts.append([obs.gripper_width])
            elif f == "sim_time":
                parts.append([obs.sim_time])
            else:  # the width seen as a closure fraction, 1 = closed
                parts.append([float(np.clip(1.0 - obs.gripper_width / open_width_m, 0.0, 1.0))])
        return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts]).astype(self.dtype)

    def describe(self) -> dict:
        return {"key": "/".join(self.key) if len(self.key) == 1 else list(self.key), "fields": list(self.fields),
                "dim": sum(STATE_FIELDS[f] for f in self.fields), "dtype": self.dtype}


@dataclass(frozen=True)
class RequestLayout:
    images: tuple[ImageSlot, ...]
    states: tuple[StateEntry, ...]
    prompt_key: tuple[str, ...]
    dropped_cameras: tuple[str, ...] = ()
    extras: tuple[tuple[tuple[str, ...], str], ...] = ()
    open_width_m: float = 0.08
    kinematics: object = field(default=None, compare=False)  # pose(q) for ee_* state fields

    def __post_init__(self) -> None:
        used = {c for s in self.images for c in s.cameras}
        silent = [c for c in REGISTERED_CAMERAS if c not in used and c not in self.dropped_cameras]
        if silent:
            raise ProfileError(f"camera(s) {silent} fill no image slot: put them in a slot or a composite "
                               f"(e.g. \"front+display\") or name them in drop_cameras")
        bad = [s for _, s in self.extras if s not in EXTRA_SOURCES]
        if bad:
            raise ProfileError(f"extra sources {bad} unknown; known: {list(EXTRA_SOURCES)}")
        keys = [s.key for s in self.images] + [s.key for s in self.states] + [self.prompt_key] + [k for k, _ in self.extras]
        if len(set(keys)) != len(keys):
            raise ProfileError("two request entries share one key")
        for k in keys:  # a key may not be both a value and a map
            for other in keys:
                if other != k and other[:len(k)] == k:
                    raise ProfileError(f"key {'/'.join(k)!r} is both a value and a parent of {'/'.join(other)!r}")

    def build(self, obs: PolicyObservation) -> dict:
        req: dict = {}
        for slot in self.images:
            _put(req, slot.key, slot.render(obs.images))
        pose = None
        if any(f in POSE_FIELDS for st in self.states for f in st.fields):
            pose = self.kinematics.pose(obs.joint_positions)
        for st in self.states:
            _put(req, st.key, st.value(obs, self.open_width_m, pose))
        _put(req, self.prompt_key, obs.instruction)
        for key, source in self.extras:
            _put(req, key, np.array([obs.sim_time], dtype=np.float64))
        return req

    def describe(self) -> dict:
        return {"images": [s.describe() for s in self.images], "state": [s.describe() for s in self.states],
                "prompt": "/".join(self.prompt_key), "dropped_cameras": list(self.dropped_cameras),
                "extra": {"/".join(k): s for k, s in self.extras}}


def _put(req: dict, key: tuple[str, ...], value) -> None:
    node = req
    for part in key[:-1]:
        node = node.setdefault(part, {})
    node[key[-1]] = value


@dataclass(frozen=True)
class Profile:
    name: str
    request: RequestLayout
    actions: ActionConversion
    protocol: str = "openpi"  # openpi | roboarena (endpoint and session_id keys, a reset message)

    def conventions(self) -> dict:
        """What the profile declares a server must agree with (compared with the
        server's metadata at the episode's start, recorded in run.json)."""
        return declared_conventions(self.actions, self.request.describe())

    def describe(self) -> dict:
        return {"name": self.name, "protocol": self.protocol, "request": self.request.describe(),
                "actions": self.actions.to_dict(), "conventions": self.conventions()}

    @property
    def resize(self) -> list | None:
        """The image resolution the request is sent at (None: as rendered)."""
        sizes = {s.resize for s in self.request.images}
        only = sizes.pop() if len(sizes) == 1 else None
        return list(only) if only else None


ACTION_SPACES = {"velocity": "joint_velocity", "position": "joint_position", "delta": "joint_delta",
                 "ee_delta": "ee_delta"}


def declared_conventions(actions: ActionConversion, request: dict) -> dict:
    """Action space, control rate, open-loop horizon, gripper convention, state
    layout and camera slots, as one flat record."""
    return {"action_space": ACTION_SPACES[actions.arm],
            "action_dim": actions.native.dim,
            "control_rate_hz": actions.native.control_frequency_hz,
            "open_loop_horizon": int(actions.open_loop_horizon) or None,
            "gripper": actions.native.gripper.kind,
            "gripper_threshold": actions.gripper_threshold,
            "state": {s["key"] if isinstance(s["key"], str) else "/".join(s["key"]): s["fields"]
                      for s in request["state"]},
            "cameras": {s["key"] if isinstance(s["key"], str) else "/".join(s["key"]): s["cameras"]
                        for s in request["images"]}}


# presets: image slots, state entries, prompt key, default resize, action convention
_PRESETS = {
    "droid": {
        "images": {"observation/exterior_image_1_left": "front+display", "observation/wrist_image_left": "wrist"},
        "state": {"observation/joint_position": ["joint_position"],
                  "observation/gripper_position": ["gripper_closed_1"]},
        "prompt_key": "prompt", "resize": [224, 224],
        "actions": {"arm": "velocity", "gripper": GRIPPER_CLOSED_1, "velocity_scale": DROID_VELOCITY_SCALE_RAD_S,
                    "velocity_rule": "scale_vector", "control_rate_hz": DROID_CONTROL_RATE_HZ,
                    "open_loop_horizon": DROID_OPEN_LOOP_HORIZON, "gripper_threshold": 0.5}},
    "roboarena": {
        "images": {"observation/exterior_image_1_left": "front+display", "observation/wrist_image_left": "wrist"},
        "state": {"observation/joint_position": ["joint_position"],
                  "observation/gripper_position": ["gripper_closed_1"]},
        "prompt_key": "prompt", "resize": [224, 224], "protocol": "roboarena",
        "actions": {"arm": "position", "gripper": GRIPPER_CLOSED_1, "velocity_scale": DROID_VELOCITY_SCALE_RAD_S,
                    "velocity_rule": "scale_vector", "control_rate_hz": DROID_CONTROL_RATE_HZ,
                    "open_loop_horizon": 0}},
    # A stock pi0/pi0.5 LIBERO checkpoint: LIBERO's images and state (hand position,
    # axis-angle, two finger positions), 7-column end-effector deltas per 20 Hz step in the
    # base frame with LIBERO's OSC scales, the gripper +1 = close; 5 rows per request
    # (openpi's LIBERO example, replan_steps).
    "libero_ee": {
        "images": {"observation/image": "front+display", "observation/wrist_image": "wrist"},
        "state": {"observation/state": ["ee_position", "ee_axis_angle", "gripper_fingers"]},
        "prompt_key": "prompt", "resize": [224, 224],
        "actions": {"arm": "ee_delta", "frame": "base", "rotation": "axis_angle", "translation_scale_m": 0.05,
                    "rotation_scale_rad": 0.5, "control_rate_hz": 20.0, "open_loop_horizon": 5,
                    "gripper": GRIPPER_SIGN_CLOSED_POSITIVE}},
    "libero": {
        "images": {"observation/image": "front+display", "observation/wrist_image": "wrist"},
        "state": {"observation/state": ["joint_position", "gripper_width_m"]},
        "prompt_key": "prompt", "resize": [224, 224],
        "actions": {"arm": "position", "gripper": GRIPPER_WIDTH_M}},
    "joint_position": {
        "images": {"observation/exterior_image_1_left": "front", "observation/wrist_image_left": "wrist",
                   "observation/exterior_image_2_left": "display"},
        "state": {"observation/joint_position": ["joint_position"],
                  "observation/gripper_position": ["gripper_width_m"]},
        "prompt_key": "prompt", "resize": None,
        "actions": {"arm": "position", "gripper": GRIPPER_WIDTH_M}},
    "aliased": {"images": {}, "state": {}, "prompt_key": "prompt", "resize": None,
                "actions": {"arm": "position", "gripper": GRIPPER_WIDTH_M}},
}

# legacy `keys` names (channel -> request key) of the joint_position profile
_LEGACY_CHANNELS = {"front": ("images", "front"), "wrist": ("images", "wrist"), "display": ("images", "display"),
                    "joint_positions": ("state", "joint_position"), "gripper": ("state", "gripper_width_m")}

# DROID's two joint action spaces (droid RobotEnv action_space; RoboArena's PolicyServerConfig)
DROID_ACTION_SPACES = {"joint_velocity": {"arm": "velocity", "velocity_rule": "scale_vector"},
                       "joint_position": {"arm": "position", "velocity_rule": "clip"}}

PARAM_KEYS = ("profile", "images", "state", "prompt_key", "resize", "image_layout", "state_dtype",
              "nested_separator", "drop_cameras", "extra", "actions", "inset", "keys", "action_space")


def build_profile(params: dict, reference: ActionSpec) -> Profile:
    """system_params -> Profile. Raises ProfileError naming the bad entry."""
    name = params.get("profile", "joint_position")
    if name not in _PRESETS:
        raise ProfileError(f"unknown OpenPI profile {name!r}; known: {list(PROFILES)}")
    preset = _PRESETS[name]
    images = dict(params.get("images", preset["images"]))
    state = dict(params.get("state", preset["state"]))
    prompt_key = params.get("prompt_key", preset["prompt_key"])
    if params.get("keys"):  # legacy renames: {"front": "my/key", "prompt": "instruction", ...}
        images, state, prompt_key = _apply_legacy_keys(params["keys"], images, state, prompt_key)
    if name == "aliased" and not images:
        raise ProfileError("the aliased profile needs `images` ({request key: camera or composite})")
    sep = params.get("nested_separator") or None
    split = (lambda k: tuple(k.split(sep))) if sep else (lambda k: (k,))
    resize = params.get("resize", preset["resize"])
    inset = dict(params.get("inset", {}))
    slots = tuple(ImageSlot(split(k), str(src), tuple(int(x) for x in resize) if resize else None,
                            str(params.get("image_layout", "HWC")), float(inset.get("scale", 0.4)),
                            str(inset.get("corner", "top_right")))
                  for k, src in images.items())
    states = tuple(StateEntry(split(k), tuple(v if isinstance(v, list) else [v]),
                              str(params.get("state_dtype", "float64"))) for k, v in state.items())
    extras = tuple((split(k), str(v)) for k, v in dict(params.get("extra", {})).items())
    needs_pose = any(f in POSE_FIELDS for st in states for f in st.fields)
    acts = dict(preset["actions"])
    space = params.get("action_space")
    if space is not None:
        if name not in ("droid", "roboarena") or space not in DROID_ACTION_SPACES:
            raise ProfileError(f"action_space {space!r}: the droid and roboarena profiles take one of "
                               f"{list(DROID_ACTION_SPACES)}")
        acts.update(DROID_ACTION_SPACES[space])
    acts.update(dict(params.get("actions", {})))
    kinematics = hand_kinematics() if needs_pose or acts.get("arm") == "ee_delta" else None
    layout = RequestLayout(slots, states, split(prompt_key), tuple(params.get("drop_cameras", ())), extras,
                           reference.gripper.open_width_m, kinematics)
    conversion = build_conversion(reference, acts, kinematics)
    return Profile(name, layout, conversion, preset.get("protocol", "openpi"))


def hand_kinematics():
    """The cell's robot model with the skills' IK (imported only by profiles that need it)."""
    from labference_ros.skills.ee_ik import HandKinematics

    return HandKinematics()


def build_conversion(reference: ActionSpec, acts: dict, kinematics=None):
    """A profile's `actions` -> its conversion into the reference interface; a convention
    that cannot be mapped is a ProfileError naming it (before any episode)."""
    acts = dict(acts)
    try:
        if acts.get("arm") == "ee_delta":
            acts.pop("arm")
            gripper = acts.pop("gripper", GRIPPER_SIGN_CLOSED_POSITIVE)
            if gripper != GRIPPER_SIGN_CLOSED_POSITIVE:
                raise ConversionError(f"end-effector gripper convention {gripper!r} cannot be mapped; "
                                      f"supported: {GRIPPER_SIGN_CLOSED_POSITIVE!r}")
            return ee_delta_conversion(reference, kinematics or hand_kinematics(), **acts)
        return make_conversion(reference, **acts)
    except (ConversionError, TypeError) as e:
        raise ProfileError(f"actions {acts}: {e}") from e


def _apply_legacy_keys(keys: dict, images: dict, state: dict, prompt_key: str):
    images, state = dict(images), dict(state)
    for channel, new_key in keys.items():
        if channel == "prompt":
            prompt_key = new_key
            continue
        if channel not in _LEGACY_CHANNELS:
            raise ProfileError(f"keys: unknown channel {channel!r}; known: {sorted(_LEGACY_CHANNELS) + ['prompt']}")
        kind, what = _LEGACY_CHANNELS[channel]
        table = images if kind == "images" else state
        old = [k for k, v in table.items() if v == what or v == [what]]
        for k in old:
            del table[k]
        table[new_key] = what if kind == "images" else [what]
    return images, state, prompt_key
