"""Text of the answer-set corpus. Everything here is fictional.

Two organisations, two tenants:

- ``kestrelvale``: Kestrel Vale Water, a regional water utility (roles: staff, operations,
  support, hr, finance).
- ``orrisfield``: Orrisfield Software, maker of the Tallyforge invoicing platform (roles:
  staff, support, engineering, hr, finance).

The people, places, codes and figures are invented. Some facts are deliberately close
across the two tenants (both have a leave policy, both keep audit logs, both have a
directory) so that an answer for one tenant can be checked against the other's number.
"""

# ---------------------------------------------------------------------------------------
# Kestrel Vale Water (tenant "kestrelvale")
# ---------------------------------------------------------------------------------------

KV_HANDBOOK = """\
# Kestrel Vale Water Staff Handbook

Kestrel Vale Water supplies drinking water to 410,000 customers across the Vale and the
Marrow Hills and treats their wastewater. This handbook applies to every employee,
including apprentices.

## Annual leave

Full-time employees receive 26 days of paid annual leave per leave year, plus bank
holidays. The leave year runs from 1 April to 31 March. After five years of continuous
service the allowance rises to 29 days.

Leave is requested in the StaffHub portal and approved by your line manager. Field crews
must request leave at least 15 working days in advance so that the standby rota can be
covered.

### Carry-over

Up to 8 unused days may be carried into the next leave year. Carried days must be taken by
30 June or they are lost.

## Sick leave

Tell your line manager by phone before 09:30 on the first day of absence. A fit note from
a doctor is required from the eighth calendar day of absence. Company sick pay is full
salary for the first 12 weeks of absence in any rolling twelve months.

## Parental leave

Employees with one year of service receive 20 weeks of full pay on maternity or adoption
leave, followed by 13 weeks at half pay. Partners receive 4 weeks of paternity leave at full
pay.

## Working hours

Office staff work 36 hours per week, with core hours from 10:00 to 15:30. Field crews work
12-hour shifts on a four-on, four-off pattern.

## Parking

Staff parking is free at Harrowmere Treatment Works and at Doveridge Depot. At the head
office in Calder Street, parking permits cost 18 pounds per month and are allocated by the
facilities team.

## Reporting an accident

1. Make the area safe and give first aid if you are trained to.
2. Call the control room on extension 2000 and say where you are.
3. Record the accident in the SafeLog app within 24 hours.
4. Your line manager completes the investigation form within 5 working days.

## Lone working

Field staff working alone must check in with the control room every 2 hours using the
LoneSafe app. A missed check-in is escalated to the duty manager after 20 minutes.
"""

KV_EXPENSES_PAGES = [
    (
        "Expenses Policy",
        [
            (
                "This policy took effect on 1 April 2025 and replaces the 2022 expenses policy. It "
                "applies to every employee who pays for something on company business."
            ),
            (
                "Claims are made in StaffHub. An itemised receipt is required for every item over "
                "10 pounds; card slips alone are not accepted."
            ),
        ],
    ),
    (
        "Mileage and travel",
        [
            (
                "Business mileage in a private car is reimbursed at 45 pence per mile for the first "
                "10,000 miles in a tax year and 25 pence per mile after that. Travel between home "
                "and your normal place of work is not business mileage."
            ),
            (
                "Rail travel is standard class. First class needs the written approval of a "
                "director."
            ),
            "Pool vans are booked through the fleet desk at least 2 working days ahead.",
        ],
    ),
    (
        "Meals and overnight stays",
        [
            (
                "The meal allowance is 9 pounds for a working trip of more than 5 hours and 22 "
                "pounds for a trip of more than 10 hours."
            ),
            (
                "Hotel stays are reimbursed up to 95 pounds per night, or 150 pounds per night in "
                "London. Alcohol and minibar items are never reimbursed."
            ),
        ],
    ),
    (
        "Submitting and approving claims",
        [
            (
                "Claims must be submitted within 60 days of the expense. Older claims are only paid "
                "with the approval of the Finance Director, Helen Ashdown."
            ),
            (
                "Claims up to 500 pounds are approved by the line manager; claims over 500 pounds "
                "also need the approval of the head of department."
            ),
            "Approved claims are paid with the monthly salary on the 25th of the month.",
        ],
    ),
]

