"""officegym: train tool-using LLM agents with verifiable rewards."""

__version__ = "0.1.0"
