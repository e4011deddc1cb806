"""End-to-end tests of a BadgePipe deployment, written against the sink's API: publish events, then wait at the
sink until each phone shows what it must. No sleeps, no polling loops: the sink answers a wait as soon as the
condition holds.

Run against `docker compose up` (the sink on 127.0.0.1:8787, events published through the compose `publish`
service):

    BADGEPIPE_PUBLISH="docker compose run --rm -T publish --file -" pytest docs/examples/test_badges.py

or against a local sink and worker (`badgepipe publish` on PATH, the default):

    pytest docs/examples/test_badges.py

Environment: BADGEPIPE_SINK_URL (default http://127.0.0.1:8787), BADGEPIPE_PUBLISH (a command that publishes the
JSON events on its standard input, one a line; default `badgepipe publish --file -`), BADGEPIPE_BIN (the
badgepipe binary for `badgepipe sink wait`; default `badgepipe`).
"""
import json
import os
import shlex
import subprocess
import urllib.error
import urllib.request
import uuid

import pytest

SINK = os.environ.get("BADGEPIPE_SINK_URL", "http://127.0.0.1:8787")
PUBLISH = shlex.split(os.environ.get("BADGEPIPE_PUBLISH", "badgepipe publish --file -"))
BADGEPIPE = os.environ.get("BADGEPIPE_BIN", "badgepipe")


def sink(method, path, body=None):
    """One request to the sink: (status, JSON answer). A wait that timed out is an answer too (412)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(SINK + path, data=data, method=method,
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=90) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def publish(*events):
    """Publishes events with confirms (one JSON object a line on the publisher's standard input)."""
    lines = "\n".join(json.dumps(event) for event in events)
    subprocess.run(PUBLISH, input=lines, text=True, check=True, capture_output=True)


def wait_for_badge(token, badge, seconds=30):
    """What the device shows once its badge is `badge`; fails the test with what it shows at the timeout."""
    status, device = sink("GET", f"/devices/{token}?wait={seconds}&badge={badge}")
    assert status == 200, f"{token} did not show badge {badge} within {seconds} s: {device}"
    return device


class Phone:
    """One user with one device, both unique to the test, so that tests can run together against one sink."""

    def __init__(self):
        suffix = uuid.uuid4().hex
        self.user = f"u-test-{suffix[:12]}"
        self.token = f"{suffix}{suffix}"
        self.count = 0

    def event(self, type, **fields):
        self.count += 1
        return {"id": f"{self.user}-{self.count}", "type": type, "recipient": self.user,
                "occurred_at": f"2026-11-21T10:00:{self.count:02d}Z", **fields}

    def register(self):
        return self.event("device_registered", device={"token": self.token, "provider": "apns"})

    def follow(self, name):
        return self.event("follow", actor={"id": f"u-{name.lower()}", "name": name})


@pytest.fixture
def phone():
    phone = Phone()
    yield phone
    # Isolation: forget this test's deliveries and device only.
    sink("DELETE", f"/deliveries?token={phone.token}")
    sink("DELETE", "/faults")


def test_follows_raise_the_badge_and_reading_clears_it(phone):
    publish(phone.register(), phone.follow("Ann"), phone.follow("Bob"))
    device = wait_for_badge(phone.token, 2)
    assert device["alerts"] == 2
    assert device["last_alert"]["title"] == "New follower"
    assert "Bob" in device["last_alert"]["body"]

    publish(phone.event("notifications_read_all", until="2026-11-21T10:59:00Z"))
    device = wait_for_badge(phone.token, 0)
    # The read sent a badge-only push, not an alert.
    assert device["alerts"] == 2 and device["badge_only"] >= 1

    status, answer = sink("GET", f"/deliveries?token={phone.token}&kind=alert")
    bodies = [delivery["payload"]["aps"]["alert"]["body"] for delivery in answer["deliveries"]]
    assert len(bodies) == 2 and "Ann" in bodies[0] and "Bob" in bodies[1]


def test_a_dead_token_gets_no_further_push(phone):
    publish(phone.register())
    wait_for_badge(phone.token, 0)
    # APNs says the token is gone, once.
    status, _ = sink("POST", "/faults", {"token": phone.token, "status": 410, "reason": "Unregistered", "times": 1})
    assert status == 200
    publish(phone.follow("Ann"))
    status, answer = sink("GET", f"/deliveries?token={phone.token}&status=410&wait=30")
    assert status == 200 and answer["deliveries"][0]["reason"] == "Unregistered"

    publish(phone.follow("Bob"))
    # Nothing more may reach the device: a short wait for a third push must time out (412).
    status, answer = sink("GET", f"/deliveries?token={phone.token}&min=3&wait=3")
    assert status == 412, answer
    assert len(answer["deliveries"]) == 2


def test_the_command_line_waits_too(phone):
    publish(phone.register(), phone.follow("Ann"))
    waited = subprocess.run([BADGEPIPE, "sink", "wait", "--url", SINK, "--token", phone.token, "--badge", "1",
                             "--timeout", "30s"], capture_output=True, text=True)
    assert waited.returncode == 0, waited.stdout + waited.stderr
    assert waited.stdout.startswith(f"ok: {phone.token} badge=1")
