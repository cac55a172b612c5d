"""Vocabularies for generated worlds: people, companies, industries, meetings, task and note phrases.

Everything here is written for officegym (no list or phrase is taken from the reference data). Names
are plain ASCII so that they can become e-mail addresses as they are (lower-cased).
"""

from __future__ import annotations

from dataclasses import dataclass

# People: first and last names from many cultures. Employees and customers are drawn from the same
# pools (a customer's full name never equals an employee's).
FIRST_NAMES: tuple[str, ...] = (
    "Adaeze", "Ahmed", "Aiko", "Alejandro", "Amara", "Anders", "Anika", "Arjun", "Astrid", "Ayesha",
    "Beatriz", "Bilal", "Bogdan", "Camila", "Chidi", "Chioma", "Cyrus", "Dalia", "Dario", "Deepa",
    "Eamon", "Efua", "Elif", "Emeka", "Esther", "Farid", "Femi", "Freya", "Gabriel", "Giulia",
    "Gustavo", "Hana", "Hamza", "Hiroshi", "Ifeoma", "Ines", "Ingrid", "Irina", "Isaac", "Ivana",
    "Jamal", "Javier", "Jiho", "Joaquin", "Jonas", "Kavya", "Kemal", "Kenji", "Kwame", "Lars",
    "Layla", "Lorenzo", "Lucia", "Mateo", "Maya", "Meiling", "Mehmet", "Mirela", "Naledi", "Nikhil",
    "Noor", "Oksana", "Omar", "Oren", "Pablo", "Paulina", "Pedro", "Priya", "Quentin", "Rafael",
    "Rania", "Reza", "Rohan", "Rosa", "Rustam", "Sakura", "Selin", "Siddharth", "Sione", "Soren",
    "Sunita", "Tamar", "Tariq", "Teodora", "Thabo", "Tomas", "Valentina", "Vikram", "Wanjiru", "Xavier",
    "Ximena", "Yusuf", "Yara", "Zainab", "Zeynep", "Zoltan", "Bjorn", "Catalina", "Elena", "Fiona",
    "Goran", "Hugo", "Ilse", "Jasper", "Keanu", "Malik", "Orla", "Pilar", "Ravi", "Shira",
    "Tendai", "Vera", "Wren", "Yuna", "Zara", "Anton", "Bruna", "Dagny", "Emil", "Fatou",
    "Greta", "Hector", "Imani", "Jovan", "Kiran", "Lucas", "Marisol", "Nando", "Odette", "Petra",
    "Rashid", "Svetlana", "Tuan", "Ugo", "Vanya", "Wiremu", "Yosef", "Zuri", "Aurelio", "Benedikt",
)

LAST_NAMES: tuple[str, ...] = (
    "Adeyemi", "Alvarez", "Andersson", "Bakker", "Banerjee", "Bianchi", "Botha", "Brennan", "Cardoso",
    "Castillo", "Chowdhury", "Costa", "Dahl", "Delgado", "Demir", "Dimitrov", "Dubois", "Eze",
    "Ferreira", "Fischer", "Fujita", "Gallo", "Grant", "Haddad", "Hakimi", "Hansen", "Horvat",
    "Hughes", "Ibrahim", "Iyer", "Jensen", "Kamau", "Kang", "Kaplan", "Kapoor", "Karimi", "Kaur",
    "Keller", "Kowalski", "Kruger", "Laine", "Lindqvist", "Lopes", "Lund", "Mahlangu", "Marin",
    "Mbeki", "Mendes", "Moreno", "Murphy", "Nakamura", "Nascimento", "Ndlovu", "Nguyen", "Novak",
    "Obi", "Ochieng", "Okafor", "Oliveira", "Osei", "Park", "Pereira", "Popescu", "Quispe", "Rahman",
    "Reyes", "Rossi", "Saito", "Salazar", "Sandoval", "Sharma", "Silva", "Sokolova", "Suzuki",
    "Takahashi", "Torres", "Tran", "Vargas", "Varga", "Vasquez", "Volkov", "Wagner", "Walsh",
    "Watanabe", "Weber", "Wojcik", "Yamamoto", "Yilmaz", "Yoon", "Zhou", "Zulu", "Ahn", "Baptiste",
    "Cohen", "Eriksen", "Farouk", "Gomez", "Hossain", "Ito", "Jovanovic", "Koh", "Lim", "Mwangi",
    "Nair", "Oduya", "Petrov", "Qureshi", "Rao", "Thakur", "Udeh", "Valdez", "Wu", "Yadav",
    "Achterberg", "Bello", "Carvalho", "Duarte", "Elbaz", "Fontaine", "Gunawardena", "Halvorsen",
    "Ishikawa", "Jaramillo", "Kiplagat", "Lombardi", "Makoni", "Nordin", "Oyelaran", "Pham",
    "Ramdin", "Stavros", "Tembo", "Uysal", "Villanueva", "Whitfield", "Xiong", "Yeboah", "Zamora",
)

