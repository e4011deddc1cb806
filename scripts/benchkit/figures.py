"""Pure arithmetic of the benchmark's figures (unit-tested in tests/test_figures.py)."""

import datetime
import math
import os
import statistics


def percentile(sorted_values, fraction):
    """Nearest-rank percentile of values sorted ascending; NaN when there are none."""
    if not sorted_values:
        return float("nan")
    rank = max(1, min(len(sorted_values), math.ceil(fraction * len(sorted_values))))
    return sorted_values[rank - 1]


def millis(rfc3339):
    """Milliseconds since the epoch of an RFC 3339 time (`Z` or an offset)."""
    return datetime.datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp() * 1000.0


def alert_event_id(payload):
    """The event id an alert push carries (APNs `event_id` beside `aps`, FCM `message.data.event_id`), or None for a
    badge-only push or anything else."""
    if not isinstance(payload, dict):
        return None
    if "aps" in payload:
        return payload.get("event_id")
    message = payload.get("message")
    if isinstance(message, dict) and isinstance(message.get("data"), dict):
        return message["data"].get("event_id")
    return None


def latencies(deliveries, occurred_at_micros):
    """Latency in ms (the sink's `received_at` less the event's `occurred_at`) of every accepted alert push whose event
    is known, sorted; and how many accepted alerts had no known event."""
    found, unknown = [], 0
    for delivery in deliveries:
        if delivery.get("status") != 200:
            continue
        event_id = alert_event_id(delivery.get("payload"))
        if event_id is None:
            continue
        if event_id not in occurred_at_micros:
            unknown += 1
            continue
        found.append(millis(delivery["received_at"]) - occurred_at_micros[event_id] / 1000.0)
    found.sort()
    return found, unknown


class CpuShare:
    """CPU seconds spent by a named part (the machine, the workers, PostgreSQL, …) over a run of `events`."""

    def __init__(self, name, seconds):
        self.name = name
        self.seconds = seconds

    def per_event_us(self, events):
        return self.seconds / events * 1e6 if events else float("nan")


def cpu_between(first, last):
    """CPU seconds per part between two snapshots ({part: cumulative seconds}); a part missing from either counts 0
    there (a process that started or ended between them)."""
    parts = set(first) | set(last)
    return {part: max(0.0, last.get(part, 0.0) - first.get(part, 0.0)) for part in parts}


def median_baseline(runs):
    """The broker-only baseline of several runs, each (confirmed publishes/s, consumed + acked/s, machine CPU µs a
    message): the median of each figure, taken on its own (NaN when no run gave it). One run's CPU per message
    spreads by a third from run to run on one machine, and the efficiency figure divides by it."""
    def median(values):
        values = [value for value in values if not math.isnan(value)]
        return statistics.median(values) if values else float("nan")
    return tuple(median(run[index] for run in runs) for index in range(3))


def broker_messages_per_event(pipeline_us_per_event, broker_us_per_message):
    """How many broker-only messages' worth of CPU one event costs (the efficiency bar's unit)."""
    if not broker_us_per_message:
        return float("nan")
    return pipeline_us_per_event / broker_us_per_message


def windows(series, size):
    """Splits a series of cumulative samples [(t, count, …), …] into consecutive windows of at least `size` counted
    items each (the last may be smaller); returns [(first sample, last sample), …]."""
    result = []
    if not series:
        return result
    start = series[0]
    for current in series[1:]:
        if current[1] - start[1] >= size:
            result.append((start, current))
            start = current
    if series[-1][1] > start[1]:
        result.append((start, series[-1]))
    return result


def rate(count, seconds):
    return count / seconds if seconds > 0 else float("nan")


def utilisation(busy_seconds, wall_seconds, cores=None):
    """The share of the machine's cores busy over `wall_seconds` (0 to 1)."""
    cores = cores or os.cpu_count() or 1
    return busy_seconds / (wall_seconds * cores) if wall_seconds > 0 else float("nan")