KV_PUMP_RUNBOOK_HTML = """\
<!DOCTYPE html>
<html lang="en">
<head><title>Pump Station Operations Runbook</title>
<style>body { font-family: sans-serif; }</style>
</head>
<body>
<nav><a href="/ops">Network Operations</a> | <a href="/ops/rota">Standby rota</a></nav>
<main>
<h1>Pump Station Operations Runbook</h1>
<p>This runbook covers the 38 clean-water booster stations and 112 sewage pumping stations
run by the Network Operations team.</p>
<h2>Alarm priorities</h2>
<table>
<tr><th>Priority</th><th>Meaning</th><th>Attend within</th></tr>
<tr><td>P1</td><td>Loss of supply or pollution risk</td><td>1 hour</td></tr>
<tr><td>P2</td><td>Single pump failed with the standby running</td><td>4 hours</td></tr>
<tr><td>P3</td><td>Instrument or telemetry fault</td><td>next working day</td></tr>
</table>
<h2>Responding to a P1 alarm</h2>
<ol>
<li>Acknowledge the alarm on the SCADA console within 5 minutes.</li>
<li>Call the standby technician and give them the site name and the alarm code.</li>
<li>If there is a pollution risk, notify the Environment Team.</li>
<li>Update the incident log every 30 minutes until the site is safe.</li>
</ol>
<h2>Isolating a pump for maintenance</h2>
<ol>
<li>Confirm with the control room that the standby pump is available and set to duty.</li>
<li>Switch the local control selector to OFF and apply your personal padlock to the isolator.</li>
<li>Close the suction and delivery valves and fit valve locks.</li>
<li>Open the drain cock and confirm the casing pressure reads 0 bar.</li>
<li>Record the isolation in the permit-to-work log with the permit number.</li>
</ol>
<h2>Restarting after a power failure</h2>
<ol>
<li>Check that mains power has been stable for at least 5 minutes.</li>
<li>Reset the phase failure relay in the motor control centre.</li>
<li>Start the duty pump in HAND and listen for cavitation.</li>
<li>When the outlet pressure reaches the set point, switch the pump to AUTO.</li>
<li>Tell the control room that the station is back in service.</li>
</ol>
<h2>Chlorine levels</h2>
<p>If free chlorine at a service reservoir outlet falls below 0.2 mg/l, the duty operator
takes a manual sample within 30 minutes. Above 1.0 mg/l, stop the dosing pump and call the
water quality scientist on call.</p>
<h2>Confined spaces</h2>
<p>Entry into a wet well needs a confined space permit, a calibrated gas monitor and a top
man at the entrance. Never enter a wet well alone.</p>
</main>
<footer>Kestrel Vale Water. Operational use only.</footer>
</body>
</html>
"""

KV_ALARM_CODES_CSV = """\
code,site type,meaning,action
KV-1101,booster station,Duty pump failed to start,Check that the standby pump has taken over and raise a P2 job
KV-1104,booster station,Low suction pressure,Check the upstream reservoir level and shut the station down if it is below 0.5 m
KV-1210,treatment works,Turbidity above 1.0 NTU on filtered water,Divert filtered water to waste and inform the shift scientist
KV-1215,treatment works,Chlorine analyser reading out of range,Take a manual chlorine sample within 30 minutes
KV-2302,sewage pumping station,Wet well high level,Send a tanker if the level is still rising after 15 minutes
KV-2307,sewage pumping station,Overflow spill detected,Raise a P1 and notify the Environment Team within 1 hour
KV-3001,reservoir,Intruder alarm at a reservoir site,Call the security contractor Varden Guarding and never attend alone
KV-3010,reservoir,Level sensor signal lost,Check the outstation battery and replace it if it reads below 11.5 volts
KV-4005,telemetry,Outstation not polled for 30 minutes,Power-cycle the outstation from the SCADA console
KV-4012,telemetry,Radio link quality below threshold,Log a fault with the telemetry team; no site visit is needed
"""

