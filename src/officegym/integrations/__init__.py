"""officegym run by other engines' own launchers.

`nemo_gym`: a NeMo Gym resources server (entrypoint, requirements and config) that NeMo Gym's
`gym env start` / `ng_run` starts by name. These modules sit on top of `server/`: nothing below
imports them.
"""
