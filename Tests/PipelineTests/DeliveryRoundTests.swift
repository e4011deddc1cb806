import BadgeCore
import BadgeStore
import Testing

@testable import BadgeWorker

/// The delivery round's state machine, driven directly.
@Suite("Delivery round")
struct DeliveryRoundTests {
    private static let schedule = RetrySchedule(initial: .seconds(1), maximum: .seconds(8))
    private static let now: Int64 = 1_000_000_000_000

    private static func claimed(_ id: Int64, token: String, attempts: Int = 0, createdAt: Int64 = now) -> ClaimedPush {
        let push = PlannedPush(
            recipient: "u-\(token)", eventID: "e\(id)", eventType: .follow, token: token, provider: .apns,
            kind: .badgeOnly, counts: .zero, badge: 0, badgeVersion: id)
        return ClaimedPush(outbox: OutboxPush(id: id, push: push, attempts: attempts, createdAt: createdAt), push: push)
    }

    private func round(
        _ pushes: [ClaimedPush], concurrency: Int = 8, maxAge: Duration = .seconds(3600)
    )
        -> DeliveryRound
    {
        DeliveryRound(pushes, concurrency: concurrency, schedule: Self.schedule, maxAge: maxAge)
    }

    @Test func oneDevicesPushesGoOneAfterAnotherAndDevicesGoSideBySide() {
        var round = round([Self.claimed(1, token: "a"), Self.claimed(2, token: "b"), Self.claimed(3, token: "a")])
        let first = round.next()
        let second = round.next()
        #expect(first?.id == 1)
        #expect(second?.id == 2)
        // Token a's next push waits for its first.
        #expect(round.next() == nil)
        round.finished(first!, .accepted(late: false), now: Self.now, unit: 0.5)
        #expect(round.next()?.id == 3)
        #expect(!round.isFinished)
    }

    @Test func theConcurrencyBoundHolds() {
        var round = round((1...5).map { Self.claimed(Int64($0), token: "t\($0)") }, concurrency: 2)
        #expect(round.next() != nil)
        let second = round.next()
        #expect(second != nil)
        #expect(round.next() == nil)
        round.finished(second!, .accepted(late: false), now: Self.now, unit: 0)
        #expect(round.next() != nil)
    }

    @Test func aRetryGetsItsOwnNextAttemptAndHoldsBackItsDevicesLaterPushesOnly() {
        var round = round([
            Self.claimed(1, token: "a", attempts: 2), Self.claimed(2, token: "a"), Self.claimed(3, token: "b"),
        ])
        let a1 = round.next()!
        let b = round.next()!
        round.finished(a1, .retry(reason: "503", retryAfter: nil), now: Self.now, unit: 0.5)
        round.finished(b, .accepted(late: false), now: Self.now, unit: 0.5)
        // a's second push is not attempted: it waits behind the first, in the outbox.
        #expect(round.next() == nil)
        #expect(round.isFinished)
        #expect(round.record.sent == [3])
        // Third failure: ceiling 1 s × 2² = 4 s, half of it with the draw 0.5.
        #expect(round.record.retries.map(\.id) == [1])
        #expect(round.record.retries.map(\.at) == [Self.now + 2_000_000])
        // The device's pushed version goes back to the waiting push's when the round is recorded.
        #expect(round.record.retries.map(\.badgeVersion) == [1])
        #expect(round.nextRetryAt == Self.now + 2_000_000)
        #expect(round.tally.heldBack == 1)
    }

    @Test func retryAfterIsHonouredAndConfigurationErrorsAreKept() {
        var round = round([Self.claimed(1, token: "a"), Self.claimed(2, token: "b")])
        let a = round.next()!
        let b = round.next()!
        round.finished(a, .retry(reason: "429", retryAfter: .seconds(30)), now: Self.now, unit: 0.9)
        round.finished(b, .configurationError(reason: "InvalidProviderToken"), now: Self.now, unit: 0)
        #expect(round.record.retries.map(\.id) == [1, 2])
        #expect(round.record.retries[0].at == Self.now + 30_000_000)
        #expect(round.record.failed.isEmpty && round.record.sent.isEmpty)
        #expect(round.tally.configurationErrors == 1)
    }

    @Test func aPushOlderThanTheMaximumAgeIsGivenUpAndItsDeviceGoesOn() {
        let old = Self.now - 7_200_000_000
        var round = round([Self.claimed(1, token: "a", createdAt: old), Self.claimed(2, token: "a")])
        let first = round.next()!
        round.finished(first, .retry(reason: "503", retryAfter: nil), now: Self.now, unit: 0.5)
        #expect(round.record.failed == [1])
        #expect(round.tally.givenUp == 1)
        #expect(round.next()?.id == 2)
    }

    @Test func aDeadTokenEndsItsDeviceAndARefusalOnlyItsPush() {
        var round = round([Self.claimed(1, token: "a"), Self.claimed(2, token: "a"), Self.claimed(3, token: "b")])
        let a = round.next()!
        let b = round.next()!
        round.finished(a, .deadToken(reason: "Unregistered"), now: Self.now, unit: 0)
        round.finished(b, .rejected(reason: "BadTopic"), now: Self.now, unit: 0)
        #expect(round.next() == nil)
        #expect(round.record.deadTokens == ["a"])
        #expect(round.record.failed == [3])
    }

    @Test func aStopStartsNothingMoreAndLatePushesAreKept() {
        var round = round([Self.claimed(1, token: "a"), Self.claimed(2, token: "b"), Self.claimed(3, token: "c")])
        let a = round.next()!
        let b = round.next()!
        round.finished(a, .accepted(late: true), now: Self.now, unit: 0)
        round.finished(b, .stopped, now: Self.now, unit: 0)
        #expect(round.next() == nil)
        #expect(round.isFinished)
        #expect(round.record.sent == [1])
        #expect(round.late.map(\.id) == [1])
    }

    @Test func backoffIsExponentialWithFullJitterAndCapped() {
        let schedule = Self.schedule
        #expect(schedule.delay(attempts: 1, retryAfter: nil, unit: 1) == .seconds(1))
        #expect(schedule.delay(attempts: 3, retryAfter: nil, unit: 1) == .seconds(4))
        #expect(schedule.delay(attempts: 30, retryAfter: nil, unit: 1) == .seconds(8))
        #expect(schedule.delay(attempts: 30, retryAfter: nil, unit: 0) == .zero)
        #expect(schedule.delay(attempts: 2, retryAfter: nil, unit: 0.25) == .milliseconds(500))
        #expect(schedule.delay(attempts: 9, retryAfter: .seconds(42), unit: 0.1) == .seconds(42))
    }
}
