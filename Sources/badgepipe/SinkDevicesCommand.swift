import ArgumentParser
import BadgeWire
import Foundation

/// `badgepipe sink devices`: what each device shows, as a table.
struct SinkDevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices", abstract: "Print what each device at a running sink shows, one line each.")

    @OptionGroup var sink: SinkClientOptions

    func run() async throws {
        let (status, json) = try await sink.get("/devices", timeout: .seconds(30))
        guard status == 200, let devices = json?["devices"]?.arrayValue else {
            throw CommandError(code: .sinkError, message: "GET /devices answered \(status)")
        }
        print(Self.table(devices))
    }

    /// The rows under a header, columns padded to their widest cell.
    static func table(_ devices: [JSONValue]) -> String {
        let header = [
            "TOKEN", "PROVIDER", "ENV", "TOPIC", "BADGE", "VERSION", "ALERTS", "BADGE-ONLY", "PUSHES", "FAILED",
            "LAST ALERT",
        ]
        var rows = [header]
        for device in devices {
            func number(_ key: String) -> String { device[key]?.int64Value.map { String($0) } ?? "-" }
            func text(_ value: JSONValue?) -> String { value?.stringValue ?? "-" }
            rows.append([
                text(device["token"]), text(device["provider"]), text(device["environment"]), text(device["topic"]),
                number("badge"), number("badge_version"), number("alerts"), number("badge_only"), number("pushes"),
                number("failed"), text(device["last_alert"]?["title"]),
            ])
        }
        var widths = Array(repeating: 0, count: header.count)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n") + (devices.isEmpty ? "\n(no devices yet)" : "")
    }
}