# The user whose mailbox and calendar the world is (greeted in mails, never in the directory).
USER_NAMES: tuple[str, ...] = (
    "Robin", "Alex", "Jordan", "Casey", "Morgan", "Riley", "Jamie", "Avery", "Drew", "Kit",
    "Charlie", "Dana", "Frankie", "Harper", "Rowan", "Sasha",
)

# Company names: a distinctive word plus an industry word ("Copperleaf Freight").
COMPANY_WORDS: tuple[str, ...] = (
    "Alder", "Amberline", "Bluecrest", "Brightwater", "Cedarpoint", "Cinder", "Clearpath", "Cobalt",
    "Copperleaf", "Driftwood", "Emberly", "Evergreen", "Fernhill", "Foxglove", "Granite", "Harborview",
    "Hollowbrook", "Ironbark", "Juniper", "Lakeshore", "Larkspur", "Lumen", "Meridian", "Moonstone",
    "Northgate", "Oakridge", "Pinecrest", "Quarry", "Redwood", "Riverstone", "Saltmarsh", "Silverline",
    "Skyward", "Stonebridge", "Sunpeak", "Tidewater", "Trailhead", "Upland", "Vantage", "Westfield",
    "Willowbrook", "Zephyr", "Bramble", "Crescent", "Dovetail", "Glasshouse", "Kindling", "Marigold",
)
COMPANY_TLDS: tuple[str, ...] = ("com", "com", "com", "io", "co", "net")

# Project code names (a company runs a handful of them at a time).
PROJECT_CODENAMES: tuple[str, ...] = (
    "Heron", "Bluebird", "Nimbus", "Polaris", "Sequoia", "Tundra", "Lighthouse", "Keystone", "Aurora",
    "Cascade", "Falcon", "Meadow", "Pioneer", "Quasar", "Summit", "Tidal", "Voyager", "Wildflower",
    "Zenith", "Ember", "Basalt", "Cormorant", "Driftwood", "Estuary", "Fjord", "Glacier", "Horizon",
    "Juniper", "Kingfisher", "Lagoon", "Monsoon", "Nebula", "Osprey", "Pelican", "Quartz", "Ridgeline",
    "Sandpiper", "Thistle", "Umbra", "Vesper", "Willow", "Yarrow",
)


@dataclass(frozen=True)
class Industry:
    """What a company does: its name words and the nouns its work is about."""

    key: str
    suffixes: tuple[str, ...]  # second word of the company name
    products: tuple[str, ...]  # what it sells (title case)
    services: tuple[str, ...]  # back-end components
    features: tuple[str, ...]  # front-end screens and widgets
    designs: tuple[str, ...]  # design deliverables
    topics: tuple[str, ...]  # what customers ask about
    metric: str  # what the business counts


