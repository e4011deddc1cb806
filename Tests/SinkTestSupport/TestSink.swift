import AsyncHTTPClient
import BadgeSink
import Logging
import NIOSSL
import ServiceLifecycle

/// A sink served on 127.0.0.1 with an ephemeral port, in the test's process: the one way the tests run a
/// `SinkServer` on a socket.
///
/// ``withSink(seed:configuration:logLevel:http1Only:_:)`` runs one for the duration of a closure. A test that runs
/// the sink beside other services (a worker, several sinks) makes one with ``init(seed:configuration:logger:)``,
/// runs it as a `Service` (alone or in its own `ServiceGroup`), and waits for ``port()``.
public struct TestSink: Service {
    /// What the sink recorded.
    public let state: SinkState
    /// The sink's configuration: the one given, on 127.0.0.1 and port 0.
    public let configuration: SinkConfiguration
    private let group: ServiceGroup
    private let ports: AsyncStream<Int>
    private let portContinuation: AsyncStream<Int>.Continuation

    /// A sink with `configuration` (its host and port replaced by 127.0.0.1 and 0) and a fault table seeded with
    /// `seed`; not yet running.
    public init(seed: UInt64, configuration: SinkConfiguration = SinkConfiguration(), logger: Logger) throws {
        var configuration = configuration
        configuration.host = "127.0.0.1"
        configuration.port = 0
        let state = SinkState(configuration: configuration, randomSeed: seed)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let server = try SinkServer(configuration: configuration, state: state, logger: logger) { port in
            continuation.yield(port)
        }
        self.state = state
        self.configuration = configuration
        self.group = ServiceGroup(services: [server], logger: logger)
        self.ports = ports
        self.portContinuation = continuation
    }

    /// Serves until ``shutDown()`` or a graceful shutdown of the group that runs it.
    public func run() async throws {
        defer { self.portContinuation.finish() }
        try await self.group.run()
    }

    /// Stops the sink gracefully.
    public func shutDown() async {
        await self.group.triggerGracefulShutdown()
    }

    /// The port, once the server listens; throws when the sink stopped before it listened.
    public func port() async throws -> Int {
        var iterator = self.ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw TestSinkError("the sink stopped before it listened") }
        return port
    }

    /// `http://127.0.0.1:PORT`, or `https://…` when the sink has a TLS certificate.
    public func baseURL(port: Int) -> String {
        (self.configuration.tlsCertificateFile == nil ? "http" : "https") + "://127.0.0.1:\(port)"
    }

    /// Runs `body` against a new sink, then shuts the sink down gracefully, whether `body` returned or threw.
    ///
    /// The sink has `configuration` (on 127.0.0.1 and an ephemeral port), a fault table seeded with `seed` and logs
    /// at `logLevel`. ``RunningSink/client`` trusts the sink's certificate and speaks HTTP/2 over TLS, or HTTP/1.1
    /// when `http1Only` or without TLS.
    public static func withSink<Result>(
        seed: UInt64 = 20_240_601,
        configuration: SinkConfiguration = SinkConfiguration(),
        logLevel: Logger.Level = .warning,
        http1Only: Bool = false,
        _ body: (RunningSink) async throws -> Result
    ) async throws -> Result {
        var logger = Logger(label: "test-sink")
        logger.logLevel = logLevel
        let sink = try TestSink(seed: seed, configuration: configuration, logger: logger)
        var http = HTTPClient.Configuration()
        if let certificate = configuration.tlsCertificateFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(certificate)]
            http = HTTPClient.Configuration(tlsConfiguration: tls)
        }
        if http1Only { http.httpVersion = .http1Only }
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: http)
        let result: Swift.Result<Result, any Error>
        do {
            result = .success(try await sink.serve(client: client, body))
        } catch {
            result = .failure(error)
        }
        try? await client.shutdown()
        return try result.get()
    }

    private func serve<Result>(
        client: HTTPClient, _ body: (RunningSink) async throws -> Result
    ) async throws -> Result {
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await self.run() }
            let port: Int
            do {
                port = try await self.port()
            } catch {
                try await tasks.waitForAll()
                throw error
            }
            let running = RunningSink(
                port: port, state: self.state, baseURL: self.baseURL(port: port), client: client)
            let result: Swift.Result<Result, any Error>
            do {
                result = .success(try await body(running))
            } catch {
                result = .failure(error)
            }
            await self.shutDown()
            switch result {
            case .success: try await tasks.waitForAll()
            case .failure: try? await tasks.waitForAll()
            }
            return try result.get()
        }
    }
}

/// A sink that ``TestSink/withSink(seed:configuration:logLevel:http1Only:_:)`` runs for a test.
public struct RunningSink: Sendable {
    /// The port it listens on, on 127.0.0.1.
    public let port: Int
    /// What it recorded.
    public let state: SinkState
    /// `http://127.0.0.1:PORT`, or `https://…` with TLS.
    public let baseURL: String
    /// An HTTP client for it (trusting its certificate), shut down after the test.
    public let client: HTTPClient
}

/// A sink that did not start.
public struct TestSinkError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) { self.description = description }
}
