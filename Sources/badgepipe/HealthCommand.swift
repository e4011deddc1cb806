import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore

/// `badgepipe health`: asks a worker's operations listener whether it is ready (or alive), for container health
/// checks in images without curl. Exit status 0 when the answer is 200, 1 otherwise, with the answer's body.
struct HealthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Ask a worker's /readyz (or /healthz with --live); exit 0 when it answers 200.")

    @Option(help: "The operations listener (default http://127.0.0.1:$BADGEPIPE_METRICS_PORT).") var url: String?
    @Flag(help: "Ask /healthz (alive) instead of /readyz (ready).") var live = false

    func run() async throws {
        let base: String
        if let url {
            base = url
        } else if let port = Settings.optional(nil, "BADGEPIPE_METRICS_PORT") {
            // The listener's own address, unless it listens on every address.
            let host = Settings.value(nil, "BADGEPIPE_METRICS_HOST", default: "127.0.0.1")
            let reachable = ["0.0.0.0", "::", "[::]", ""].contains(host) ? "127.0.0.1" : host
            base =
                "http://\(reachable.contains(":") && !reachable.hasPrefix("[") ? "[\(reachable)]" : reachable):\(port)"
        } else {
            throw ValidationError("--url or BADGEPIPE_METRICS_PORT: which listener to ask")
        }
        let target = base.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + (live ? "/healthz" : "/readyz")
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var answer: (status: UInt, body: String)?
        var failure: (any Error)?
        do {
            let response = try await client.execute(HTTPClientRequest(url: target), timeout: .seconds(5))
            let body = try await response.body.collect(upTo: 64 * 1024)
            answer = (response.status.code, String(buffer: body))
        } catch {
            failure = error
        }
        try await client.shutdown()
        guard let answer else { throw ValidationError("\(target): \(failure.map { "\($0)" } ?? "no answer")") }
        print(answer.body)
        if answer.status != 200 { throw ExitCode(1) }
    }
}
