import BadgeSink
import Logging
import ServiceLifecycle

/// A sink on an ephemeral loopback port for one test: run ``group`` in a task, then wait for ``port()``.
struct TestSink: Sendable {
    let state: SinkState
    let group: ServiceGroup
    private let ports: AsyncStream<Int>

    /// A sink with `configuration` (port 0 on loopback unless told).
    init(
        seed: UInt64, logger: Logger, configuration: SinkConfiguration = SinkConfiguration(host: "127.0.0.1", port: 0)
    )
        throws
    {
        let state = SinkState(randomSeed: seed)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let server = try SinkServer(configuration: configuration, state: state, logger: logger) { port in
            continuation.yield(port)
        }
        self.state = state
        self.group = ServiceGroup(services: [server], logger: logger)
        self.ports = ports
    }

    /// The port, once the server listens.
    func port() async throws -> Int {
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        return port
    }
}
