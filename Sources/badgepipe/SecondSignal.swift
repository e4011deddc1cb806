import BadgeSupport
import ServiceLifecycle
import UnixSignals

/// Listens for SIGTERM and SIGINT beside the `ServiceGroup`, which starts the graceful shutdown on the first one: the
/// second one throws ``Interrupted``, and a service that throws during the graceful shutdown cancels the whole group
/// at once (the batch and delivery round in progress are abandoned: what was not acked comes back from the broker,
/// and a push sent but not recorded is sent again with the same apns-id).
struct SecondSignal: Service {
    /// The worker was told twice to stop.
    struct Interrupted: Error, Sendable, CustomStringConvertible {
        /// A typed, machine-readable error code.
        typealias Code = ErrorCode<SecondSignal.Interrupted>

        var code = Code.secondSignal
        var message = "a second SIGTERM or SIGINT: stopping at once"

        /// The message alone: the worker logs it as the reason it stopped.
        var description: String { message }
    }

    /// Put it first in the group: services shut down in reverse order, so it listens until everything else stopped.
    func run() async throws {
        try await cancelWhenGracefulShutdown {
            var caught = 0
            for await _ in await UnixSignalsSequence(trapping: .sigterm, .sigint) {
                caught += 1
                if caught == 2 { throw Interrupted() }
            }
        }
    }
}

extension ErrorCode<SecondSignal.Interrupted> {
    /// A second SIGTERM or SIGINT came during the graceful shutdown.
    static var secondSignal: Self { Self("second_signal") }
}