KV_CUSTOMER_FAQ = """\
Kestrel Vale Water - Customer Contact Centre FAQ
Last reviewed: 12 January 2026

How do I help a customer take a meter reading?
Ask the customer to read the black digits only, from left to right. The red digits show
litres and are ignored.

What is the leak allowance?
If a customer repairs a leak on their supply pipe within 21 days of being told about it, we
refund the water lost above their normal use. A customer can receive one leak allowance
every 5 years.

Can customers pay in instalments?
Customers can spread their annual bill over 10 or 12 monthly instalments by direct debit.
Customers in arrears can agree a payment plan of up to 24 months.

How do I set up a payment plan?
1. Check the account balance and whether the customer has broken a plan before.
2. Agree the monthly amount with the customer; it must clear the arrears within 24 months.
3. Set up the plan in the billing system under Arrangements.
4. Send the confirmation letter the same day.

What is the WaterAssist tariff?
WaterAssist caps the annual bill at 380 pounds for households with an income below 21,000
pounds a year. Customers must re-apply every 2 years.

How quickly must we answer a written complaint?
Written complaints get a full response within 10 working days. If we miss the deadline, the
customer is paid 20 pounds automatically.

What do we do about low pressure?
Ask whether the neighbours are affected and check the network status page for planned work.
If there is no known cause, raise a pressure investigation job with priority P3.

When is a customer compensated for an interruption?
A customer whose supply is interrupted for more than 12 hours without notice receives 50
pounds. They receive a further 25 pounds for each extra 24 hours without water.
"""

KV_DIRECTORY_TITLE = "Kestrel Vale Water Staff Directory"
KV_DIRECTORY_SECTIONS = [
    (
        "Using this directory",
        [
            (
                "Internal extensions are dialled directly from any desk phone. The out-of-hours duty "
                "manager is reached through the control room on extension 2000."
            ),
            "The Network Operations standby rota changes every Monday at 08:00.",
        ],
    ),
    (
        "Teams and owners",
        [
            "Each row names the person who owns a subject, with their extension.",
        ],
    ),
]
KV_DIRECTORY_TABLE = [
    ("Name", "Role", "Responsible for", "Extension"),
    ("Helen Ashdown", "Finance Director", "Budgets and late expense claims", "2101"),
    (
        "Marcus Oyelaran",
        "Head of Network Operations",
        "Pump stations, SCADA and alarms",
        "2240",
    ),
    (
        "Ffion Rees-Hallam",
        "Water Quality Manager",
        "Sampling, chlorine dosing and regulator reports",
        "2315",
    ),
    (
        "Tom Castellane",
        "Contact Centre Manager",
        "Complaints and the WaterAssist tariff",
        "2450",
    ),
    (
        "Aisha Brennock",
        "HR Business Partner",
        "Leave, sickness and parental leave",
        "2512",
    ),
    (
        "Gareth Pellow",
        "Information Security Officer",
        "Passwords, phishing reports and access reviews",
        "2620",
    ),
    (
        "Nadia Okonkwo-Hart",
        "Records Manager",
        "Retention schedule and archive requests",
        "2633",
    ),
    ("Owen Tregaskis", "Fleet Coordinator", "Pool vans and fuel cards", "2705"),
    ("Lucy Marsh", "Facilities Manager", "Parking permits and building passes", "2710"),
]

KV_SECURITY_TXT = """\
Kestrel Vale Water Information Security Policy

Version 3.2, approved by the Executive Board on 4 November 2025. Owner: Gareth Pellow,
Information Security Officer.

1. Passwords

Passwords must be at least 14 characters long. Passwords do not expire on a schedule, but
must be changed at once if you suspect someone else knows them. Multi-factor authentication
is required for email, StaffHub and remote access.

2. Reporting incidents

Report a suspected phishing email with the Report Phish button in your mail client. Report a
lost or stolen laptop or phone to the IT service desk on extension 2600 within 1 hour of
noticing.

3. Operational technology

SCADA workstations must never be connected to the corporate network or to the internet. USB
storage devices are blocked on all SCADA workstations. Remote access to SCADA is allowed only
through the OT jump host with a hardware token.

4. Screen locking and clear desk

Screens lock automatically after 5 minutes of inactivity. Printed customer data must be
locked away at the end of each working day.

5. Access reviews

Managers review their team's system access every 6 months, in May and November.
"""

