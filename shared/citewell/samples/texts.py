"""Text of the sample documents. Everything here is fictional."""

NORTHPIER_HANDBOOK = """\
# Northpier Staff Handbook

Northpier Logistics runs container terminals in three ports. This handbook applies to every
employee on a permanent or fixed-term contract.

## Annual leave

Full-time staff receive 27 days of paid annual leave per calendar year, plus public holidays.
Part-time staff receive leave pro rata to their contracted hours.

Leave requests go through the rota tool at least ten working days in advance. Requests during
the peak season (15 November to 10 January) need the approval of the terminal manager.

### Carry-over

Up to 5 unused days may be carried into the next year. Carried days expire on 31 March.
Days above the limit are lost unless the terminal manager approved the carry-over in writing.

## Sick leave

Report sickness to your shift lead before the start of your shift. From the fourth day of
absence a doctor's note is required.

## Working hours

Terminal shifts are eight hours with a paid thirty-minute break. Office staff work 37.5 hours
a week with core hours from 10:00 to 15:00.
"""

BLUEFEN_HANDBOOK = """\
# Bluefen Clinic Employee Guide

Bluefen Clinic is an outpatient physiotherapy practice with two sites.

## Annual leave

Clinical and administrative staff receive 22 days of paid annual leave per year. Leave is
booked through the practice manager and must not leave a site without a senior
physiotherapist on duty.

## Continuing education

Each clinician has an annual education budget of 900 euros and three study days.
"""

RUNBOOK_HTML = """\
<!DOCTYPE html>
<html lang="en">
<head><title>Crane Control Incident Runbook</title>
<style>body { font-family: sans-serif; }</style>
<script>window.analytics = { track: function () {} };</script>
</head>
<body>
<header><a href="/">Northpier Engineering Wiki</a></header>
<nav><ul><li><a href="/runbooks">Runbooks</a></li><li><a href="/oncall">On-call</a></li></ul></nav>
<main>
<h1>Crane Control Incident Runbook</h1>
<p>This runbook covers outages of the crane control service (CCS), which schedules every
quay crane move in the terminal.</p>
<h2>Severity levels</h2>
<table>
<tr><th>Severity</th><th>Definition</th><th>Response time</th></tr>
<tr><td>SEV1</td><td>All cranes at a terminal stopped</td><td>15 minutes</td></tr>
<tr><td>SEV2</td><td>One crane stopped or moves delayed over 10 minutes</td><td>1 hour</td></tr>
</table>
<h2>First response</h2>
<ol>
<li>Acknowledge the page in the on-call tool.</li>
<li>Open the incident channel and post the affected terminal and crane numbers.</li>
<li>Check the CCS health dashboard for queue depth and controller heartbeats.</li>
</ol>
<h2>Restarting a controller</h2>
<p>A controller that misses three heartbeats is fenced automatically. Restart it with
<code>ccsctl restart --crane N</code> only after the crane operator confirms the spreader is
parked. Never restart two controllers of the same quay at once.</p>
<pre>ccsctl status --quay 4
ccsctl restart --crane 17</pre>
</main>
<footer>Copyright Northpier Logistics. Internal use only.</footer>
</body>
</html>
"""

ERROR_CODES_CSV = """\
code,component,meaning,operator action
E1027,spreader,Twistlock sensor disagrees with lock command,Stop the move and inspect the twistlock sensor
E1043,hoist,Hoist motor over temperature,Let the motor cool for 20 minutes before resuming
E2001,gantry,Wind speed above the operating limit,Park the crane and secure it with storm pins
E2210,controller,Heartbeat lost between crane and CCS,Follow the controller restart procedure in the runbook
"""

TRAVEL_POLICY_PAGES = [
    (
        "Travel and Expenses Policy",
        [
            "Business travel must be approved by your line manager before booking. Book trains for "
            "journeys under four hours; flights need the approval of a director.",
            "Hotel costs are reimbursed up to 140 euros per night in port cities and 110 euros "
            "elsewhere, breakfast included.",
        ],
    ),
    (
        "Meals and daily allowance",
        [
            "The daily meal allowance is 45 euros for a full travel day and 20 euros for a half day. "
            "Alcohol is never reimbursed.",
            "Submit receipts in the expenses tool within 30 days of returning.",
        ],
    ),
]

ONBOARDING_SECTIONS = [
    ("Your first week", [
        "On your first day, report to the reception of the terminal office at 09:00. Your buddy "
        "shows you the site safety walk, which everyone completes before entering the quay area.",
    ]),
    ("Equipment", [
        "You receive safety boots, a high-visibility jacket and a helmet on day one. Office staff "
        "receive a laptop; terminal staff receive a handheld terminal.",
    ]),
    ("Accounts", [
        "Your account for the rota tool, email and the expenses tool is created before you start. "
        "Enrol a second factor on your phone during the first login.",
    ]),
]

SALARY_BANDS = [
    ("level", "title", "minimum (EUR)", "maximum (EUR)"),
    ("L1", "Terminal operative", 32000, 38000),
    ("L2", "Senior operative", 37000, 45000),
    ("L3", "Shift lead", 44000, 54000),
    ("L4", "Terminal manager", 58000, 72000),
]

REVIEW_CALENDAR = [
    ("cycle", "self review due", "calibration", "letters sent"),
    ("Spring 2026", "2026-03-13", "2026-03-27", "2026-04-10"),
    ("Autumn 2026", "2026-09-18", "2026-10-02", "2026-10-16"),
]

# A memo that exists only as a scan (an image of the page, no text layer): OCR reads it.
# Lines as printed; an empty line is a paragraph gap.
SCANNED_MEMO = [
    "Harbour notice: winter gate hours",
    "",
    "From the first of November the east gate closes",
    "at ten in the evening and opens at six in the morning.",
    "",
    "Night shift staff enter through the south gate,",
    "where the security desk is staffed around the clock.",
    "",
    "Contractors sign in at the south gate after dark.",
]