INDUSTRIES: tuple[Industry, ...] = (
    Industry(
        "logistics", ("Freight", "Logistics", "Cargo"),
        ("Route Planner", "Fleet Tracker", "Dock Scheduler", "Customs Assistant", "Yard Manager",
         "Delivery Portal", "Load Board", "Pallet Scanner"),
        ("shipment API", "tracking service", "rate engine", "billing service", "carrier gateway",
         "notification queue", "label printer service", "geocoding worker"),
        ("shipment timeline", "driver sign-in screen", "rate calculator", "delivery map",
         "invoice page", "dispatch dashboard", "proof-of-delivery viewer", "route editor"),
        ("driver app icons", "onboarding flow", "tracking page layout", "warehouse signage",
         "dispatcher wireframes", "customer portal mockups"),
        ("cross-border shipments", "cold-chain tracking", "volume discounts", "pickup windows",
         "carrier onboarding", "delivery SLAs"),
        "shipments",
    ),
    Industry(
        "health", ("Health", "Care", "Clinics"),
        ("Patient Portal", "Appointment Booker", "Lab Results Viewer", "Telehealth Suite",
         "Clinic Dashboard", "Prescription Tracker", "Care Planner", "Triage Assistant"),
        ("scheduling service", "records API", "consent service", "billing engine", "HL7 bridge",
         "reminder worker", "identity service", "audit store"),
        ("appointment picker", "patient profile page", "results table", "video visit lobby",
         "intake form", "medication list", "clinic calendar view", "insurance card upload"),
        ("patient app icons", "intake form redesign", "waiting room screens", "accessibility audit",
         "clinician dashboard mockups", "brand refresh"),
        ("HIPAA questions", "integration with their EHR", "multi-clinic rollout", "patient reminders",
         "data migration", "pricing per seat"),
        "appointments",
    ),
    Industry(
        "finance", ("Capital", "Payments", "Ledger"),
        ("Expense Manager", "Invoice Hub", "Payroll Engine", "Card Controls", "Cash Forecaster",
         "Tax Assistant", "Treasury Console", "Spend Insights"),
        ("payments API", "ledger service", "fraud scorer", "reconciliation job", "FX rate feed",
         "statement generator", "KYC service", "webhook dispatcher"),
        ("transactions table", "card settings page", "budget chart", "invoice editor",
         "approval inbox", "payout schedule view", "receipt uploader", "account switcher"),
        ("card artwork", "checkout flow", "statement layout", "mobile app onboarding",
         "dashboard mockups", "icon library"),
        ("multi-currency support", "ERP integration", "approval workflows", "card limits",
         "audit reports", "volume pricing"),
        "transactions",
    ),
    Industry(
        "education", ("Learning", "Academy", "Classroom"),
        ("Course Builder", "Quiz Studio", "Gradebook", "Tutor Match", "Campus App",
         "Attendance Tracker", "Lesson Planner", "Reading Coach"),
        ("enrollment service", "grading API", "content store", "video transcoder", "SSO bridge",
         "progress tracker", "search indexer", "certificate generator"),
        ("course catalog page", "quiz player", "grade report", "lesson editor", "student dashboard",
         "discussion board", "assignment uploader", "progress ring widget"),
        ("course card design", "student app onboarding", "certificate template", "illustration set",
         "teacher dashboard mockups", "mascot sketches"),
        ("district licensing", "LMS integration", "teacher training", "student data privacy",
         "offline access", "semester pricing"),
        "enrollments",
    ),
    Industry(
        "energy", ("Energy", "Power", "Solar"),
        ("Grid Monitor", "Solar Planner", "Battery Manager", "Meter Reader", "Outage Map",
         "Tariff Optimizer", "EV Charging Hub", "Carbon Tracker"),
        ("telemetry ingest", "forecast service", "billing engine", "device registry", "alarm router",
         "tariff API", "maintenance scheduler", "data lake loader"),
        ("consumption chart", "site overview page", "alarm list", "panel layout editor",
         "charging session view", "savings calculator", "outage banner", "report builder"),
        ("installer app screens", "energy report layout", "site map icons", "onboarding wizard",
         "control room mockups", "marketing site refresh"),
        ("feed-in tariffs", "battery warranties", "fleet charging", "site surveys",
         "monitoring contracts", "grid connection"),
        "installations",
    ),
    Industry(
        "retail", ("Market", "Commerce", "Goods"),
        ("Storefront Builder", "Inventory Sync", "Loyalty Program", "Returns Desk", "Price Watch",
         "Point of Sale", "Gift Card Hub", "Order Router"),
        ("catalog service", "checkout API", "inventory worker", "promotion engine", "order service",
         "search service", "recommendation model", "tax calculator"),
        ("product detail page", "cart drawer", "checkout form", "order history page",
         "wishlist", "store locator", "promo banner", "size guide"),
        ("holiday campaign visuals", "product photo guidelines", "loyalty card design",
         "packaging concepts", "storefront mockups", "email newsletter template"),
        ("multi-store setup", "marketplace integration", "returns policy", "seasonal pricing",
         "loyalty tiers", "POS hardware"),
        "orders",
    ),
    Industry(
        "travel", ("Travel", "Journeys", "Stays"),
        ("Booking Engine", "Itinerary Builder", "Channel Manager", "Guest App", "Fare Alerts",
         "Group Travel Desk", "Rate Shopper", "Concierge Chat"),
        ("availability service", "fare cache", "booking API", "payment gateway", "review importer",
         "loyalty ledger", "pricing model", "partner sync"),
        ("search results page", "room picker", "itinerary view", "booking summary", "map filter",
         "guest profile page", "date range picker", "review carousel"),
        ("destination guide layout", "mobile check-in flow", "brand photography brief",
         "booking confirmation email", "partner portal mockups", "icon refresh"),
        ("corporate travel policies", "group bookings", "channel integrations", "commission rates",
         "seasonal availability", "loyalty partnerships"),
        "bookings",
    ),
    Industry(
        "agritech", ("Farms", "Agro", "Harvest"),
        ("Field Mapper", "Irrigation Control", "Yield Forecaster", "Herd Tracker", "Crop Planner",
         "Soil Sensor Kit", "Harvest Scheduler", "Grain Ledger"),
        ("sensor ingest", "weather feed", "yield model", "device registry", "map tile server",
         "alerting service", "field sync worker", "lab results API"),
        ("field map view", "moisture chart", "herd list", "planting calendar", "alert center",
         "harvest report page", "equipment panel", "season selector"),
        ("field app icons", "sensor packaging", "dashboard mockups", "trade show booth",
         "farmer onboarding flow", "report cover design"),
        ("sensor coverage", "co-op pricing", "offline field use", "equipment integration",
         "seasonal contracts", "agronomist support"),
        "acres monitored",
    ),
    Industry(
        "media", ("Media", "Studios", "Broadcast"),
        ("Stream Player", "Podcast Studio", "Ad Manager", "Clip Editor", "Audience Insights",
         "Rights Tracker", "Live Console", "Subtitle Desk"),
        ("transcoding pipeline", "CDN config service", "ad decision server", "metadata API",
         "recommendation service", "rights database", "analytics collector", "upload service"),
        ("video player controls", "episode list", "creator dashboard", "comment panel",
         "subscription page", "clip timeline", "search bar", "watch history page"),
        ("channel artwork", "player skin", "podcast cover templates", "creator onboarding flow",
         "ad format mockups", "motion graphics kit"),
        ("ad inventory", "licensing terms", "live event coverage", "audience reports",
         "white-label players", "subtitle languages"),
        "streams",
    ),
    Industry(
        "security", ("Security", "Shield", "Defense"),
        ("Threat Radar", "Access Gate", "Vault Manager", "Phish Guard", "Patch Pilot",
         "Incident Desk", "Device Shield", "Compliance Tracker"),
        ("detection engine", "policy service", "log pipeline", "secrets vault", "scanner fleet",
         "identity broker", "alert correlator", "report generator"),
        ("alert queue", "device inventory page", "policy editor", "risk score widget",
         "incident timeline", "user access review", "audit log viewer", "onboarding checklist"),
        ("security report layout", "console dark theme", "awareness training visuals",
         "incident playbook design", "admin console mockups", "logo lockups"),
        ("SOC 2 evidence", "SSO rollout", "endpoint coverage", "incident response retainer",
         "phishing simulations", "license renewals"),
        "protected devices",
    ),
)