KV_RETENTION_MD = """\
# Records Retention Schedule

This schedule sets how long Kestrel Vale Water keeps each kind of record. The Records
Manager reviews it every year in September.

## Retention periods

| Record | Retention period | Owner |
|---|---|---|
| Customer billing records | 7 years after the account closes | Customer Services |
| Contact centre call recordings | 90 days | Customer Services |
| Water quality sample results | 30 years | Water Quality |
| CCTV footage at treatment works | 31 days | Facilities |
| SCADA alarm and event logs | 3 years | Network Operations |
| Audit logs of IT systems | 18 months by default | IT |
| Personnel files | 6 years after employment ends | HR |
| Accident and injury reports | 40 years | Health and Safety |

## Legal holds

A record under a legal hold must not be destroyed until the Legal Team releases the hold in
writing, even when its retention period has passed.

## Requesting archived records

1. Fill in the archive request form on the intranet, with the box reference.
2. The Records Manager confirms the request within 2 working days.
3. The boxes arrive at your site with the next Thursday courier.
4. Return the boxes within 30 days.

## Destruction

Paper records are destroyed by cross-cut shredding or through the locked confidential waste
bins. Electronic records are deleted by the system owner, who confirms the deletion to the
Records Manager within 10 working days.
"""

KV_PAY_GRADES = [
    ("grade", "example role", "minimum salary", "maximum salary"),
    ("KV3", "Customer adviser", "24,650 pounds", "28,900 pounds"),
    ("KV4", "Network technician", "29,100 pounds", "34,300 pounds"),
    ("KV5", "Senior technician", "34,800 pounds", "40,250 pounds"),
    ("KV6", "Team leader", "41,000 pounds", "48,700 pounds"),
    ("KV7", "Operations manager", "50,200 pounds", "61,500 pounds"),
]
KV_PAY_ALLOWANCES = [
    ("allowance", "amount", "condition"),
    (
        "Standby week",
        "310 pounds per week",
        "Paid for each full week on the standby rota",
    ),
    ("Call-out", "55 pounds per call-out", "Plus overtime at time and a half"),
    ("Shift allowance", "12% of basic salary", "For the four-on, four-off pattern"),
    ("First aider", "200 pounds per year", "Needs a current first aid certificate"),
]

KV_CAPITAL_TITLE = "Capital Programme 2026-27"
KV_CAPITAL_SECTIONS = [
    (
        "Summary",
        [
            (
                "The Board approved a capital programme of 86.4 million pounds for 2026-27 on 18 "
                "February 2026. The largest scheme is the Harrowmere filter refurbishment."
            ),
            (
                "Any scheme forecast to overspend by more than 5% goes back to the Investment "
                "Committee, which meets on the first Tuesday of each month."
            ),
        ],
    ),
    (
        "Schemes",
        [
            "The table lists each approved scheme with its budget and planned completion.",
        ],
    ),
]
KV_CAPITAL_TABLE = [
    ("Scheme", "Budget", "Planned completion"),
    ("Harrowmere filter refurbishment", "21.7 million pounds", "March 2028"),
    ("Marrow Hills mains replacement", "14.2 million pounds", "March 2027"),
    ("Smart meter rollout phase 2", "9.8 million pounds", "December 2027"),
    ("Doveridge sludge dryer", "6.5 million pounds", "September 2027"),
    ("Telemetry outstation upgrade", "3.1 million pounds", "June 2027"),
]

# Per-condition figures: a question that names no depot is answered per depot.
KV_DEPOT_ALLOWANCES_CSV = """\
depot,field allowance per shift,night shift supplement
Harrowmere Treatment Works,14 pounds,38 pounds
Doveridge Depot,11 pounds,35 pounds
Calder Street,9 pounds,30 pounds
Marrow Hills,16 pounds,42 pounds
"""

# ---------------------------------------------------------------------------------------
# Orrisfield Software (tenant "orrisfield")
# ---------------------------------------------------------------------------------------

OF_HANDBOOK = """\
# Orrisfield Employee Handbook

Orrisfield Software builds Tallyforge, an invoicing and subscription billing platform used
by about 3,200 businesses. We have offices in Porto and Lyon and about 140 employees.

## Annual leave

Everyone receives 24 days of paid annual leave per calendar year, plus the public holidays
of the country they work in. Absences longer than three days are booked in PeopleDesk at
least 2 weeks ahead.

### Carry-over

Up to 6 unused days can be carried over into the next year. Carried days must be used by
31 May.

## Sick leave

Tell your manager in your team channel by 10:00. You can self-certify up to 5 working days;
after that a medical certificate is needed.

## Remote work

Employees can work remotely up to 3 days a week. Working from another country is allowed
for up to 20 working days per year with the approval of People Operations.

### Working from another country

1. Check that the country is on the approved list in PeopleDesk.
2. Submit the request at least 4 weeks before you travel.
3. Wait until People Operations confirms tax and insurance cover in writing before you book.

## Home office and learning

New employees receive a one-off home office budget of 600 euros, then 150 euros per year
for replacements. Each employee also has a learning budget of 1,000 euros per year and 3
learning days.

## Parental leave

Orrisfield tops up statutory parental leave to full salary for 16 weeks, for every parent.

## Equipment

Laptops are replaced every 3 years. Return all equipment within 5 working days of your last
day.
"""

