"""The main job, ``gapo-lite demo`` (``make demo``): the miniature GAPO reproduction on the CPU.

:mod:`~gapo_lite.demo.run` is the job itself; it builds a tiny word-level model (:mod:`~gapo_lite.demo.tiny`),
pretrains it into the collapsed regime (:mod:`~gapo_lite.demo.pretrain` on the loops of
:mod:`~gapo_lite.demo.supervised`), then runs GAPO and the baseline from that start through the staged runner
(:mod:`~gapo_lite.demo.stages`: each stage recorded the moment it ends, so a stopped run resumes). The settings'
parts, measurement and RL config are in :mod:`~gapo_lite.demo.parts`; the plots in :mod:`~gapo_lite.demo.plots`.
The CPU lab (``lab/`` at the top of the repository) builds its experiments on these parts; the kit never imports it.
"""
