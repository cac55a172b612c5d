"""`python -m officegym.train sft|grpo ...`: the entry point torchrun starts on every rank
(`torchrun --nproc_per_node 2 -m officegym.train grpo --config C.yaml`)."""

from officegym.train.cli import train_app

train_app(prog_name="officegym train")
