import AMQPClient
import ArgumentParser
import BadgeCore
import BadgeWire
import BadgeWorker
import Foundation
import Logging

/// `badgepipe publish`: one event from flags or a file, a contract scenario file, or a generated load — always with
/// `mandatory` and publisher confirms, reporting every event the broker did not take.
struct PublishCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Publish events: one from flags, a JSON file, a scenario file, or a generated load.",
        discussion: """
            Examples:
              badgepipe publish --type follow --recipient u-alice --actor-id u-bob --actor-name Bob
              badgepipe publish --file event.json          (one event object, an array of them, or one a line)
              jq -c '.[]' events.json | badgepipe publish --file -   (standard input)
              badgepipe publish --scenario scenario.json   (the contract's scenario format; publish steps in order)
              badgepipe publish --count 20000 --rate 5000 --users 500
            """)

    @OptionGroup var broker: BrokerOptions
    @Option(help: "A JSON file with one event, an array of events, or one event a line (NDJSON); - for stdin.")
    var file: String?
    @Option(help: "A scenario file (contract format).") var scenario: String?

    @Option(help: "Event type, for one event from flags.") var type: String?
    @Option(help: "Recipient user id.") var recipient: String?
    @Option(help: "Event id (default: generated).") var id: String?
    @Option(help: "RFC 3339 time (default: now).") var occurredAt: String?
    @Option(help: "Actor id.") var actorID: String?
    @Option(help: "Actor display name (default: the actor id).") var actorName: String?
    @Option(help: "Actor username.") var actorUsername: String?
    @Option(help: "Post id.") var postID: String?
    @Option(help: "Comment id (comment).") var commentID: String?
    @Option(help: "Title (prayer_reminder).") var title: String?
    @Option(help: "Text (comment, mention, message, reminder).") var text: String?
    @Option(help: "Conversation id.") var conversationID: String?
    @Option(help: "Message id (message).") var messageID: String?
    @Option(help: "RFC 3339 watermark (notifications_read_all, notifications_opened, conversation_read).")
    var until: String?
    @Option(help: "Notification ids, comma separated (notification_read).") var notificationIDs: String?
    @Option(help: "Device token (device_registered / device_unregistered).") var token: String?
    @Option(help: "apns or fcm (device_registered).") var provider: String?
    @Option(help: "APNs topic of the device (device_registered; default: the workers' --apns-topic).")
    var topic: String?
    @Option(help: "production or sandbox (device_registered, APNs).") var environment: String?
    @Option(help: "true or false (preferences_updated).") var badgeEnabled: Bool?
    @Option(help: "true or false (preferences_updated).") var previews: Bool?

    @Option(help: "Generate this many events (load mode).") var count: Int?
    @Option(help: "Events per second in load mode (default: as fast as confirms allow).") var rate: Double?
    @Option(help: "Distinct recipients in load mode.") var users: Int = 100
    @Option(help: "Random seed in load mode.") var seed: UInt64 = 1
    @Flag(
        help: """
            Load mode: one user receives everything. After the devices' registrations, every event is a follow of \
            load-u0, each by a follower of its own (fan-1, fan-2, …).
            """)
    var celebrity = false
    @Option(help: "Unconfirmed publishes in flight.") var window: Int = 1000
    @Flag(
        name: .customLong("print"),
        help: "Print each event's body (one JSON object a line) instead of publishing; no broker needed.")
    var printOnly = false

    func run() async throws {
        let events = try collectEvents()
        // The events in publishing order: a generated load, or those collected.
        let total = count ?? events.count
        let next: () -> OutgoingEvent
        if count != nil {
            var generator = LoadGenerator(users: max(1, users), seed: seed, celebrity: celebrity)
            next = { generator.next() }
        } else {
            var iterator = events.makeIterator()
            next = { iterator.next()! }
        }
        if printOnly {
            for _ in 0..<total { print(String(decoding: next().body, as: UTF8.self)) }
            return
        }
        let publisher = EventPublisher(
            nodes: AMQPNodeRotation(try broker.configuration()), window: window, exchange: broker.topology().exchange,
            logger: Logger(label: "publish"))
        let generated = count != nil
        let report = try await publisher.publish(
            count: total, rate: generated ? rate : nil, progress: generated, next: next)
        print(report.summary)
        for failure in report.failures.prefix(20) { print("  not confirmed: \(failure)") }
        if !report.failures.isEmpty { throw ExitCode(1) }
    }

    private func collectEvents() throws -> [OutgoingEvent] {
        if count != nil { return [] }
        if let scenario {
            let json = try Self.parseJSON(try Self.readInput(scenario), name: scenario)
            guard let steps = json["steps"]?.arrayValue else {
                throw CommandError(code: .badScenario, message: "\(scenario): no \"steps\" array")
            }
            return warningAboutInvalid(steps.compactMap { $0["publish"] }.map(OutgoingEvent.init(json:)))
        }
        if let file {
            return warningAboutInvalid(try Self.events(in: try Self.readInput(file), name: file))
        }
        return [OutgoingEvent(event: try eventFromFlags())]
    }

    /// Events from a file or a scenario are published as they are, valid or not (publishing invalid events on
    /// purpose is how the dead queue is tested), but each one the contract calls invalid is named on stderr, so
    /// that a typo is seen now rather than found parked in the dead queue later.
    private func warningAboutInvalid(_ events: [OutgoingEvent]) -> [OutgoingEvent] {
        var invalid = 0
        for (index, event) in events.enumerated() {
            guard case .failure(let problem) = EventDecoder.decode(body: event.body, contentType: "application/json")
            else { continue }
            invalid += 1
            if invalid <= 20 {
                let name = event.id.isEmpty ? "without an id" : JSONValue.quotedForMessage(event.id)
                FileHandle.standardError.write(
                    Data("warning: event \(index + 1) (\(name)) is invalid: \(problem.message)\n".utf8))
            }
        }
        guard invalid > 0 else { return events }
        let summary =
            "warning: \(invalid) of \(events.count) events are invalid; they are published anyway, and the workers "
            + "park them in the dead queue with their reason\n"
        FileHandle.standardError.write(Data(summary.utf8))
        return events
    }

    private func eventFromFlags() throws -> Event {
        guard let typeText = type, let eventType = EventType(rawValue: typeText) else {
            throw CommandError(
                code: .missingType,
                message: "give --type (one of \(EventType.allCases.map(\.rawValue).joined(separator: ", "))),"
                    + " or --file, --scenario or --count")
        }
        guard let recipient else { throw CommandError(code: .missingRecipient, message: "give --recipient") }
        func time(_ text: String?, _ flag: String) throws -> Timestamp? {
            try text.map {
                guard let time = Timestamp.parse($0) else {
                    throw CommandError(code: .badTime, message: "\(flag) is not an RFC 3339 timestamp")
                }
                return time
            }
        }
        func value<T: RawRepresentable<String>>(_ text: String?, _ flag: String, _ allowed: String) throws -> T? {
            try text.map {
                guard let value = T(rawValue: $0) else {
                    throw CommandError(code: .badValue, message: "\(flag) is \(allowed), not \($0)")
                }
                return value
            }
        }
        let device = try token.map {
            DeviceInfo(
                token: $0, provider: try value(provider, "--provider", "apns or fcm"), topic: topic,
                environment: try value(environment, "--environment", "production or sandbox"))
        }
        let event = Event(
            id: id ?? "evt-\(UInt64.random(in: 0...UInt64.max))",
            type: eventType,
            recipient: recipient,
            occurredAt: try time(occurredAt, "--occurred-at") ?? Timestamp.now(),
            actor: actorID.map { EventActor(id: $0, name: actorName ?? $0, username: actorUsername) },
            postID: postID,
            commentID: commentID,
            conversationID: conversationID,
            messageID: messageID,
            title: title,
            text: text,
            until: try time(until, "--until"),
            notificationIDs: notificationIDs?.split(separator: ",").map(String.init) ?? [],
            device: device,
            preferences: badgeEnabled == nil && previews == nil
                ? nil : PreferencesChange(badgeEnabled: badgeEnabled, previews: previews))
        // Check it here so a typo is reported now rather than parked by the worker.
        if case .failure(let invalid) = EventDecoder.decode(body: event.jsonData(), contentType: nil) {
            throw CommandError(
                code: CommandError.Code(invalid.code.rawValue),
                message: "the event would be invalid: \(invalid.message)")
        }
        return event
    }
}

