"""Elo-versus-nodes figures from their CSV (``python -m reports.plot reports/NAME/elo_vs_nodes.csv``):
:func:`plot` (Elo against the node budget) and :func:`plot_cost` (against seconds and evaluator
calls per move).

The CSV (written by ``searchbench scale``) has one row per player: family, engine, the budget (a
column named by the scale's unit: nodes, evals or movetime; empty for an anchor), elo, lo, hi (95%
bootstrap interval), games, score.  The figure has the budget on a log axis,
one line with error bars per family (families nudged sideways by a few percent so that bars at the
same budget do not hide each other), anchors as dotted horizontal lines; it is saved as PNG and
SVG beside the CSV.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Any, Callable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from reports.paradigms import budget_column  # noqa: E402

#: the x axis of :func:`plot` for each budget column of the table
AXIS_LABELS = {"nodes": "nodes per move", "evals": "evaluator calls per move", "movetime": "seconds per move"}


def read_csv(path: str | Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _savefig(fig: Any, path: Path) -> None:
    """The plain writer (the command line below); the harness passes an atomic one
    (:func:`experiments.paths.save_figure`: a planted link is replaced, never written through)."""
    fig.savefig(path)


def plot(csv_path: str | Path, title: str | None = None, save: Callable[[Any, Path], object] | None = None) -> list[Path]:
    """Draw the figure of ``csv_path``; returns the PNG and SVG paths."""
    p = Path(csv_path)
    data = read_csv(p)
    fig, ax = plt.subplots(figsize=(8, 5.5), dpi=120)
    families: dict[str, list[dict[str, str]]] = {}
    anchors: list[dict[str, str]] = []
    col = budget_column(data[0]) if data else "nodes"
    for r in data:
        (anchors if not r[col] else families.setdefault(r["family"], [])).append(r)
    markers = "osD^v<>ph*"
    for k, (fam, rs) in enumerate(families.items()):
        rs.sort(key=lambda r: float(r[col]))
        # families share budgets: shift each a little sideways (log axis) so error bars stay apart
        dodge = 1.0 + 0.025 * (k - (len(families) - 1) / 2)
        x = [float(r[col]) * dodge for r in rs]
        y = [float(r["elo"]) for r in rs]
        lo = [float(r["elo"]) - float(r["lo"]) for r in rs]
        hi = [float(r["hi"]) - float(r["elo"]) for r in rs]
        ax.errorbar(x, y, yerr=[lo, hi], marker=markers[k % len(markers)], capsize=3, label=fam, linewidth=1.5)
    ax.set_xscale("log")
    for k, r in enumerate(anchors):
        level = float(r["elo"])
        color = f"C{(len(families) + k) % 10}"
        ax.axhline(level, linestyle=":", linewidth=1.2, color=color)
        ax.axhspan(float(r["lo"]), float(r["hi"]), color=color, alpha=0.08)
        # x in axes coordinates, y in data coordinates: the label sits at the left edge
        ax.text(0.01, level, r["family"].removeprefix("anchor:"), transform=ax.get_yaxis_transform(),
                va="bottom", ha="left", fontsize=8, color=color)
    ax.set_xlabel(f"{AXIS_LABELS[col]} (log scale)")
    ax.set_ylabel("Elo (95% bootstrap interval)")
    ax.set_title(title or f"Elo versus nodes: {p.parent.name}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="best", fontsize=9)
    fig.tight_layout()
    out = [p.with_suffix(".png"), p.with_suffix(".svg")]
    for o in out:
        (save or _savefig)(fig, o)
    plt.close(fig)
    return out


def plot_cost(csv_path: str | Path, title: str | None = None,
              save: Callable[[Any, Path], object] | None = None) -> list[Path]:
    """Elo against what a move costs: seconds per move and evaluator calls per move (two panels,
    log axes; from the CSV's cost columns), anchors as in :func:`plot`; ``elo_vs_cost.{png,svg}``."""
    p = Path(csv_path)
    data = read_csv(p)
    fig, axes = plt.subplots(1, 2, figsize=(12, 5), dpi=110, sharey=True)
    families: dict[str, list[dict[str, str]]] = {}
    anchors: list[dict[str, str]] = []
    budget = budget_column(data[0]) if data else "nodes"
    for r in data:
        (anchors if not r[budget] else families.setdefault(r["family"], [])).append(r)
    markers = "osD^v<>ph*"
    for ax, col, label in ((axes[0], "seconds_per_move", "seconds per move (log scale)"),
                           (axes[1], "evals_per_move", "evaluator calls per move (log scale)")):
        for k, (fam, rs) in enumerate(families.items()):
            pts = sorted((float(r[col]), float(r["elo"]), float(r["lo"]), float(r["hi"])) for r in rs
                         if float(r.get(col) or 0) > 0)
            if not pts:
                continue
            ax.errorbar([x for x, _, _, _ in pts], [y for _, y, _, _ in pts],
                        yerr=[[y - lo for _, y, lo, _ in pts], [hi - y for _, y, _, hi in pts]],
                        marker=markers[k % len(markers)], capsize=3, label=fam, linewidth=1.5)
        for k, r in enumerate(anchors):
            color = f"C{(len(families) + k) % 10}"
            ax.axhline(float(r["elo"]), linestyle=":", linewidth=1.2, color=color)
            ax.text(0.01, float(r["elo"]), r["family"].removeprefix("anchor:"), transform=ax.get_yaxis_transform(),
                    va="bottom", ha="left", fontsize=8, color=color)
        ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("Elo (95% bootstrap interval)")
    axes[0].legend(loc="best", fontsize=9)
    fig.suptitle(title or f"Elo versus cost per move: {p.parent.name}")
    fig.tight_layout()
    out = [p.with_name("elo_vs_cost.png"), p.with_name("elo_vs_cost.svg")]
    for o in out:
        (save or _savefig)(fig, o)
    plt.close(fig)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m reports.plot path/to/elo_vs_nodes.csv", file=sys.stderr)
        sys.exit(2)
    for o in plot(sys.argv[1]) + plot_cost(sys.argv[1]):
        print(o)
