"""Optional PNG plots; matplotlib is not a dependency, so absent -> no plots."""
from __future__ import annotations

from pathlib import Path


def _label(cell: dict) -> str:
    return "\n".join(str(v) for v in cell.values() if v not in (None, "", "none"))


def plot_report(rep: dict, out_dir: Path) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    out_dir = Path(out_dir)
    written = []
    cells = rep["cells"]
    if cells:
        fig, ax = plt.subplots(figsize=(max(4, 1.6 * len(cells)), 3.5))
        width = 0.38
        for j, key in enumerate(("selection", "valid_completion")):
            xs, ys, errs = [], [], [[], []]
            for i, c in enumerate(cells):
                iv = c["intervals"][key]
                est = iv["estimate"]
                xs.append(i + (j - 0.5) * width)
                ys.append(0 if est is None else 100 * est)
                lo, hi = iv["lo"], iv["hi"]
                errs[0].append(0 if lo is None or est is None else 100 * (est - lo))
                errs[1].append(0 if hi is None or est is None else 100 * (hi - est))
            ax.bar(xs, ys, width, yerr=errs, capsize=3, label=key.replace("_", " "))
        ax.set_xticks(range(len(cells)), [_label(c["cell"]) for c in cells], fontsize=7)
        ax.set_ylabel("% (95% CI)")
        ax.set_ylim(0, 105)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = out_dir / "selection_completion.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(str(path))
    for i, c in enumerate(cells):
        cm = c["metrics"]["confusion"]
        if not cm["rows"]:
            continue
        grid = [[cm["matrix"][r].get(col, 0) for col in cm["cols"]] for r in cm["rows"]]
        fig, ax = plt.subplots(figsize=(1 + 0.8 * len(cm["cols"]), 1 + 0.6 * len(cm["rows"])))
        ax.imshow(grid, cmap="Blues")
        ax.set_xticks(range(len(cm["cols"])), cm["cols"], rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(len(cm["rows"])), cm["rows"], fontsize=7)
        for r, row in enumerate(grid):
            for k, v in enumerate(row):
                ax.text(k, r, str(v), ha="center", va="center", fontsize=7)
        ax.set_xlabel("chosen")
        ax.set_ylabel("required")
        ax.set_title(_label(c["cell"]).replace("\n", " / "), fontsize=7)
        fig.tight_layout()
        path = out_dir / f"confusion_{i}.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(str(path))
    return written