extension PublishCommand {
    /// The largest input read: 1 GiB.
    static let maximumInputBytes = 1 << 30

    /// The bytes of `path`, or of standard input for `-`, read from the file descriptor so that pipes
    /// (`--file -`, `--file <(…)`) work as well as files.
    /// - Throws: a one-line ``CommandError`` when it cannot be opened or read.
    static func readInput(_ path: String) throws -> [UInt8] {
        let descriptor = path == "-" ? 0 : open(path, O_RDONLY)
        guard descriptor >= 0 else {
            throw CommandError(code: .unreadableFile, message: "cannot open \(path): \(Self.errorText(errno))")
        }
        defer { if descriptor != 0 { close(descriptor) } }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw CommandError(code: .unreadableFile, message: "cannot read \(path): \(Self.errorText(errno))")
            }
            bytes.append(contentsOf: chunk[0..<count])
            guard bytes.count <= Self.maximumInputBytes else {
                throw CommandError(code: .unreadableFile, message: "\(path) is over 1 GiB")
            }
        }
        return bytes
    }

    /// The events of an input: one JSON object, a JSON array of them, or one object a line (NDJSON).
    /// - Throws: a one-line ``CommandError`` naming the input (and the line, for NDJSON) when it is neither.
    static func events(in bytes: [UInt8], name: String) throws -> [OutgoingEvent] {
        if let json = try? JSONValue.parse(bytes) {
            return (json.arrayValue ?? [json]).map(OutgoingEvent.init(json:))
        }
        var events: [OutgoingEvent] = []
        for (index, line) in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
            guard trimmed.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { continue }
            do {
                events.append(OutgoingEvent(json: try JSONValue.parse(Array(trimmed))))
            } catch {
                throw CommandError(
                    code: .badFile,
                    message: "\(name) is neither JSON nor one JSON event a line: line \(index + 1): \(error)")
            }
        }
        guard !events.isEmpty else {
            throw CommandError(code: .badFile, message: "\(name) holds no event")
        }
        return events
    }

    /// A whole input parsed as one JSON text.
    static func parseJSON(_ bytes: [UInt8], name: String) throws -> JSONValue {
        do {
            return try JSONValue.parse(bytes)
        } catch {
            throw CommandError(code: .badFile, message: "\(name) is not JSON: \(error)")
        }
    }

    private static func errorText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
