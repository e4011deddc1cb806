import BadgeSink
import Logging
import ServiceLifecycle

/// Runs a sink in this process on a free port of 127.0.0.1 for the duration of `body`, which gets its port and its
/// state (what it recorded); stops it afterwards.
func withInProcessSink<T: Sendable>(
    seed: UInt64, _ body: (_ port: Int, _ state: SinkState) async throws -> T
) async throws -> T {
    var logger = Logger(label: "test-sink")
    logger.logLevel = .error
    let state = SinkState(randomSeed: seed)
    let (ports, portContinuation) = AsyncStream<Int>.makeStream()
    let sink = try SinkServer(
        configuration: SinkConfiguration(host: "127.0.0.1", port: 0), state: state, logger: logger
    ) { port in portContinuation.yield(port) }
    let group = ServiceGroup(services: [sink], logger: logger)
    return try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await group.run() }
        var portIterator = ports.makeAsyncIterator()
        guard let port = await portIterator.next() else { throw FleetError("sink did not start") }
        let result: Result<T, any Error>
        do {
            result = .success(try await body(port, state))
        } catch {
            result = .failure(error)
        }
        await group.triggerGracefulShutdown()
        try await tasks.waitForAll()
        return try result.get()
    }
}