OF_SECURITY_PAGES = [
    (
        "Security Policy",
        [
            (
                "This policy applies to every employee and contractor with access to Orrisfield "
                "systems. It is owned by the Security Lead, Ines Valcourt, and was last revised on "
                "9 March 2026."
            ),
            (
                "Passwords must be at least 16 characters long and are kept in the company password "
                "manager. Hardware security keys are mandatory for access to production."
            ),
        ],
    ),
    (
        "Devices",
        [
            (
                "Company laptops must use full-disk encryption and lock after 3 minutes of "
                "inactivity. Lost or stolen devices are reported in the #security channel within "
                "30 minutes."
            ),
            "Personal devices may be used for email and chat only, never for customer data.",
        ],
    ),
    (
        "Customer data",
        [
            (
                "Access to production customer data is granted for at most 8 hours per request "
                "through the access broker, and every access is logged."
            ),
            (
                "Support staff may view a customer's invoices only while a ticket from that "
                "customer is open."
            ),
        ],
    ),
    (
        "Data retention",
        [
            (
                "Application logs are kept for 30 days. Audit logs are kept for 400 days by default; "
                "enterprise customers can extend this to 7 years."
            ),
            (
                "Deleted customer accounts are purged from backups after 35 days. Invoices and "
                "payment records are kept for 10 years to meet tax law."
            ),
        ],
    ),
    (
        "Security incidents",
        [
            (
                "Security incidents are graded S1 to S3. An S1 incident pages the Security Lead at "
                "once, and affected customers are notified within 72 hours of confirmation."
            ),
        ],
    ),
]

OF_RUNBOOK_HTML = """\
<!DOCTYPE html>
<html lang="en">
<head><title>Tallyforge Production Runbook</title>
<script>window.track = function () {};</script>
</head>
<body>
<header><a href="/">Orrisfield Engineering Handbook</a></header>
<main>
<h1>Tallyforge Production Runbook</h1>
<p>Production runs in two data centres: ORF-A is the primary and ORF-B the warm standby.
The recovery point objective is 5 minutes and the recovery time objective is 1 hour.</p>
<h2>Deploy windows</h2>
<p>No production deploys on Fridays after 14:00. The month-end freeze runs from the last
working day of a month to the second working day of the next month, because customers
issue most of their invoices then.</p>
<h2>Deploying to production</h2>
<ol>
<li>Merge the release branch and wait for a green build on the pipeline.</li>
<li>Announce the deploy in #deploys with the release number.</li>
<li>Run tfctl deploy --env prod to start the canary, which takes 10% of traffic.</li>
<li>Watch the error-rate panel for 15 minutes.</li>
<li>Promote the canary with tfctl promote if the error rate stays below 0.5%.</li>
</ol>
<h2>Rolling back a release</h2>
<ol>
<li>Run tfctl rollback --env prod to return to the previous release.</li>
<li>Turn off every feature flag that the release introduced.</li>
<li>Open an incident ticket and link the failed build.</li>
</ol>
<h2>Database failover</h2>
<ol>
<li>Confirm with the incident commander that ORF-A cannot be recovered within 30 minutes.</li>
<li>Put Tallyforge into maintenance mode to stop writes.</li>
<li>Promote the ORF-B replica with tfctl db promote --site orf-b.</li>
<li>Switch traffic to ORF-B in the load balancer console.</li>
<li>Leave maintenance mode and post an update on the status page.</li>
</ol>
</main>
<footer>Orrisfield Software. Internal.</footer>
</body>
</html>
"""

