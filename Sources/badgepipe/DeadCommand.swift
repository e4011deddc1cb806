import AMQPClient
import ArgumentParser
import BadgeWire
import BadgeWorker
import Foundation
import Logging

/// `badgepipe dead`: the messages parked in `badgepipe.dead`, listed, shown and replayed.
struct DeadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead",
        abstract: "List, show and replay the messages parked in the dead queue (badgepipe.dead).",
        discussion: """
            A worker parks a message it cannot apply (not JSON, an unknown type, too large, refused by the \
            database, …) in the durable queue <namespace>.dead, with its body and properties and the headers \
            x-badgepipe-reason (the class), x-badgepipe-error (one line), x-badgepipe-parked-at and \
            x-badgepipe-original-routing-key. Messages the broker dead-lettered from a partition queue (past its \
            delivery limit) are there too, with x-death.

            list and show read the queue without taking anything from it: a consumer receives the messages (at \
            most 65,535 a pass) without acknowledging them, and its channel is closed, which hands every one back, \
            in order. replay republishes the matching messages to the events exchange (see badgepipe dead replay \
            --help). Run one at a time: a second one is refused while one runs, and so is any while something else \
            consumes the dead queue.

            Examples:
              badgepipe dead list
              badgepipe dead list --reason unknown_type --since 2h --json
              badgepipe dead show 3
              badgepipe dead replay --type prayer_reminder --dry-run
              badgepipe dead replay --reason unknown_type
            """,
        subcommands: [DeadListCommand.self, DeadShowCommand.self, DeadReplayCommand.self])
}

/// The dead queue on the broker the options name.
extension BrokerOptions {
    /// Connects, and runs `body` on the dead queue; the connection is closed after, whatever happened.
    func withDeadQueue<Result: Sendable>(
        _ body: (DeadQueue) async throws -> Result
    ) async throws -> Result {
        let configuration = try configuration()
        // The broker closing a channel is how a missing queue shows: the command says so itself, once.
        var logger = Logger(label: "amqp")
        logger.logLevel = .error
        let connection = try await AMQPConnection.connect(configuration, logger: logger)
        if configuration.nodes.count > 1 {
            FileHandle.standardError.write(Data("connected to the broker node \(connection.node)\n".utf8))
        }
        do {
            let result = try await body(DeadQueue(connection: connection, topology: topology()))
            await connection.close()
            return result
        } catch {
            await connection.close()
            throw error
        }
    }
}

/// The filters `list` and `replay` share.
struct ParkedFilterOptions: ParsableArguments {
    @Option(
        name: .customLong("reason"),
        help: "Only this reason class (unknown_type, invalid_json, too_large, refused_by_database, …); repeatable.")
    var reasons: [String] = []
    @Option(name: .customLong("type"), help: "Only events of this type (the body's \"type\"); repeatable.")
    var types: [String] = []
    @Option(name: .customLong("id"), help: "Only the message with this message id or event id; repeatable.")
    var ids: [String] = []
    @Option(help: "Only those parked at or after this time: RFC 3339, or an age such as 90s, 15m, 2h, 7d.")
    var since: String?
    @Option(help: "Only those parked before this time: RFC 3339, or an age such as 90s, 15m, 2h, 7d.")
    var until: String?
    @Option(help: "At most this many messages.") var limit: Int?

    /// The filter, with ages counted back from `now`.
    func filter(now: Timestamp = .now()) throws -> ParkedFilter {
        func time(_ text: String?, _ flag: String) throws -> Timestamp? {
            guard let text else { return nil }
            guard let time = ParkedFilter.time(text, now: now) else {
                throw ValidationError("\(flag) must be an RFC 3339 time or an age such as 15m, 2h, 7d, not \"\(text)\"")
            }
            return time
        }
        return ParkedFilter(
            reasons: Set(reasons), types: Set(types), ids: Set(ids), since: try time(since, "--since"),
            until: try time(until, "--until"))
    }

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1, not \(limit)") }
    }
}

/// `badgepipe dead list`.
struct DeadListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the parked messages, oldest first, leaving them in the queue.",
        discussion: """
            Columns: the position in the queue (1 is the oldest; replaying moves the others up), the message id \
            (else the event id), the event type (when the body is JSON with a "type"), the reason class, when it \
            was parked, and the error. --json prints one JSON object a line instead. A summary goes to stderr.

            Each listing hands the messages out and back: their x-delivery-count goes up by one. badgepipe.dead \
            has no delivery limit, so nothing is ever dropped for it; on RabbitMQ 4.0 to 4.2, whose quorum queues \
            have a limit of 20 by default, give it a delivery-limit policy of -1.
            """)

    @OptionGroup var broker: BrokerOptions
    @OptionGroup var filters: ParkedFilterOptions
    @Flag(help: "One JSON object a line (NDJSON) instead of a table.") var json = false

    func run() async throws {
        let filter = try filters.filter()
        let limit = filters.limit
        let json = self.json
        let (rows, matched, scan) = try await broker.withDeadQueue { queue in
            var rows: [ParkedRow] = []
            var matched = 0
            let scan = try await queue.scan { message in
                guard filter.matches(message) else { return true }
                matched += 1
                let row = ParkedRow(message)
                if json { print(row.json.serializedString()) } else { rows.append(row) }
                return limit.map { matched < $0 } ?? true
            }
            return (rows, matched, scan)
        }
        if !json { print(ParkedRow.table(rows), terminator: "") }
        var note = ""
        if limit == matched {
            note = " (--limit reached)"
        } else if scan.read < scan.held {
            note = "; \(scan.held - scan.read) more not read (at most 65,535 a pass)"
        }
        standardError("\(matched) of the \(scan.read) parked messages read match\(note)")
    }
}

