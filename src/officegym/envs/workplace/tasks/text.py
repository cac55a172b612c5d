"""Words the templates put in queries: message texts, meeting names, plot and metric names."""

from __future__ import annotations

REPLIES = (
    "Thanks for the update - I will get back to you tomorrow.",
    "Got it, thanks!",
    "Thanks, let's discuss this at our next meeting.",
    "Sounds good to me.",
    "Thank you, I'll take a look this week.",
    "Noted. Please keep me posted.",
    "Great work, thanks for letting me know.",
    "Can we talk about this on a call?",
)

SUBJECTS = (
    "Quick question", "Project update", "Next steps", "Team offsite", "Budget review", "Planning for next quarter",
    "Customer feedback", "Weekly summary", "Hiring update", "Release checklist", "Security review", "Roadmap",
)

BODIES = (
    "Can we find time to go over this next week?",
    "Please send me your latest numbers by Friday.",
    "Thanks for all your help on this.",
    "Let me know if anything is blocking you.",
    "I have shared the document with you; comments welcome.",
    "Could you give me a short status update?",
    "Please review the attached plan before our meeting.",
    "Looking forward to catching up.",
)

MEETINGS = (
    "Project sync", "Design review", "Budget planning", "1:1", "Roadmap review", "Sprint planning", "Retrospective",
    "Customer call prep", "Hiring debrief", "Quarterly planning", "Coffee chat", "Status check-in", "Demo rehearsal",
)

NEW_EVENT_NAMES = (
    "Risk Management Forum", "Strategy session", "Product review", "Team lunch", "Planning workshop",
    "Architecture review", "Launch readiness", "Training session", "Vendor call", "Performance review",
)

TASK_VERBS = ("Write tests for", "Document", "Refactor", "Review", "Plan the launch of", "Audit", "Prototype",
              "Benchmark", "Clean up", "Update the roadmap for")
TASK_OBJECTS = ("the onboarding flow", "the billing page", "the search service", "the mobile app", "the admin dashboard",
                "the reporting pipeline", "the notification service", "the login page", "the data export",
                "the settings screen", "the help center", "the analytics widget")

FIRST_NAMES = ("Avery", "Blake", "Casey", "Devon", "Emery", "Finley", "Harper", "Jordan", "Kendall", "Logan",
               "Morgan", "Parker", "Quinn", "Reese", "Rowan", "Sawyer", "Skyler", "Taylor")
LAST_NAMES = ("Abbott", "Barnes", "Calloway", "Dawson", "Ellison", "Fairbanks", "Garrison", "Hale", "Iverson",
              "Jennings", "Kingsley", "Lambert", "Maddox", "Norwood", "Osborne", "Prescott")
FIRMS = ("brightpath", "northwind", "cobaltworks", "meridianlabs", "pinecrest", "silverline", "tidewater", "oakridge")

METRICS = {
    "total_visits": ("total visits", "the total number of visits", "overall visits"),
    "session_duration_seconds": ("session duration", "session durations", "how long sessions last"),
    "user_engaged": ("engaged users", "user engagement", "the number of engaged users"),
    "visits_direct": ("direct visits", "visits from direct traffic", "direct traffic"),
    "visits_referral": ("referral visits", "visits from referrals", "referral traffic"),
    "visits_search_engine": ("search engine visits", "visits from search engines", "search traffic"),
    "visits_social_media": ("social media visits", "visits from social media", "social media traffic"),
}
SOURCES = {
    "direct": "visits_direct", "referral": "visits_referral", "search engine": "visits_search_engine",
    "social media": "visits_social_media",
}
PLOTS = {
    "bar": ("bar chart", "bar graph", "bar plot"),
    "line": ("line chart", "line graph", "line plot"),
    "scatter": ("scatter plot", "scatter chart", "scatter graph"),
    "histogram": ("histogram", "histogram", "histogram chart"),
}
STATUSES = ("Qualified", "Won", "Lost", "Lead", "Proposal")
PRODUCTS = ("Software", "Hardware", "Services", "Consulting", "Training")
LISTS = ("Backlog", "In Progress", "In Review", "Completed")
