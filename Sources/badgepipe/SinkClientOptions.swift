import ArgumentParser
import AsyncHTTPClient
import BadgeWire
import Foundation
import NIOCore

/// Where a running sink is, for `badgepipe sink wait` and `badgepipe sink devices`.
struct SinkClientOptions: ParsableArguments {
    @Option(help: "The sink's URL (BADGEPIPE_SINK_URL, default http://127.0.0.1:8787).") var url: String?

    /// The base URL without a trailing slash.
    var baseURL: String {
        var url = Settings.value(self.url, "BADGEPIPE_SINK_URL", default: "http://127.0.0.1:8787")
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }

    /// `GET path` on the sink: the status and the body parsed as JSON (nil when it is not JSON).
    func get(_ path: String, timeout: TimeAmount) async throws -> (status: Int, json: JSONValue?) {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let response = try await client.execute(HTTPClientRequest(url: self.baseURL + path), timeout: timeout)
            let body = try await response.body.collect(upTo: 64 << 20)
            try await client.shutdown()
            return (Int(response.status.code), try? JSONValue.parse(Array(body.readableBytesView)))
        } catch {
            try? await client.shutdown()
            throw CommandError(code: .sinkUnreachable, message: "cannot ask the sink at \(self.baseURL): \(error)")
        }
    }

    /// `text` escaped for a URL query value.
    static func escaped(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .urlQueryValueAllowed) ?? text
    }
}

extension CharacterSet {
    /// The characters left as they are in a query value.
    static let urlQueryValueAllowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
}

/// A duration on the command line: `10s`, `500ms`, `2m`, or a number of seconds.
struct CommandDuration: ExpressibleByArgument {
    /// The length in seconds.
    let seconds: Double

    init?(argument: String) {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60)]
        var text = Substring(argument)
        var scale = 1.0
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            text = text.dropLast(suffix.count)
            scale = factor
            break
        }
        guard let value = Double(text), value >= 0, value.isFinite else { return nil }
        self.seconds = value * scale
    }
}
