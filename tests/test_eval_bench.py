"""Bench wiring: planning (limits, skips with the real error message) against lm-eval's TaskManager."""
import pytest

pytest.importorskip("lm_eval")

from gapo_lite.eval import bench  # noqa: E402


class _NoHub:
    def load(self, names):
        raise ConnectionError(f"Couldn't reach 'openai/{names[0]}' on the Hub (LocalEntryNotFoundError)")


def test_unreachable_data_is_skipped_with_its_message():
    (item,) = bench.plan(["gsm8k"], manager=_NoHub())
    assert item.status == "skipped"
    assert item.task == "gsm8k"
    assert item.reason == "could not load 'gsm8k': ConnectionError: Couldn't reach 'openai/gsm8k' on the Hub (LocalEntryNotFoundError)"


def test_benchmark_names_map_to_lm_eval_tasks():
    assert bench.resolve(["gsm8k", "math", "humaneval", "mmlu_pro", "arc_easy"]) == [
        ("gsm8k", "gsm8k"), ("math", "minerva_math500"), ("humaneval", "humaneval"), ("mmlu_pro", "mmlu_pro"), ("arc_easy", "arc_easy"),
    ]
    with pytest.raises(ValueError):
        bench.resolve([])
    with pytest.raises(ValueError, match="limit"):
        bench.plan(["gsm8k"], limit=0, manager=_NoHub())


@pytest.fixture(scope="module")
def manager():
    return bench.task_manager()


@pytest.mark.slow  # indexing lm-eval's few thousand task files takes ~16 s
def test_plan_local_tasks_and_skips(manager, monkeypatch):
    import datasets.config
    import huggingface_hub.constants

    # Simulate a machine without hub access, whatever this one has.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    items = {i.key: i for i in bench.plan(["gapo_pick_mc", "gapo_pick_group", "humaneval", "gsm8k", "no_such_task"], limit=5, manager=manager)}
    assert items["gapo_pick_mc"].status == "ready" and items["gapo_pick_mc"].limit_per_task == 5
    group = items["gapo_pick_group"]
    assert group.status == "ready"
    assert group.subtasks == ["gapo_pick_mc", "gapo_pick_mc_b"]
    assert group.limit_per_task == 3  # ceil(5 / 2 subtasks)
    assert items["humaneval"].status == "skipped" and "--allow-code-exec" in items["humaneval"].reason
    assert items["gsm8k"].status == "skipped"
    assert "openai/gsm8k" in items["gsm8k"].reason and "ConnectionError" in items["gsm8k"].reason
    assert items["no_such_task"].status == "skipped" and "not a registered task" in items["no_such_task"].reason


def test_humaneval_is_whole_when_allowed():
    # Loading HumanEval needs its data; only the limit rule is checked here, through a stand-in manager.
    class _Loads:
        def load(self, names):
            return {"tasks": {names[0]: object()}}

    (item,) = bench.plan(["humaneval"], limit=200, allow_code_exec=True, manager=_Loads())
    assert item.status == "ready" and item.limit_per_task is None
    (item,) = bench.plan(["gsm8k"], limit=200, manager=_Loads())
    assert item.limit_per_task == 200


def test_local_only_manager_when_every_task_is_local():
    local = bench.task_manager(names=["gapo_pick_mc", "gapo_pick_group"])
    assert "gapo_pick_mc_b" in local.all_tasks and "gsm8k" not in local.all_tasks
