import BadgeStore
import Metrics

/// The worker's metrics, in one place, by the names Prometheus shows (`badgepipe_…_total` counters, `_seconds`
/// histograms). Label values are bounded: partition numbers, reason codes and error classes, never a user id or a
/// token. They go nowhere unless the process bootstraps a metrics backend (`badgepipe worker --metrics-port`).
///
/// The handles are created on first use, so after the bootstrap.
enum WorkerMetrics {
    /// Messages taken from the partition queues, valid or not.
    static let eventsConsumed = Counter(label: "badgepipe_events_consumed_total")
    /// Events committed (duplicates included: they are applied idempotently, as no-ops).
    static let eventsApplied = Counter(label: "badgepipe_events_applied_total")
    /// Events in a committed batch, per batch.
    static let batchSize = Recorder(label: "badgepipe_batch_size")
    /// The time a batch's transaction took, retries and poison isolation included.
    static let batchTransaction = Timer(label: "badgepipe_batch_transaction_seconds")
    /// From an event's `occurred_at` to the commit of its batch (as far as the producer's clock agrees with ours).
    static let eventLag = Timer(label: "badgepipe_event_lag_seconds")

    /// Events parked in `badgepipe.dead`, by reason: the decoder's code (`invalid_json`, `missing_field`, …), or
    /// `refused_by_database`.
    static func eventsParked(reason: String) -> Counter {
        Counter(label: "badgepipe_events_parked_total", dimensions: [("reason", reason)])
    }

    /// Retries scheduled in the outbox (429, 5xx, timeouts, network errors).
    static let pushRetries = Counter(label: "badgepipe_push_retries_total")
    /// Pushes given up after failing for longer than the maximum age.
    static let pushesGivenUp = Counter(label: "badgepipe_pushes_given_up_total")
    /// Pushes a provider refused for good (dropped).
    static let pushesRejected = Counter(label: "badgepipe_pushes_rejected_total")
    /// Tokens a provider called unregistered (the device is deactivated).
    static let deadTokens = Counter(label: "badgepipe_dead_tokens_total")
    /// From the commit that planned a push (its outbox row) to the provider accepting it.
    static let pushLatency = Timer(label: "badgepipe_push_latency_seconds")
    /// Pushes refused unsent, by reason: outbox rows a claim could not read and moved to `refused_pushes`
    /// (`unknown_provider`, `unknown_event_type`, `bad_event`, `missing_value`, …; see `RefusedPush.Reason`), and
    /// pushes to a provider the deployment does not deliver to (`provider_not_configured`, removed from the outbox
    /// like a push refused for good, their device kept).
    static func pushesRefused(reason: String) -> Counter {
        Counter(label: "badgepipe_pushes_refused_total", dimensions: [("reason", reason)])
    }
    /// Dead tokens reported to the feedback exchange (confirmed by the broker).
    static let feedbackPublished = Counter(label: "badgepipe_token_feedback_published_total")
    /// Token feedback the broker returned unroutable (no queue bound to the feedback exchange takes its routing
    /// key): kept in the database and published again once its hold ends.
    static let feedbackReturned = Counter(label: "badgepipe_token_feedback_returned_total")
    /// Pushes claimed by delivery rounds.
    static let pushesClaimed = Counter(label: "badgepipe_pushes_claimed_total")

    /// Rows waiting in the outbox of a partition this worker holds (sampled).
    static func outboxDepth(partition: Int) -> Gauge {
        Gauge(label: "badgepipe_outbox_depth", dimensions: [("partition", String(partition))])
    }
    /// The age of the oldest row in that outbox, 0 when empty (sampled).
    static func outboxOldestAge(partition: Int) -> Gauge {
        Gauge(label: "badgepipe_outbox_oldest_age_seconds", dimensions: [("partition", String(partition))])
    }

    /// Partitions this worker consumes now.
    static let partitionsHeld = Gauge(label: "badgepipe_partitions_held")
    /// Lease rounds run (fleet mode).
    static let leaseRounds = Counter(label: "badgepipe_lease_rounds_total")
    /// Partitions this worker started under a new lease epoch (acquired, or taken over from another worker).
    static let leaseTakeovers = Counter(label: "badgepipe_lease_takeovers_total")
    /// Partitions this worker lost to another (its lease expired or was taken).
    static let leasesLost = Counter(label: "badgepipe_leases_lost_total")

    /// Broker sessions started again after the connection was lost.
    static let amqpReconnects = Counter(label: "badgepipe_amqp_reconnects_total")

    /// 1 while the database cannot write (read-only, full, out of resources), 0 otherwise: the worker holds its
    /// work and waits (see `Retry`).
    static let databaseUnavailable = Gauge(label: "badgepipe_database_unavailable")

    /// Database errors, by class (``StoreError/errorClass``).
    static func databaseErrors(_ error: StoreError) -> Counter {
        Counter(label: "badgepipe_database_errors_total", dimensions: [("class", error.errorClass)])
    }
}

extension Timer {
    /// Records `duration`.
    func record(duration: Duration) {
        let (seconds, attoseconds) = duration.components
        recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
