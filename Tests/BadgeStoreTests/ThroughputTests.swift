import BadgeCore
import Foundation
import Testing

@testable import BadgeStore

/// Prints `apply` throughput with batches of 100 (no assertion on it). Runs only with
/// `BADGEPIPE_STORE_BENCH=1`.
@Suite("Throughput")
struct ThroughputTests {
    @Test(
        .enabled(if: ProcessInfo.processInfo.environment["BADGEPIPE_STORE_BENCH"] == "1"),
        arguments: Backend.allCases)
    func applyBatchesOf100(backend: Backend) async throws {
        try await withStore(backend) { store in
            var generator = RandomEvents(seed: 4242)
            _ = try await store.apply(
                RandomEvents.users.map { register("d-\($0)", token: "tok-\($0)-device", for: $0) }, policy: .unseen)
            let batches = (0..<50).map { _ in (0..<100).map { _ in generator.next() } }
            let clock = ContinuousClock()
            let start = clock.now
            for batch in batches {
                let applied = try await store.apply(batch, policy: .unseen)
                try await store.markSent(applied.flatMap { $0.pushes.map(\.id) })
            }
            let elapsed = clock.now - start
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let count = batches.count * 100
            print("THROUGHPUT \(backend): \(count) events in \(seconds)s = \(Int(Double(count) / seconds)) events/s")
        }
    }
}
