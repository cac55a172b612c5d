"""Synthetic data generation: candidates from templates, validated by replay, deduplicated,
scored for difficulty, split and written as NeMo Gym rows with a dataset card."""
