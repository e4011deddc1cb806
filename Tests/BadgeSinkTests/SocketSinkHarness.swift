import AsyncHTTPClient
import BadgeSink
import Foundation
import Logging
import NIOSSL
import ServiceLifecycle

/// A sink served over TLS on 127.0.0.1 with an ephemeral port for the duration of one test, and an HTTP client
/// for it: for the tests where the socket is the point (HTTP/2 or HTTP/1.1 by ALPN, credentials over TLS). Route
/// tests use ``SinkHarness``, which serves the routes in process.
struct SocketSinkHarness: SinkClient {
    let port: Int
    let state: SinkState
    /// `http://127.0.0.1:PORT`, or `https://…` with TLS.
    let baseURL: String
    /// The client requests go out on (HTTP/2 over TLS unless asked for HTTP/1.1).
    let client: HTTPClient

    /// Runs `body` against a sink that is shut down gracefully afterwards.
    /// With `configuration` (its host and port are replaced by 127.0.0.1 and an ephemeral port). With a TLS
    /// certificate and key, the client trusts the sink's certificate and speaks HTTP/2, or HTTP/1.1 when
    /// `http1Only`; without, plain HTTP/1.1.
    static func withSink<Result>(
        seed: UInt64 = 20_240_601,
        configuration: SinkConfiguration = SinkConfiguration(),
        http1Only: Bool = false,
        _ body: (SocketSinkHarness) async throws -> Result
    ) async throws -> Result {
        var logger = Logger(label: "badgesink-tests")
        logger.logLevel = .warning
        var configuration = configuration
        configuration.host = "127.0.0.1"
        configuration.port = 0
        let state = SinkState(configuration: configuration, randomSeed: seed)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let server = try SinkServer(
            configuration: configuration,
            state: state,
            logger: logger,
            onRunning: { port in continuation.yield(port) }
        )
        var http = HTTPClient.Configuration()
        if let certificate = configuration.tlsCertificateFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(certificate)]
            http = HTTPClient.Configuration(tlsConfiguration: tls)
        }
        if http1Only { http.httpVersion = .http1Only }
        let scheme = configuration.tlsCertificateFile == nil ? "http" : "https"
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: http)
        let group = ServiceGroup(configuration: .init(services: [server], logger: logger))
        do {
            let result = try await Self.serve(group, ports, continuation, state, scheme, client, body)
            try? await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    private static func serve<Result>(
        _ group: ServiceGroup, _ ports: AsyncStream<Int>, _ continuation: AsyncStream<Int>.Continuation,
        _ state: SinkState, _ scheme: String, _ client: HTTPClient, _ body: (SocketSinkHarness) async throws -> Result
    ) async throws -> Result {
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                defer { continuation.finish() }
                try await group.run()
            }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else {
                try await tasks.waitForAll()
                throw SinkAnswer.Failure(description: "the sink stopped before it listened")
            }
            do {
                let result = try await body(
                    SocketSinkHarness(
                        port: port, state: state, baseURL: "\(scheme)://127.0.0.1:\(port)", client: client))
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

    /// Sends one request to the sink.
    func send(
        _ method: String,
        _ path: String,
        body: [UInt8]?,
        headers: [(String, String)]
    ) async throws -> SinkAnswer {
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
        return SinkAnswer(
            status: Int(response.status.code),
            headers: answerHeaders,
            body: Array(collected.readableBytesView)
        )
    }
}
