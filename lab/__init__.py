"""The CPU lab: the experiments that produced the project's recorded figures, outside the installed kit.

SmolLM2-135M-Instruct (:mod:`lab.smollm2`, its report :mod:`lab.smollm2_report`), the regime map
(:mod:`lab.regimes`), open-ended naming on a tiny model (:mod:`lab.open_ended`) and accuracy with diversity
(:mod:`lab.accuracy`), all on the demo's staged runner (:mod:`gapo_lite.demo.stages`). Run one from the
repository's root with ``python -m lab.<name> --out runs/<name>``. The lab imports the kit; the kit never
imports the lab (tests/test_import_graph.py). Its history: ``lab/LOG.md``.
"""
