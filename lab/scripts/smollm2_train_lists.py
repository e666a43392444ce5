"""Do SmolLM2's list runs spread the categories they trained on? The lists suite on TRAINING categories.

The lab's held-out lists measure transfer to categories RL never saw; this measures the same models, with the
same protocol (each folder's recorded settings: 10 lists of 8 items, 100 samples at T = 0.7, the clean rule), on lists drawn
from the training categories, to tell a run that spreads nothing from one that spreads only what it trained on.

    python lab/scripts/smollm2_train_lists.py runs/lenient_s0 runs/g64_s0 runs/p1_s0 --threads 1 --out docs/results/x.json

Each folder is an experiment folder of `python -m lab.smollm2`; the first one's start (pretrained/)
is measured once, then every finished RL run of every folder (the adapter on that folder's start).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def measure(model, tokenizer, folder: Path) -> dict:
    """JSD and valid rate on training-category lists, by the protocol ``folder``'s experiment measured with."""
    from lab.smollm2 import lists_suite, recorded_settings

    r = lists_suite(model, tokenizer, recorded_settings(folder), split="train")
    return {"train_jsd": r["mean_jsd"], "train_valid_rate": r["mean_valid_rate"]}


def format_rows(rows: list[dict]) -> str:
    """The table the script prints (and docs/smollm2.md quotes)."""
    lines = ["| model | training-category JSD | training-category valid |", "|---|---|---|"]
    return "\n".join(lines + [f"| {r['model']} | {r['train_jsd']:.3f} | {r['train_valid_rate']:.3f} |" for r in rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, help="write the rows here (JSON)")
    args = parser.parse_args(argv)
    missing = [str(f) for f in args.folders if not (f / "pretrained").is_dir() or not (f / "stages" / "settings.json").is_file()]
    if missing:
        parser.error(f"not an experiment folder with a start (pretrained/ and stages/settings.json): {', '.join(missing)}")
    import torch

    from gapo_lite.demo.stages import load_trained
    from gapo_lite.models import load_model
    from lab.smollm2 import REWARDS

    torch.set_num_threads(args.threads)
    model, tokenizer = load_model(args.folders[0] / "pretrained", lora=None)
    rows = [{"model": f"{args.folders[0].name}: start", **measure(model, tokenizer, args.folders[0])}]
    for folder in args.folders:
        for run in REWARDS:  # the lab's RL runs
            adapter = folder / run / "adapter"
            if (adapter / "adapter_config.json").is_file():
                model, tokenizer = load_trained(adapter, folder / "pretrained")
                rows.append({"model": f"{folder.name}/{run}", **measure(model, tokenizer, folder)})
    print(format_rows(rows))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
        print("wrote", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