# Customers' companies (their e-mail domains are built from these).
CUSTOMER_COMPANY_WORDS: tuple[str, ...] = (
    "Apex", "Birchwood", "Brookline", "Canopy", "Castle", "Clover", "Corner", "Crane", "Delta",
    "Elm", "Everline", "Fable", "Flint", "Garnet", "Glenmore", "Harbor", "Hilltop", "Indigo",
    "Jasper", "Keel", "Kite", "Lantern", "Lattice", "Linden", "Magnolia", "Maple", "Mosaic",
    "Nettle", "Nova", "Orchard", "Otter", "Paragon", "Pebble", "Prairie", "Quill", "Raven",
    "Rook", "Sable", "Sparrow", "Spruce", "Strata", "Terra", "Thimble", "Topaz", "Trellis",
    "Umber", "Valley", "Verdant", "Walnut", "Wharf", "Yardley", "Zinnia",
)
CUSTOMER_COMPANY_SUFFIXES: tuple[str, ...] = (
    "Group", "Partners", "Industries", "Works", "Holdings", "Trading", "Supply", "Co", "Collective",
    "Ventures", "Outfitters", "Brands", "Services", "Studio", "Foods", "Clinic", "Academy", "Motors",
)
CUSTOMER_TLDS: tuple[str, ...] = ("com", "com", "com", "net", "org", "co", "io", "biz")

