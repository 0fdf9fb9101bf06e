"""Report plots as PNG bytes (matplotlib, Agg backend): selection vs completion with
95 % intervals, one confusion matrix per cell, and the runtime split.

`render` returns {file name: PNG bytes}; the HTML report embeds them as data
URIs and `write_plots` also writes them next to report.json. An unavailable
estimate is drawn as no bar with the word "unavailable", never as 0.
"""
from __future__ import annotations

import io
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

DPI = 110
RUNTIME_COLORS = {"inference": "#4c72b0", "motion": "#55a868", "waiting": "#c4a000", "not_split": "#bbbbbb"}


def _label(cell: dict) -> str:
    return "\n".join(str(v) for v in cell.values() if v not in (None, "", "none"))


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")  # keeps legends placed outside the axes
    plt.close(fig)
    return buf.getvalue()


def selection_completion(cells: list[dict]) -> bytes | None:
    if not cells:
        return None
    fig, ax = plt.subplots(figsize=(max(4.5, 1.8 * len(cells)), 3.6))
    width = 0.38
    for j, (key, name) in enumerate((("selection", "selection"), ("valid_completion", "valid completion"))):
        for i, c in enumerate(cells):
            iv = c["intervals"][key]
            x, est = i + (j - 0.5) * width, iv["estimate"]
            if est is None:
                ax.text(x, 2, "unavailable", rotation=90, ha="center", va="bottom", fontsize=7)
                continue
            err = None
            if iv["lo"] is not None and iv["hi"] is not None:
                err = [[100 * (est - iv["lo"])], [100 * (iv["hi"] - est)]]
            ax.bar(x, 100 * est, width, yerr=err, capsize=3, color=f"C{j}", label=name if i == 0 else None)
    ax.set_xticks(range(len(cells)), [_label(c["cell"]) for c in cells], fontsize=7)
    ax.set_ylabel("% of scored rollouts (95% CI)")
    ax.set_ylim(0, 105)
    handles, _ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
    fig.tight_layout()
    return _png(fig)


def confusion(cell: dict) -> bytes | None:
    cm = cell["metrics"]["confusion"]
    if not cm["rows"]:
        return None
    grid = [[cm["matrix"][r].get(col, 0) for col in cm["cols"]] for r in cm["rows"]]
    fig, ax = plt.subplots(figsize=(1.6 + 0.8 * len(cm["cols"]), 1.4 + 0.5 * len(cm["rows"])))
    ax.imshow(grid, cmap="Blues", vmin=0)
    ax.set_xticks(range(len(cm["cols"])), cm["cols"], rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(len(cm["rows"])), cm["rows"], fontsize=7)
    top = max(max(row) for row in grid)
    for r, row in enumerate(grid):
        for k, v in enumerate(row):
            ax.text(k, r, str(v), ha="center", va="center", fontsize=8,
                    color="white" if top and v > top / 2 else "black")
    ax.set_xlabel("chosen standard (first decision)", fontsize=7)
    ax.set_ylabel("required standard", fontsize=7)
    ax.set_title(_label(cell["cell"]).replace("\n", " / "), fontsize=7)
    fig.tight_layout()
    return _png(fig)


def runtime(cells: list[dict]) -> bytes | None:
    """Mean wall seconds per attempt, stacked: inference, motion, waiting where recorded;
    otherwise the wall time beyond inference as one grey, unsplit segment."""
    rows = [(c, c.get("runtime") or {}) for c in cells]
    if not any((rt.get("wall") or {}).get("mean_s") is not None for _, rt in rows):
        return None
    fig, ax = plt.subplots(figsize=(6.5, 0.9 + 0.6 * len(rows)))
    used = set()
    for i, (c, rt) in enumerate(rows):
        left = 0.0
        parts = [(p, (rt.get(p) or {}).get("mean_s")) for p in ("inference", "motion", "waiting")]
        if parts[1][1] is None or parts[2][1] is None:
            parts = [parts[0], ("not_split", (rt.get("not_inference") or {}).get("mean_s"))]
        for part, value in parts:
            if value is None:
                continue
            value = max(0.0, value)  # a residual can dip below 0 by timer overlap; draw none
            label = {"not_split": "motion + waiting (not split in the records)"}.get(part, part)
            ax.barh(i, value, left=left, color=RUNTIME_COLORS[part], hatch="//" if part == "not_split" else None,
                    label=label if part not in used else None)
            used.add(part)
            left += value
        if left == 0:
            ax.text(0, i, " unavailable", va="center", fontsize=7)
    ax.set_yticks(range(len(rows)), [_label(c["cell"]).replace("\n", " / ") for c, _ in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("mean wall seconds per attempt")
    if used:
        ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False)
    fig.tight_layout()
    return _png(fig)


def render(rep: dict) -> dict[str, bytes]:
    """{file name: PNG bytes} of every plot the report has data for."""
    cells = rep["cells"]
    out = {"selection_completion.png": selection_completion(cells), "runtime.png": runtime(cells)}
    for i, c in enumerate(cells):
        out[f"confusion_{i}.png"] = confusion(c)
    return {name: png for name, png in out.items() if png is not None}


# The file names render() gives its plots: the report owns these in its output directory.
PLOT_FILE = re.compile(r"(selection_completion|runtime|confusion_\d+)\.png")


def write_plots(out_dir: Path, images: dict[str, bytes]) -> list[str]:
    """Write the plots as PNG files and remove the report's plot files an earlier
    report left in out_dir that this one does not have (all of them with plots off,
    images={}), so the directory holds what report.json lists; returns the paths."""
    out_dir = Path(out_dir)
    for old in out_dir.iterdir():
        if PLOT_FILE.fullmatch(old.name) and old.name not in images and old.is_file():
            old.unlink()
    written = []
    for name, png in images.items():
        path = out_dir / name
        path.write_bytes(png)
        written.append(str(path))
    return written
