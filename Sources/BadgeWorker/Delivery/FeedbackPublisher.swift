import AMQPClient
import BadgeStore
import BadgeSupport
import BadgeWire
import Foundation
import Logging

/// Reports dead tokens back to the producers (contract v1.1, token feedback): publishes each entry of the store's
/// `token_feedback` to the feedback exchange as one persistent JSON message, with confirms, and deletes it only
/// once the broker confirmed it.
///
/// An entry is written in the transaction that deactivates the token (``DeliveryRecord/feedback``), so a
/// deactivation is never without its report: when the broker is away (or the worker dies) the entry waits in the
/// table and is published once a broker session runs again, by this worker or another. Delivery is at least once: an
/// entry published but not deleted (the worker died between the confirm and the delete, or its hold ran out while
/// it was publishing) is published again; each message carries the entry's `message_id`, and a consumer that
/// must not see one twice drops repeats by it (its content is a fact about a token, harmless to read twice).
///
/// Every message is published `mandatory`: with no queue bound to the exchange for its routing key the broker would
/// otherwise confirm it and drop it, and the entry would be deleted unread. A returned message is kept (its entry
/// stays in the table, bounded by the tokens there are, and is published again once its hold ends), counted in
/// `badgepipe_token_feedback_returned_total`, and logged once until feedback goes through again; the channel is
/// kept.
///
/// The delivery stage rings it after each record with dead tokens, and the worker's session whenever it acquires a
/// partition (whose previous owner may have died with entries unpublished); it looks at once when it starts (entries
/// left while the broker was away). After a pass that took everything free, it sleeps until the earliest entry
/// another publisher holds is free again (``PipelineStore/feedbackAhead()``), or until rung: no timer runs while nothing
/// waits. Each broker session runs it on a channel of its own (`WorkerSession`).
final class FeedbackPublisher: Sendable {
    /// The most entries taken and published at once.
    static let batchLimit = 100
    /// How long taken entries are this publisher's by default: after that, another publisher (of this worker's
    /// next broker session, or of another worker) takes what is left of them.
    static let defaultHold = Duration.seconds(30)
    /// The longest wait between failed passes, by default.
    static let defaultRetryCeiling = Duration.seconds(5)
    /// The shortest wait before it looks again when an entry is free but its pass took none (held by a take in
    /// progress elsewhere, which is about to commit).
    static let freeEntryRecheck = Duration.milliseconds(100)

    private let store: any PipelineStore
    private let exchange: String
    let hold: Duration
    let retryCeiling: Duration
    private let logger: Logger
    private let doorbell = Doorbell()

    /// A publisher of `store`'s feedback to `exchange` (``Topology/feedbackExchange``).
    init(
        store: any PipelineStore, exchange: String, hold: Duration = FeedbackPublisher.defaultHold,
        retryCeiling: Duration = FeedbackPublisher.defaultRetryCeiling, logger: Logger
    ) {
        self.store = store
        self.exchange = exchange
        self.hold = hold
        self.retryCeiling = retryCeiling
        self.logger = logger
    }

    /// Dead tokens were recorded: publish them now.
    func ring() { doorbell.ring() }

    /// Publishes on a channel of `connection` (in confirm mode) until the task is cancelled or the connection ends:
    /// what is waiting at once, then whenever rung or an entry's hold ends. The channel is kept while the database
    /// fails (a database that cannot write now is waited for, with a backoff up to ``retryCeiling``, and opens no channel:
    /// channels opened in a loop are what RabbitMQ counts against its queues' delivery limits); a failure of the
    /// channel itself is tried again a second later on a new one. Entries taken and not confirmed wait for their
    /// hold and are taken again. Each failure is logged once until a batch goes through again.
    func run(on connection: AMQPConnection) async {
        var channel: AMQPChannel?
        var failing = false
        // The waits between failed passes.
        let backoff = Backoff.feedbackRetry(upTo: retryCeiling)
        var failures = 0
        while !Task.isCancelled, !connection.isClosed {
            do {
                let open: AMQPChannel
                if let channel {
                    open = channel
                } else {
                    open = try await connection.openChannel()
                    try await open.confirmSelect()
                    channel = open
                }
                try await publish(on: open) {
                    failing = false
                    failures = 0
                }
            } catch is CancellationError {
                return
            } catch {
                guard !Task.isCancelled, !connection.isClosed else { return }
                let returned = (error as? AMQPError)?.code == .publishReturned
                if !(error is StoreError), !returned { channel = nil }
                if !failing {
                    if returned {
                        logger.warning(
                            """
                            token feedback returned unroutable: no queue is bound to the feedback exchange for it; \
                            it waits in the database and is published again
                            """,
                            metadata: ["feedback.exchange": "\(exchange)", "feedback.error": "\(error)"])
                    } else {
                        logger.warning(
                            "token feedback not published; it waits in the database",
                            metadata: ["feedback.error": "\(error)"])
                    }
                    failing = true
                }
                failures += 1
                try? await Task.sleep(for: backoff.delay(attempt: failures))
            }
        }
    }