# CRM note phrases: entries are "YYYY-MM-DD: <phrase> " (date-prefixed, as in the reference layout).
CRM_NOTES: tuple[str, ...] = (
    "Sent pricing sheet.", "Left a voicemail.", "Asked for references.", "Requested a trial.",
    "Shared the contract draft.", "Joined our webinar.", "Visited our booth.", "Wants a discount.",
    "Intro call with procurement.", "Trial extended.", "Waiting on legal review.", "Budget approved.",
)

# Meetings (one participant each, besides the user). Placeholders: {project}, {product}, {first}.
MEETINGS_FORMAL: tuple[str, ...] = (
    "{project} kickoff", "{project} status review", "{project} retrospective", "{product} roadmap planning",
    "{product} launch readiness", "{product} pricing discussion", "Quarterly business review",
    "Budget checkpoint", "Architecture review board", "Hiring panel debrief", "Vendor evaluation",
    "Risk register review", "Customer escalation review", "OKR check-in", "Release go/no-go",
    "Security posture review", "Capacity planning", "Board deck prep",
)
MEETINGS_INFORMAL: tuple[str, ...] = (
    "1:1 with {first}", "coffee with {first}", "quick catch-up", "pairing session", "whiteboard session",
    "lunch and learn", "walk and talk", "brainstorm on {project}", "demo dry run", "office hours",
    "mentoring chat", "feedback session",
)
MEETINGS_BY_TEAM: dict[str, tuple[str, ...]] = {
    "Back end": ("API design review", "incident postmortem", "database migration planning", "on-call handover"),
    "Front end": ("UI polish review", "accessibility walkthrough", "component library sync", "browser support triage"),
    "Design": ("design critique", "usability findings readout", "brand guidelines review", "prototype walkthrough"),
    "Sales": ("pipeline review", "deal desk", "forecast call", "{product} sales training"),
}

# Project-management task names per board. Placeholders: {service}, {feature}, {design}, {product}, {project}.
TASKS_BY_BOARD: dict[str, tuple[str, ...]] = {
    "Back end": (
        "Add caching to the {service}", "Write integration tests for the {service}",
        "Migrate the {service} to the new database", "Reduce latency of the {service}",
        "Add audit logging to the {service}", "Set up alerts for the {service}",
        "Fix timeouts in the {service}", "Document the {service} endpoints",
        "Add rate limiting to the {service}", "Upgrade dependencies of the {service}",
        "Prepare the {service} for {project}", "Load test the {service}",
    ),
    "Front end": (
        "Build the {feature} for {product}", "Make the {feature} responsive", "Fix layout glitch in the {feature}",
        "Add dark mode to the {feature}", "Improve accessibility of the {feature}",
        "Add loading states to the {feature}", "Localize the {feature}", "Write UI tests for the {feature}",
        "Speed up rendering of the {feature}", "Ship the {feature} for {project}",
    ),
    "Design": (
        "Draft {design} for {product}", "Refresh the {design}", "Run usability test on the {design}",
        "Create icon set for {product}", "Prepare style guide for {project}",
        "Review {design} with stakeholders", "Design empty states for the {feature}",
        "Update color palette for {product}", "Sketch concepts for {project}",
    ),
}

TEAMS: tuple[str, ...] = ("Back end", "Front end", "Design", "Sales")