OF_API_ERRORS = [
    ("code", "HTTP status", "meaning", "action"),
    (
        "TF-4001",
        400,
        "Invoice total does not match the sum of its lines",
        "Ask the customer to recalculate the line totals before resubmitting",
    ),
    (
        "TF-4012",
        409,
        "Invoice number already used in this ledger",
        "Use a new invoice number or void the existing invoice first",
    ),
    (
        "TF-4019",
        422,
        "Currency not enabled for the account",
        "Enable the currency under Settings > Currencies",
    ),
    (
        "TF-4031",
        403,
        "API key lacks the invoices:write scope",
        "Create a new API key with the invoices:write scope",
    ),
    (
        "TF-4290",
        429,
        "Rate limit exceeded",
        "Retry after the number of seconds in the Retry-After header",
    ),
    (
        "TF-5003",
        503,
        "Payment provider unavailable",
        "Retry with exponential backoff and check the status page for provider incidents",
    ),
]
OF_WEBHOOK_ERRORS = [
    ("code", "meaning", "action"),
    (
        "WH-101",
        "Endpoint returned a status other than 2xx",
        "Nothing to do at first: Tallyforge retries 8 times over 24 hours",
    ),
    (
        "WH-104",
        "Endpoint timed out after 10 seconds",
        "Ask the customer to acknowledge the event at once and process it afterwards",
    ),
    (
        "WH-110",
        "Signature verification failed on the customer side",
        "Check that the customer uses the current signing secret",
    ),
    (
        "WH-120",
        "Endpoint disabled after repeated failures",
        "Re-enable the endpoint in the dashboard once the customer has fixed it",
    ),
]

OF_RELEASE_NOTES_HTML = """\
<!DOCTYPE html>
<html lang="en">
<head><title>Tallyforge Release Notes</title></head>
<body>
<main>
<h1>Tallyforge Release Notes</h1>
<h2>Tallyforge 5.4, released 3 March 2026</h2>
<ul>
<li>Added bulk credit notes, up to 500 per batch.</li>
<li>Added Polish and Czech invoice templates.</li>
<li>Fixed: PDF invoices with more than 200 lines no longer time out.</li>
<li>Deprecated: the API v1 endpoints will be switched off on 30 September 2026.</li>
</ul>
<h2>Tallyforge 5.3, released 20 January 2026</h2>
<ul>
<li>Added SEPA Direct Debit mandates.</li>
<li>Added a dunning schedule editor with up to 6 reminder steps.</li>
<li>Changed: webhook signatures now use HMAC-SHA256 only.</li>
</ul>
<h2>Tallyforge 5.2, released 25 November 2025</h2>
<ul>
<li>Added security-key two-factor authentication for all users.</li>
<li>Added a CSV export of the customer ledger.</li>
<li>Fixed: VAT rounding on invoices in Swiss francs.</li>
</ul>
</main>
</body>
</html>
"""

# The revised document: v1 is ingested first, then v2 replaces it under the same id.
OF_PLANS_V1 = """\
# Tallyforge Plans and Limits

These plans and limits are effective from 1 October 2025.

## Plans

- Starter: 19 euros per month, up to 100 invoices per month, 1 user.
- Growth: 79 euros per month, up to 2,000 invoices per month, 5 users.
- Scale: 249 euros per month, unlimited invoices, up to 25 users.

## API limits

The API allows 25 requests per second per account. Bulk endpoints accept up to 250 records
per call.

## Attachments

Attachments are limited to 10 MB per file.

## Support

Starter support is by email, with a first response within 2 business days. Growth and Scale
include chat support, with a first response within 4 business hours.

## Free trial

The free trial lasts 14 days and includes every Growth feature.
"""

OF_PLANS_V2 = """\
# Tallyforge Plans and Limits

These plans and limits are effective from 1 April 2026.

## Plans

- Starter: 19 euros per month, up to 150 invoices per month, 1 user.
- Growth: 89 euros per month, up to 2,000 invoices per month, 5 users.
- Scale: 249 euros per month, unlimited invoices, up to 40 users.

## API limits

The API allows 40 requests per second per account. Bulk endpoints accept up to 500 records
per call.

## Attachments

Attachments are limited to 25 MB per file.

## Support

Starter support is by email, with a first response within 2 business days. Growth and Scale
include chat support, with a first response within 2 business hours.

## Free trial

The free trial lasts 30 days and includes every Growth feature.
"""

OF_SALARY_BANDS_CSV = """\
level,title,minimum salary (EUR),maximum salary (EUR)
IC1,Software Engineer I,38000,46000
IC2,Software Engineer II,45000,56000
IC3,Senior Software Engineer,55000,68000
IC4,Staff Engineer,67000,82000
M1,Engineering Manager,64000,80000
S1,Support Specialist,30000,37000
S2,Senior Support Specialist,36000,44000
"""

