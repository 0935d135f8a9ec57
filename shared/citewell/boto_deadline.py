"""A botocore client's calls inside the request's deadline (:mod:`citewell.deadline`), every attempt.

botocore fixes a client's read timeout when the client is made, and a client is made once per
container (its pool keeps the TLS session warm), so the deadline cannot be given to it there.
Each attempt, retries included, is sent with its own: a ``before-send`` hook sets the request
context's ``read_timeout`` (botocore reads it for that one request: the ``aws`` extra asks for 1.44.18), and an attempt past
:data:`ATTEMPTS`, or with too little left, is not made (TimeoutError, which botocore does not retry).

A store's call (``store=True``: DynamoDB), waited on where it is made, reads for what the request
has left (:func:`citewell.deadline.store_time`) less :data:`STORE_CONNECT_S`, its client's connect
timeout, so a fresh connection's connect and the read both end before the deadline. A model's call
(Bedrock) is waited on by :func:`citewell.deadline.bounded`, which gives up on it at its share:
its read ends :data:`WAITER_GRACE_S` after that, so the waiter's "no reply in" is what is said and
the call stops then, rather than holding its thread and connection until its own limit (20 s).

Outside a request (ingestion, the audit, the CLI) a call has its client's own limits.
"""

from __future__ import annotations

from typing import Any

from citewell.deadline import REPLY_S, current, store_time, time_for

ATTEMPTS = 2  # attempts of one call inside a request: a retry, no more (a store failing twice is down for it)
STORE_CONNECT_S = 1.0  # a DynamoDB client's connect timeout (a connection in the region takes milliseconds)
WAITER_GRACE_S = 0.25  # how long a model's call, given up on by its waiter, reads on


def bound_by_deadline(client: Any, store: bool = False) -> Any:
    """``client`` (botocore), each attempt of its calls given what the request has left; returned."""
    own = float(client.meta.config.read_timeout)

    def attempt(request: Any, **_: object) -> None:
        deadline = current()
        if deadline is None:
            return
        made = int(request.context.get("retries", {}).get("attempt", 1))
        if made > ATTEMPTS:
            raise TimeoutError(f"not retried: {made - 1} attempts failed with {deadline.left():.1f} s left of the request")
        # TimeoutError ("not made") when too little is left
        seconds = store_time(own, keep=STORE_CONNECT_S + REPLY_S) if store else time_for(own) + WAITER_GRACE_S
        request.context["read_timeout"] = seconds

    service = client.meta.service_model.service_id.hyphenize()
    client.meta.events.register_first(f"before-send.{service}", attempt, unique_id=f"citewell-deadline-{service}")
    return client
