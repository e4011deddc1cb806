import ArgumentParser
import BadgePipeTesting
import BadgeWire

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
        do {
            let device = try await sink.client.waitForBadge(
                badge, token: token, after: after, timeout: timeout.duration)
            print("ok: \(Self.describe(device))")
        } catch let error as SinkClientError where error.code == .timeout {
            if let device = error.device {
                print("timeout: \(Self.describe(device))")
            } else {
                print("timeout: no push to \(token) after \(timeout.seconds) s")
            }
            throw ExitCode(1)
        } catch let error as SinkClientError {
            throw error.commandError
        }
    }

    /// One line: the device's badge, version, counters and last alert.
    static func describe(_ device: SinkDevice) -> String {
        func number(_ value: Int?) -> String { value.map { String($0) } ?? "-" }
        var line = "\(device.token) badge=\(number(device.badge)) version=\(number(device.badgeVersion))"
        line += " alerts=\(device.alerts) badge_only=\(device.badgeOnly) pushes=\(device.pushes)"
        line += " failed=\(device.failed) last_status=\(device.lastStatus)"
        if let title = device.lastAlert?.title { line += " last_alert=\(JSONValue.string(title).serializedString())" }
        return line
    }
}
