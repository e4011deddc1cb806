import AsyncHTTPClient
import BadgeSink
import Foundation
import Logging
import NIOSSL
import ServiceLifecycle

/// A sink served on 127.0.0.1 with an ephemeral port for the duration of one test, and an HTTP client for it.
struct SinkHarness {
    let port: Int
    let state: SinkState
    /// `http://127.0.0.1:PORT`, or `https://…` with TLS.
    let baseURL: String
    /// The client requests go out on (HTTP/2 over TLS unless asked for HTTP/1.1).
    let client: HTTPClient

    struct HarnessError: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `body` against a sink that is shut down gracefully afterwards.
    /// With `configuration` (its host and port are replaced by 127.0.0.1 and an ephemeral port). With TLS the
    /// client trusts the sink's certificate and speaks HTTP/2, or HTTP/1.1 when `http1Only`.
    static func withSink<Result>(
        seed: UInt64 = 20_240_601,
        configuration: SinkConfiguration = SinkConfiguration(),
        http1Only: Bool = false,
        _ body: (SinkHarness) async throws -> Result
    ) async throws -> Result {
        var logger = Logger(label: "badgesink-tests")
        logger.logLevel = .warning
        var configuration = configuration
        configuration.host = "127.0.0.1"
        configuration.port = 0
        let state = SinkState(randomSeed: seed, maxDeliveries: configuration.maxDeliveries)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let server = try SinkServer(
            configuration: configuration,
            state: state,
            logger: logger,
            onRunning: { port in continuation.yield(port) }
        )
        let client: HTTPClient
        if let certificate = configuration.tlsCertificateFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(certificate)]
            var http = HTTPClient.Configuration(tlsConfiguration: tls)
            if http1Only { http.httpVersion = .http1Only }
            client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: http)
        } else {
            client = HTTPClient.shared
        }
        let scheme = configuration.tlsCertificateFile == nil ? "http" : "https"
        let group = ServiceGroup(configuration: .init(services: [server], logger: logger))
        let ownsClient = configuration.tlsCertificateFile != nil
        do {
            let result = try await Self.serve(group, ports, continuation, state, scheme, client, body)
            if ownsClient { try? await client.shutdown() }
            return result
        } catch {
            if ownsClient { try? await client.shutdown() }
            throw error
        }
    }

    private static func serve<Result>(
        _ group: ServiceGroup, _ ports: AsyncStream<Int>, _ continuation: AsyncStream<Int>.Continuation,
        _ state: SinkState, _ scheme: String, _ client: HTTPClient, _ body: (SinkHarness) async throws -> Result
    ) async throws -> Result {
        try await withThrowingTaskGroup(of: Void.self) { tasks in
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
                let result = try await body(
                    SinkHarness(port: port, state: state, baseURL: "\(scheme)://127.0.0.1:\(port)", client: client))
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
        var request = HTTPClientRequest(url: self.baseURL + path)
        request.method = .init(rawValue: method)
        for (name, value) in headers {
            request.headers.add(name: name, value: value)
        }
        if let body {
            request.body = .bytes(body)
        }
        let response = try await self.client.execute(request, timeout: .seconds(30))
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
