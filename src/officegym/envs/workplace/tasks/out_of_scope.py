"""Requests no Workplace tool can serve: the right answer is a reply in words and no call at all.

An agent that only ever sees tasks its tools can do learns to call a tool whatever it is asked
(the quickstart's model then called one on 24 of 25 of BFCL's irrelevance prompts). These templates
ask for things outside the office tools (weather, travel, phone calls, payments, small talk), one
template per domain so each tool prompt the agent trains on carries some. The ground truth is empty
and the plan's `reply` is what a demonstration answers; the verifier sees an unchanged state.
"""

from __future__ import annotations

import random

from officegym.envs.workplace.tasks.base import DOMAINS, Plan, pick, template
from officegym.envs.workplace.tasks.view import WorldView

PHRASINGS = (
    "What will the weather be like in {city} {day}?",
    "Book me a flight to {city} for {day}.",
    "Call {first} on the phone and tell them I'm running late.",
    "Order {n} pizzas for the team lunch {day}.",
    "Translate 'see you at the offsite' into {language}.",
    "Renew my parking permit for next month.",
    "Print the quarterly report on the third-floor printer.",
    "Get me a taxi to the airport {day} at {hour}.",
    "Reserve a table for {n} at an Italian restaurant near the office {day}.",
    "Turn the meeting room thermostat up by {n} degrees.",
    "Buy {n} shares of our company's stock for me.",
    "Tell me a joke about spreadsheets.",
    "Play some focus music while I work.",
    "Pay the hotel invoice from my {city} trip with the company card.",
    "Who won the football match in {city} last night?",
    "Water the plants on my desk {day}.",
)
REPLIES = (
    "I can't do that: none of the tools I have can.",
    "Sorry, that is outside what my tools can do.",
    "None of the tools available to me can help with that.",
    "I'm not able to do that with the tools I have.",
)
CITIES = ("Lisbon", "Chicago", "Osaka", "Nairobi", "Toronto", "Berlin", "Lima", "Sydney", "Madrid", "Seoul")
DAYS = ("tomorrow", "today", "on Friday", "next Monday", "this weekend", "on Thursday")
LANGUAGES = ("French", "Japanese", "Spanish", "German", "Portuguese", "Korean")
HOURS = ("7am", "8:30", "noon", "3pm", "6:15 pm")


def _plan(w: WorldView, r: random.Random) -> Plan:
    slots = {"city": r.choice(CITIES), "day": r.choice(DAYS), "first": pick(r, sorted(w.people.values())),
             "n": r.randint(2, 12), "language": r.choice(LANGUAGES), "hour": r.choice(HOURS)}
    return Plan(slots, [], reply=r.choice(REPLIES))


for _domain in DOMAINS:
    template(f"{_domain}.out_of_scope", _domain, PHRASINGS)(_plan)
