import Testing

@testable import BadgeWorker

/// The idle tick of a partition's delivery buffer: a nudge wakes a waiting taker with an empty batch, so the
/// partition drains its outbox even when no events come.
@Suite("Delivery buffer")
struct DeliveryBufferTests {
    @Test func aNudgeWakesAWaitingTakerWithAnEmptyBatch() async throws {
        let buffer = DeliveryBuffer()
        async let taken = buffer.take(limit: 10)
        // Whether the taker is already waiting or not, the nudge is not lost.
        buffer.nudge()
        #expect(try await taken?.isEmpty == true)
    }

    @Test func aNudgeBeforeTakeIsKeptForOneTakeOnly() async throws {
        let buffer = DeliveryBuffer()
        buffer.nudge()
        buffer.nudge()
        #expect(try await buffer.take(limit: 10)?.isEmpty == true)
        buffer.finish(nil)
        #expect(try await buffer.take(limit: 10) == nil)
    }

    @Test func theEndWinsOverANudge() async throws {
        let buffer = DeliveryBuffer()
        buffer.nudge()
        buffer.finish(nil)
        #expect(try await buffer.take(limit: 10) == nil)
    }
}