OF_BUDGET_DEPARTMENTS = [
    ("department", "budget FY2026", "headcount"),
    ("Engineering", "6.8 million euros", 62),
    ("Support", "1.9 million euros", 21),
    ("Sales and Marketing", "3.4 million euros", 28),
    ("People Operations", "0.7 million euros", 6),
    ("Finance and Legal", "0.9 million euros", 8),
]
OF_BUDGET_QUARTERS = [
    ("quarter", "revenue target", "gross margin target"),
    ("Q1 FY2026", "4.1 million euros", "78%"),
    ("Q2 FY2026", "4.4 million euros", "79%"),
    ("Q3 FY2026", "4.8 million euros", "80%"),
    ("Q4 FY2026", "5.2 million euros", "81%"),
]

OF_DIRECTORY_TXT = """\
Orrisfield Team Directory

Updated 2 March 2026. Extensions are dialled from the office phones in Porto and Lyon.

Clara Duvernet, Chief Executive Officer. Extension 300.

Mateus Alvim, Chief Technology Officer. Approves production access requests. Extension 301.

Ines Valcourt, Security Lead. Owns the security policy and handles security incidents. Extension 315.

Rafael Moutinho, Head of Support. Owns support escalations and approves refunds. Extension 322.

Yara Lindqvist, Release Manager. Owns the release calendar and the release notes. Extension 327.

Bastien Oloffson, Billing Engine team lead. Owns dunning, SEPA and the payment provider integrations. Extension 331.

Solene Marchetti, People Operations Manager. Leave, remote work abroad and parental leave. Extension 340.

Joaquim Teles, Finance Manager. Expenses, supplier invoices and budgets. Extension 350.

Tereza Hruba, Office Manager in Lyon. Desks, building badges and bike parking. Extension 360.

On-call: engineering on-call rotates every Wednesday at 11:00. A page that is not
acknowledged within 10 minutes escalates to the secondary on-call engineer, then to the
Chief Technology Officer.

Weekend cover: support answers customers on the Scale plan on Saturdays and Sundays from
09:00 to 17:00 Lisbon time.
"""

OF_SUPPORT_FAQ = """\
# Support Team FAQ

## How do I reset a customer's two-factor authentication?

1. Verify the customer's identity on a video call or by email from the account owner's verified address.
2. Open the user in the admin console and choose Reset 2FA.
3. Add a note to the ticket with the verification method you used.

## Can we refund a subscription?

Monthly plans are not refunded. Annual plans can be refunded pro rata within 30 days of
renewal, with the approval of the Head of Support.

## How do customers export their data?

Account owners can export invoices, customers and payments as CSV or JSON from Settings >
Data export. Exports larger than 2 GB are split into several files, and the download link
expires after 7 days.

## What are the support hours?

Chat and email support are staffed Monday to Friday from 08:00 to 19:00 Lisbon time.

## How do I escalate a bug to engineering?

1. Reproduce the problem on a test account.
2. Create a ticket in the ENG queue with the error code, the account id and the time of the failed request.
3. Set the severity: S1 when payments fail for many customers, S2 when one customer is blocked, S3 for everything else.

## Which languages do invoice templates support?

Invoice templates are available in English, French, Portuguese, Spanish, German, Italian,
Polish and Czech.
"""

# Per-condition figures: per contract type, per office, and per country (more countries than an
# answer lists, so a question naming none is asked which one it means).
OF_CONTRACTS_MD = """\
# Contracts and Offices

## Notice periods

Either side gives notice in writing.

- Permanent contract: 2 months.
- Fixed-term contract: 1 month.
- Internship: 2 weeks.

## Probation

Probation lasts 6 months for permanent staff and 3 months on a fixed-term contract.

## Commuting

The monthly commuting allowance is 40 euros in Porto and 55 euros in Lyon.

## Mobile phones

Company phones are not issued; a monthly allowance is paid with the salary instead.

- Engineers on call: 30 euros per month.
- Support specialists: 20 euros per month.
- Sales team: 45 euros per month.

## Working abroad

These allowances are paid for each approved day abroad.

| Country | Coworking allowance per day | Internet allowance per month |
|---|---|---|
| France | 25 euros | 30 euros |
| Germany | 28 euros | 32 euros |
| Spain | 20 euros | 25 euros |
| Italy | 22 euros | 27 euros |
| Poland | 15 euros | 18 euros |
| Czechia | 14 euros | 17 euros |
| Austria | 26 euros | 31 euros |
| Belgium | 24 euros | 29 euros |
"""
