"""Evaluation: run policies over tasks, compute metrics, write reports."""