def histogram_buckets(metrics, name):
    """A Prometheus histogram's cumulative buckets as sorted [(upper bound in s, count)], from `/metrics` parsed into
    {"name_bucket{le=\"0.05\"}": count, …} (other labels are summed over)."""
    found = {}
    prefix = name + "_bucket{"
    for key, value in metrics.items():
        if not key.startswith(prefix):
            continue
        for label in key[len(prefix):-1].split(","):
            label_name, _, label_value = label.partition("=")
            if label_name.strip() == "le":
                bound = float("inf") if label_value.strip('"') == "+Inf" else float(label_value.strip('"'))
                found[bound] = found.get(bound, 0.0) + value
    return sorted(found.items())


def bucket_delta(before, after):
    """The buckets of what was recorded between two readings of one histogram (cumulative buckets, summed over
    workers)."""
    earlier = dict(before)
    return [(bound, count - earlier.get(bound, 0.0)) for bound, count in after]


def bucket_quantile(buckets, fraction):
    """The upper bound of the bucket that holds the `fraction` quantile of cumulative `buckets` (Prometheus reports
    no finer); NaN when the histogram is empty."""
    total = buckets[-1][1] if buckets else 0
    if total <= 0:
        return float("nan")
    for bound, count in buckets:
        if count >= fraction * total:
            return bound
    return float("inf")


def less_publishing(machine_us, rabbitmq_us, publisher_us):
    """The machine's CPU less what publishing costs (RabbitMQ's and the publisher's), never below zero: in a live run,
    what the pipeline itself spent; in a run that only publishes, what else ran."""
    return max(0.0, machine_us - rabbitmq_us - publisher_us)


def busy_at(rate, us_per_event, cores):
    """The share of `cores` (0 to 1) that `rate` events/s keep busy at `us_per_event` µs of CPU each."""
    return rate * us_per_event / (cores * 1e6) if cores else float("nan")


def live_budget_us(rate, busy, publishing_us, cores):
    """What the pipeline may spend on a live event at `rate` events/s for the machine to stay `busy` (0 to 1), beside
    the `publishing_us` µs an event that publishing costs it (RabbitMQ and the publisher, measured alone)."""
    return busy * cores * 1e6 / rate - publishing_us if rate > 0 else float("nan")


def live_ratio_floor(drained_us, publishing_us):
    """The least a live event can cost the machine, as a multiple of a drained event's `drained_us` (the drain's
    machine CPU an event, which publishes nothing: its events were queued before it started), when publishing costs
    `publishing_us` an event at the live rate (RabbitMQ and the publisher, measured alone): a live event also pays
    for its publishing, and its pipeline (the workers, the database, the sink, RabbitMQ's delivery and acks) works
    in smaller batches than a drain's, so costs at least what a drained event does."""
    return (drained_us + publishing_us) / drained_us if drained_us > 0 else float("nan")


def namespace_queues(queue_names, namespace):
    """The queues of a deployment namespace (`NAMESPACE.…`), sorted: never another namespace's whose name merely
    starts alike."""
    return sorted(name for name in queue_names if name.startswith(namespace + "."))


def capacity_fraction(text):
    """A fraction of the drain's capacity C for `--live-fractions`: a number in (0, 1]; ValueError otherwise."""
    value = float(text)
    if not 0 < value <= 1:
        raise ValueError(f"{text}: a fraction of C is in (0, 1]")
    return value


# The p99 (occurred to push received) a live run may have for its rate to count towards latency-bounded throughput.
LATENCY_BOUND_MS = 50


def latency_bounded_fraction(p99_by_fraction, bound_ms=LATENCY_BOUND_MS):
    """Latency-bounded throughput, as a fraction of C: the highest measured fraction whose p99 stays within
    `bound_ms`, every lower fraction's too (a rate that holds the bound above one that does not is the runs' noise,
    not capacity). `p99_by_fraction`: {fraction: p99 in ms, or None when no alert was measured}. None when the lowest
    fraction already misses it."""
    held = None
    for fraction in sorted(p99_by_fraction):
        p99 = p99_by_fraction[fraction]
        if p99 is None or p99 > bound_ms:
            break
        held = fraction
    return held


def fraction_label(fraction):
    """C/2, C/4, ... for 1/n; otherwise 0.3 C."""
    denominator = 1 / fraction
    if abs(denominator - round(denominator)) < 1e-9:
        return "C" if round(denominator) == 1 else f"C/{round(denominator)}"
    return f"{fraction:g} C"
