import AsyncHTTPClient
import BadgeSink
import Foundation
import Logging
import ServiceLifecycle

/// A sink served on 127.0.0.1 with an ephemeral port for the duration of one test, and an HTTP client for it.
struct SinkHarness {
    let port: Int
    let state: SinkState

    struct HarnessError: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `body` against a sink that is shut down gracefully afterwards.
    static func withSink<Result>(
        seed: UInt64 = 20_240_601,
        _ body: (SinkHarness) async throws -> Result
    ) async throws -> Result {
        var logger = Logger(label: "badgesink-tests")
        logger.logLevel = .warning
        let state = SinkState(randomSeed: seed)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let server = SinkServer(
            configuration: SinkConfiguration(host: "127.0.0.1", port: 0),
            state: state,
            logger: logger,
            onRunning: { port in continuation.yield(port) }
        )
        let group = ServiceGroup(configuration: .init(services: [server], logger: logger))
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                defer { continuation.finish() }
                try await group.run()
            }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else {
                try await tasks.waitForAll()
                throw HarnessError(description: "the sink stopped before it listened")
            }
            do {
                let result = try await body(SinkHarness(port: port, state: state))
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
                return result
            } catch {
                await group.triggerGracefulShutdown()
                try? await tasks.waitForAll()
                throw error
            }
        }
    }

    /// An HTTP answer.
    struct Answer {
        let status: Int
        let headers: [String: String]
        let body: [UInt8]

        var text: String { String(decoding: self.body, as: UTF8.self) }

        /// The body parsed as a JSON object (empty when it is not one).
        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(self.body))) as? [String: Any] ?? [:]
        }
    }

    /// Sends one request to the sink.
    func send(
        _ method: String,
        _ path: String,
        body: [UInt8]? = nil,
        headers: [(String, String)] = []
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(self.port)\(path)")
        request.method = .init(rawValue: method)
        for (name, value) in headers {
            request.headers.add(name: name, value: value)
        }
        if let body {
            request.body = .bytes(body)
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let collected = try await response.body.collect(upTo: 1 << 30)
        var answerHeaders: [String: String] = [:]
        for header in response.headers {
            answerHeaders[header.name.lowercased()] = header.value
        }
        return Answer(
            status: Int(response.status.code),
            headers: answerHeaders,
            body: Array(collected.readableBytesView)
        )
    }

    /// Sends a request whose body is `json` text.
    func send(_ method: String, _ path: String, json: String, headers: [(String, String)] = []) async throws -> Answer {
        try await self.send(method, path, body: Array(json.utf8), headers: headers)
    }

    /// Pushes an APNs alert with a small payload to `token`.
    func pushAPNs(_ token: String, badge: Int = 1, headers: [(String, String)] = []) async throws -> Answer {
        let payload = "{\"aps\":{\"badge\":\(badge)},\"type\":\"follow\",\"badge_version\":\(badge)}"
        return try await self.send("POST", "/3/device/\(token)", json: payload, headers: headers)
    }

    /// Pushes an FCM v1 message to `token` in project `demo`.
    func pushFCM(_ token: String) async throws -> Answer {
        let payload = "{\"message\":{\"token\":\"\(token)\",\"data\":{\"badge\":\"1\"}}}"
        return try await self.send("POST", "/v1/projects/demo/messages:send", json: payload)
    }

    /// `GET /deliveries` with an optional query string, as parsed objects.
    func deliveries(_ query: String = "") async throws -> [[String: Any]] {
        let answer = try await self.send("GET", "/deliveries\(query)")
        guard answer.status == 200, let list = answer.json["deliveries"] as? [[String: Any]] else {
            throw HarnessError(description: "GET /deliveries\(query) answered \(answer.status): \(answer.text)")
        }
        return list
    }

    /// Adds a fault through `POST /faults`.
    func addFault(_ json: String) async throws {
        let answer = try await self.send("POST", "/faults", json: json)
        guard answer.status == 200 else {
            throw HarnessError(description: "POST /faults answered \(answer.status): \(answer.text)")
        }
    }
}
