import ArgumentParser
import BadgePipeTesting
import Foundation

/// `badgepipe sink devices`: what each device shows, as a table.
struct SinkDevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices", abstract: "Print what each device at a running sink shows, one line each.")

    @OptionGroup var sink: SinkClientOptions

    func run() async throws {
        do {
            print(Self.table(try await sink.client.devices()))
        } catch let error as SinkClientError {
            throw error.commandError
        }
    }

    /// The rows under a header, columns padded to their widest cell.
    static func table(_ devices: [SinkDevice]) -> String {
        let header = [
            "TOKEN", "PROVIDER", "ENV", "TOPIC", "BADGE", "VERSION", "ALERTS", "BADGE-ONLY", "PUSHES", "FAILED",
            "LAST ALERT",
        ]
        var rows = [header]
        for device in devices {
            func number(_ value: Int?) -> String { value.map { String($0) } ?? "-" }
            rows.append([
                device.token, device.provider, device.environment ?? "-", device.topic ?? "-", number(device.badge),
                number(device.badgeVersion), number(device.alerts), number(device.badgeOnly), number(device.pushes),
                number(device.failed), device.lastAlert?.title ?? "-",
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
