"""Agent rollouts: the loop, tool-call formats and policy backends."""
