"""Model cards from a training run: ``python -m experiments.training.modelcard RUN_DIR CARD.md [--notes FILE]``.

The card is filled from what the run recorded, never typed by hand: ``RUN_DIR/model.pt`` (family,
configuration, metadata: data, positions, recipe, training time, validation metrics of the shipped
epoch, its number and selection score),
``RUN_DIR/metrics.csv`` (one row per epoch or phase) and ``RUN_DIR/command.txt`` (the command that
was run, when present).  ``--notes`` adds a hand-written section (how the data was generated, caveats).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys

import torch
from experiments.paths import write_atomic


def render(run_dir: str, notes: str = "") -> str:
    d = torch.load(os.path.join(run_dir, "model.pt"), map_location="cpu", weights_only=True)
    meta = dict(d.get("meta", {}))
    params = sum(int(v.numel()) for k, v in d["state_dict"].items() if not k.endswith(("running_mean", "running_var", "num_batches_tracked")))
    dtype = {str(v.dtype) for v in d["state_dict"].values() if v.is_floating_point()}
    lines = [f"# {d['family']} ({meta.get('variant', d.get('variant'))}, size {meta.get('size', '?')})", ""]
    lines += ["## Network", "", f"- family `{d['family']}`, configuration `{json.dumps(d['config'])}`",
              f"- {params:,} trainable parameters, stored as {', '.join(sorted(dtype))}", ""]
    lines += ["## Data", "", f"- data: {', '.join(meta.get('data', []))} ({meta.get('games', '?')} games)",
              f"- training positions: {meta.get('train_positions', '?')}, validation positions: "
              f"{int(meta.get('val_positions', 0))}"
              + (f", selection positions: {int(meta['sel_positions'])}" if "sel_positions" in meta else "")
              + " (split by game)"]
    if "positions" in meta:
        lines.append(f"- positions in the data: {int(meta['positions'])}")
    lines.append("")
    cmd_path = os.path.join(run_dir, "command.txt")
    if os.path.exists(cmd_path):
        with open(cmd_path) as f:
            lines += ["## Command", "", "```", f.read().strip(), "```", ""]
    lines += ["## Training", "", f"- recipe: `{json.dumps(meta.get('recipe', {}))}`",
              f"- training time: {meta.get('training_seconds', '?')} s of wall time", ""]
    keys = [k for k in ("val_policy_acc", "val_value_sign_acc", "val_pair_acc", "mate1_top1", "mate1_top5",
                        "mate1_positions", "val_policy_loss", "val_value_loss", "best_epoch", "sel_policy_acc",
                        "sel_pair_acc") if k in meta]
    if keys:
        title = ("## Validation metrics (shipped model: the best epoch on the selection games)" if "best_epoch" in meta
                 else "## Validation metrics (final model)")
        lines += [title, "", "| metric | value |", "|---|---|"]
        lines += [f"| {k} | {meta[k]:.4f} |" if isinstance(meta[k], float) and k != "mate1_positions"
                  else f"| {k} | {meta[k]} |" for k in keys]
        lines.append("")
    mpath = os.path.join(run_dir, "metrics.csv")
    if os.path.exists(mpath):
        with open(mpath) as f:
            rows = list(csv.reader(f))
        if rows:
            lines += ["## Per-epoch metrics (metrics.csv)", "", "| " + " | ".join(rows[0]) + " |",
                      "|" + "---|" * len(rows[0])]
            lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
            lines.append("")
    if notes:
        lines += ["## Notes", "", notes.strip(), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.training.modelcard", description=__doc__)
    p.add_argument("run_dir")
    p.add_argument("card")
    p.add_argument("--notes", default=None, help="a Markdown file with the hand-written notes")
    a = p.parse_args(argv)
    notes = ""
    if a.notes:
        with open(a.notes) as f:
            notes = f.read()
    try:
        text = render(a.run_dir, notes)
    except (OSError, KeyError, RuntimeError) as e:
        print(f"modelcard: error: {e}", file=sys.stderr)
        return 2

    write_atomic(a.card, text, "model card")
    return 0


if __name__ == "__main__":
    sys.exit(main())
