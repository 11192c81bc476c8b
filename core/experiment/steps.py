"""The replication's steps and models, by name: what the runner sequences
(core/experiment/replicate.py) and what its report walks (core/experiment/report.py)."""

STEPS = ("setup", "data", "train", "eval-base", "eval-fixed", "eval-hat", "eval-stages", "report")
MODELS = ("base", "fixed", "hat")
EVAL_PARTS = ("hv-qa", "ifeval", "ls-qa", "edit")
HAT_STAGES = ("sft", "opd")
"""HAT's kept stage adapters the `eval-stages` step evaluates (after RL is the HAT model)."""
