"""`accelerate launch --num_processes 2` on CPU (gloo): groups split across processes get single-process rewards."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gapo_lite.rewards import GroupReward


@pytest.mark.slow  # two accelerate processes training: ~20 s on an idle 2-core machine, much more under load
@pytest.mark.skipif(shutil.which("accelerate") is None and not (Path(sys.executable).parent / "accelerate").exists(), reason="accelerate CLI missing")
def test_two_process_training_rewards_match_one_process(small_vocab_model, tmp_path):
    path, _ = small_vocab_model
    launcher = str(Path(sys.executable).parent / "accelerate")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # with no CUDA, --multi_gpu launches 2 CPU processes on gloo
    cmd = [launcher, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
           str(Path(__file__).parent / "mp_train.py"), str(path), str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    ranks = [[json.loads(line) for line in (tmp_path / f"rank{r}.jsonl").read_text().splitlines()] for r in (0, 1)]
    assert len(ranks[0]) == len(ranks[1]) == 3  # one call per step on each rank
    split_seen = False
    for call0, call1 in zip(*ranks):
        assert len(call0["rewards"]) == len(call1["rewards"]) == 3  # per-process slice of a 6-row generation batch
        ids = call0["prompt_id"] + call1["prompt_id"]
        split_seen |= call0["prompt_id"][-1] == call1["prompt_id"][0]
        single = GroupReward(num_generations=2)(
            prompts=[[{"role": "user", "content": i}] for i in ids], completions=call0["completions"] + call1["completions"],
            prompt_id=ids, items=call0["items"] + call1["items"],
        )
        assert call0["rewards"] + call1["rewards"] == pytest.approx(single)
    assert split_seen, "no group was split across the two processes; the test would not exercise the gather"