/// `badgepipe dead show`.
struct DeadShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show parked messages with their headers and body, leaving them in the queue.",
        discussion: """
            ID is a message id or an event id (every message that carries it is shown), or else a position as \
            badgepipe dead list numbers them.
            """)

    @OptionGroup var broker: BrokerOptions
    @Argument(help: "A message id, an event id, or a position in the queue.") var id: String
    @Flag(help: "One JSON object a line instead of text.") var json = false

    func run() async throws {
        let id = self.id
        let position = Int(id)
        let (named, positioned) = try await broker.withDeadQueue { queue in
            var named: [ParkedMessage] = []
            var positioned: ParkedMessage?
            try await queue.scan { message in
                if message.isNamed(id) { named.append(message) }
                if message.position == position { positioned = message }
                return true
            }
            return (named, positioned)
        }
        let shown = named.isEmpty ? positioned.map { [$0] } ?? [] : named
        guard !shown.isEmpty else {
            throw CommandError(code: .notFound, message: "no parked message has the id or position \(id)")
        }
        for (index, message) in shown.enumerated() {
            if json {
                print(ParkedRow.detailJSON(message).serializedString())
            } else {
                if index > 0 { print("") }
                print(ParkedRow.detail(message), terminator: "")
            }
        }
    }
}

/// `badgepipe dead replay`.
struct DeadReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Republish matching parked messages to the events exchange, then remove them from the dead queue.",
        discussion: """
            Each matching message goes to <namespace>.events with its original routing key (its recipient), body \
            and properties (without the x-badgepipe-* headers and what the broker added), mandatory and through \
            publisher confirms, in queue order. Only after the broker confirmed it is it removed from the dead \
            queue. Messages that do not match stay, in order. A message that nothing tells the routing key of \
            stays, and is named.

            Replaying twice has one effect: a replayed message is gone from the dead queue, so the next replay does \
            not find it. If replay dies between a confirm and the removal, that message is still parked and the \
            next replay publishes it again: the worker applies an event once whatever the number of copies (it \
            keeps the ids of the events it applied, for --retention-days). A worker that still cannot apply a \
            message parks it again, with a new time. Only what the queue held when replay started is read, at \
            most 65,535 messages: run it again for the rest of a larger queue.

            That holds within the idempotency window, the workers' --retention-days: past it, a worker may have \
            purged the event's processed id (a copy applied before would apply again) or a read tombstone (a \
            notification read before it arrived would come back unread). A message whose event occurred, or that \
            was parked, longer ago than that (the earlier of the two) stays, and is named with its age, unless \
            --force.

            Exit status 1 when the broker did not confirm a republish: that message and the later ones stay parked.
            """)

    @OptionGroup var broker: BrokerOptions
    @OptionGroup var filters: ParkedFilterOptions
    @Flag(help: "Print what would be replayed; publish and remove nothing.") var dryRun = false
    @Flag(help: "Replay messages older than the idempotency window too (see --retention-days).") var force = false
    @Option(
        help: """
            The workers' --retention-days (\(WorkerSettings.retentionDays.variable), default \
            \(WorkerSettings.retentionDays.defaultValue); 0: they keep everything): a message whose event occurred, or that was parked, longer ago than that is \
            left unless --force.
            """)
    var retentionDays: Int?

    func run() async throws {
        let filter = try filters.filter()
        let (limit, dryRun) = (filters.limit, self.dryRun)
        let days = try WorkerSettings.retentionDays.value(retentionDays)
        // 0 keeps everything for ever: no window.
        let window = force || days == 0 ? nil : Retention.Configuration.age(days: days)
        let (summary, deadQueue) = try await broker.withDeadQueue { queue in
            let summary = try await queue.replay(filter, limit: limit, dryRun: dryRun, idempotencyWindow: window) {
                message, outcome in
                let row = ParkedRow(message)
                let what =
                    switch outcome {
                    case .replayed: "replayed"
                    case .wouldReplay: "would replay"
                    case .noRoutingKey: "left (no original routing key)"
                    case .tooOld(let age):
                        "left (\(age.components.seconds / 86_400) days old, older than the \(days)-day idempotency "
                            + "window: its processed id or a read tombstone may be purged, so replaying it could "
                            + "apply it twice or undo a read; --force replays it anyway)"
                    }
                print("\(what) \(row.position) \(row.id) type=\(row.type) reason=\(row.reason)")
            }
            return (summary, queue.topology.deadQueueName)
        }
        let verb = dryRun ? "would replay" : "replayed"
        var tail = "\(summary.skipped) without a routing key"
        if summary.tooOld > 0 { tail += " and \(summary.tooOld) older than \(days) days (--force replays them)" }
        standardError(
            "\(verb) \(summary.replayed) of \(summary.matched) matching parked messages (\(summary.read) read of "
                + "the \(summary.held) held); \(tail) left in \(deadQueue)")
    }
}
