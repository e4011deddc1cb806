import ArgumentParser
import BadgeWire
import Foundation

/// `badgepipe sink wait --token T --badge N --timeout 10s`: waits, in the sink, until the device shows the badge.
struct SinkWaitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Wait until a device shows a badge (exit 0), or print what it shows at the timeout (exit 1).",
        discussion: """
            The sink answers as soon as the condition holds (GET /devices/{token}?wait=…&badge=…); nothing polls.
            Example: badgepipe sink wait --token 3f2a… --badge 3 --timeout 10s
            """)

    @OptionGroup var sink: SinkClientOptions
    @Option(help: "The device token.") var token: String
    @Option(help: "The badge to wait for (default: any push to the device).") var badge: Int?
    @Option(help: "Only a push after this seq counts.") var after: Int?
    @Option(help: "How long to wait: 10s, 500ms, 2m (at most 5m).") var timeout = CommandDuration(argument: "10s")!

    func validate() throws {
        guard !token.isEmpty else { throw ValidationError("--token must not be empty") }
        guard timeout.seconds <= 300 else { throw ValidationError("--timeout must be at most 5m") }
    }

    func run() async throws {
        var path = "/devices/\(SinkClientOptions.escaped(token))?wait=\(timeout.seconds)"
        if let badge { path += "&badge=\(badge)" }
        if let after { path += "&after=\(after)" }
        let (status, json) = try await sink.get(path, timeout: .milliseconds(Int64(timeout.seconds * 1000) + 10_000))
        switch status {
        case 200:
            print("ok: \(Self.describe(json))")
        case 404:
            print("timeout: no push to \(token) after \(timeout.seconds) s")
            throw ExitCode(1)
        case 412:
            print("timeout: \(Self.describe(json))")
            throw ExitCode(1)
        default:
            let message = json?["error"]?["message"]?.stringValue ?? "status \(status)"
            throw CommandError(code: .sinkError, message: "the sink refused the wait: \(message)")
        }
    }

    /// One line: the device's badge, version, counters and last alert.
    static func describe(_ device: JSONValue?) -> String {
        guard let device else { return "(no answer)" }
        func number(_ key: String) -> String { device[key]?.int64Value.map { String($0) } ?? "-" }
        var line = "\(device["token"]?.stringValue ?? "?") badge=\(number("badge")) version=\(number("badge_version"))"
        line += " alerts=\(number("alerts")) badge_only=\(number("badge_only")) pushes=\(number("pushes"))"
        line += " failed=\(number("failed")) last_status=\(number("last_status"))"
        if let title = device["last_alert"]?["title"]?.stringValue {
            line += " last_alert=\(JSONValue.string(title).serializedString())"
        }
        return line
    }
}
