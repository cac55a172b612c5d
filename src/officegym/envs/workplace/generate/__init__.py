"""Synthetic worlds for the Workplace Assistant: a company generated from a seed and a size.

    from officegym.envs.workplace.generate import generate_world, write_world
    world = generate_world(7, size="reference")      # in memory, checked for consistency
    write_world(world, "worlds/seed7")                # csv_data layout + world.json
    env_world = world.to_world()                      # or load_world("worlds/seed7")

Modules: `names` (vocabularies), `world` (the generator: company, people, tasks, CRM, calendar,
analytics), `mail` (the mailbox), `checks` (consistency checks for any world), `writer` (files).

Decisions, where the reference leaves a choice:

* Sizes: "reference" has the reference's row counts (500 e-mails, 300 events, 1,000 visits,
  300 tasks, 200 customers, 20 employees), "large" ten times each (200 employees), "small" a tenth
  (8 employees). Teams: Back end, Front end and Design own the project tasks of their board; Sales
  owns the CRM. Every team member owns at least one task or customer.
* People: first.last@<company domain>. Up to reference size first names are unique and no first
  name is a substring of another address or of the domain, so the directory tool finds exactly one
  person by first name; in "large" names may repeat and clashing addresses get a digit
  (maya.silva2@...). The user (a seed-chosen first name such as "Robin", or `user=`) is greeted in
  mails, signs the outbox, and is found nowhere in the directory.
* "now": a seed-dependent weekday 2022..2026 at 23:59:00 unless given (see `world`).
* Formats follow the reference exactly: 8-digit ids from 00000000 (in shuffled order), sent times
  "YYYY-MM-DD HH:MM:SS", CRM dates "YYYY-MM-DD 23:59:00" (the reference quirk: a
  `*_max="YYYY-MM-DD"` CRM filter excludes that day), event starts on :00/:30 between 09:00 and
  15:30 on weekdays, durations "30"/"60"/"90"/"120", no overlaps, analytics as SPEC 2.4.
* E-mail bodies keep the reference's literal two-character "\\n" sequences instead of line breaks.
* Customers' addresses are well formed with a top-level domain (first.last@firm.com); the
  reference's have none ("first.last@firm"). Their companies are in world.json.
"""

from officegym.envs.workplace.generate.checks import (
    WorldCheckError,
    check_tables,
    check_world,
    find_problems,
    world_problems,
)
from officegym.envs.workplace.generate.default import default_world, default_world_path
from officegym.envs.workplace.generate.world import (
    SIZES,
    Company,
    Employee,
    GeneratedWorld,
    SizeSpec,
    generate_world,
)
from officegym.envs.workplace.generate.writer import world_files, write_world

__all__ = [
    "SIZES",
    "Company",
    "Employee",
    "GeneratedWorld",
    "SizeSpec",
    "WorldCheckError",
    "check_tables",
    "check_world",
    "default_world",
    "default_world_path",
    "find_problems",
    "generate_world",
    "world_files",
    "world_problems",
    "write_world",
]