    /// Publishes on `channel` (in confirm mode) until the task is cancelled, calling `succeeded` after each pass that
    /// went through; throws what stopped it otherwise.
    func publish(on channel: AMQPChannel, succeeded: () -> Void = {}) async throws {
        while !Task.isCancelled {
            // Rings from here on are for entries this pass may not see.
            let rings = doorbell.rings
            while try await publishOnce(channel: channel) == Self.batchLimit {}
            succeeded()
            let freeIn = try await store.feedbackAhead()
            // The session's end cancels this task: the wait is rung, and the loop sees the cancellation.
            await doorbell.wait(
                upTo: freeIn.map { max($0, Self.freeEntryRecheck) }, ringsSeen: rings, ringOnCancel: true)
        }
    }

    /// Takes one batch, publishes it with confirms and deletes what the broker confirmed; returns how many it took.
    func publishOnce(channel: AMQPChannel) async throws -> Int {
        let taken = try await store.takeFeedback(limit: Self.batchLimit, hold: hold)
        guard !taken.isEmpty else { return 0 }
        let confirmations = taken.map { entry in
            channel.publishInOrder(
                Self.body(entry), exchange: exchange, routingKey: Self.routingKey(entry.feedback), mandatory: true,
                properties: AMQPProperties(
                    contentType: "application/json", deliveryMode: .persistent,
                    messageID: "token-feedback-\(entry.id)-\(entry.recordedAt)", type: "token_feedback"))
        }
        var confirmed: [Int64] = []
        var returned = 0
        var failure: (any Error)?
        for (entry, confirmation) in zip(taken, confirmations) {
            do {
                try await confirmation.wait()
                confirmed.append(entry.id)
            } catch {
                if (error as? AMQPError)?.code == .publishReturned { returned += 1 }
                if failure == nil { failure = error }
            }
        }
        if returned > 0 { WorkerMetrics.feedbackReturned.increment(by: returned) }
        try await store.deleteFeedback(confirmed)
        WorkerMetrics.feedbackPublished.increment(by: confirmed.count)
        if let failure { throw failure }
        return taken.count
    }

    /// `<provider>.<reason>`, the reason's dots and spaces made underscores (a topic key's words are dot-separated).
    static func routingKey(_ feedback: TokenFeedback) -> String {
        let reason = String(feedback.reason.map { $0 == "." || $0 == " " ? "_" : $0 })
        return "\(feedback.provider.rawValue).\(reason)"
    }

    /// The message: `{"token", "provider", "app"?, "reason", "provider_timestamp"?, "at"}`, times in RFC 3339 UTC
    /// to the millisecond (`at`: when the deactivation was recorded, by the database's clock).
    static func body(_ entry: StoredTokenFeedback) -> [UInt8] {
        let feedback = entry.feedback
        var members: [(key: String, value: JSONValue)] = [
            (key: "token", value: .string(feedback.token)),
            (key: "provider", value: .string(feedback.provider.rawValue)),
        ]
        if let app = feedback.app { members.append((key: "app", value: .string(app))) }
        members.append((key: "reason", value: .string(feedback.reason)))
        if let stamp = feedback.providerTimestamp {
            members.append((key: "provider_timestamp", value: .string(Self.rfc3339(microseconds: stamp))))
        }
        members.append((key: "at", value: .string(Self.rfc3339(microseconds: entry.recordedAt))))
        return JSONValue.object(members).serialized()
    }

    static func rfc3339(microseconds: Int64) -> String {
        Timestamp(microsecondsSinceEpoch: microseconds).rfc3339Milliseconds
    }
}
