import BadgeCore
import BadgeStore
import BadgeSupport
import Testing

@testable import BadgeWorker

/// The delivery round's state machine, driven directly.
@Suite("Delivery round")
struct DeliveryRoundTests {
    private static let backoff = Backoff(initial: .seconds(1), maximum: .seconds(8))
    /// When the rounds' pushes were claimed, on the monotonic clock (the round never reads a wall clock).
    private static let claimedAt = ContinuousClock.now
    private static let now = claimedAt

    /// A claimed push whose claim read it `age` old by the database's clock (nil: unknown).
    private static func claimed(
        _ id: Int64, token: String, attempts: Int = 0, age: Duration? = .zero
    ) -> ClaimedPush {
        let push = PlannedPush(
            recipient: "u-\(token)", eventID: "e\(id)", eventType: .follow, token: token, provider: .apns,
            kind: .badgeOnly, counts: .zero, badge: 0, badgeVersion: id)
        // Stored times are the database's and play no part: far from any clock on purpose.
        return ClaimedPush(
            outbox: OutboxPush(
                id: id, push: push, attempts: attempts, createdAt: 42, nextAttemptAt: 4_000_000_000_000_000, age: age),
            push: push)
    }

    private func round(
        _ pushes: [ClaimedPush], concurrency: Int = 8, maxAge: Duration = .seconds(3600)
    )
        -> DeliveryRound
    {
        DeliveryRound(
            pushes, concurrency: concurrency, backoff: Self.backoff, maxAge: maxAge, claimedAt: Self.claimedAt)
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
        // Third failure: ceiling 1 s × 2² = 4 s, half of it with the draw 0.5: a delay (the store makes it due that
        // long after it writes the record, by the database's clock), not a time of this process's clock.
        #expect(round.record.retries.map(\.id) == [1])
        #expect(round.record.retries.map(\.delay) == [.seconds(2)])
        // Only what went out moves its device's pushed version: b's, to its push's version, for its user.
        #expect(round.record.pushed == [DeliveryRecord.Pushed(token: "b", user: "u-b", version: 3)])
        #expect(round.record.earliestRetry == .seconds(2))
        #expect(round.tally.heldBack == 1)
        #expect(round.tally.retryReason == "503")
    }

    @Test func retryAfterIsHonouredAndConfigurationErrorsAreKept() {
        var round = round([Self.claimed(1, token: "a"), Self.claimed(2, token: "b")])
        let a = round.next()!
        let b = round.next()!
        round.finished(a, .retry(reason: "429", retryAfter: .seconds(30)), now: Self.now, unit: 0.9)
        round.finished(b, .configurationError(reason: "InvalidProviderToken"), now: Self.now, unit: 0)
        #expect(round.record.retries.map(\.id) == [1, 2])
        #expect(round.record.retries[0].delay == .seconds(30))
        // A zero draw still waits a microsecond: a retry is never due before it was recorded.
        #expect(round.record.retries[1].delay == .microseconds(1))
        #expect(round.record.earliestRetry == .microseconds(1))
        #expect(round.record.failed.isEmpty && round.record.sent.isEmpty)
        #expect(round.tally.configurationErrors == 1)
    }

    @Test func aPushOlderThanTheMaximumAgeIsGivenUpAndItsDeviceGoesOn() {
        var round = round([Self.claimed(1, token: "a", age: .seconds(7200)), Self.claimed(2, token: "a")])
        let first = round.next()!
        round.finished(first, .retry(reason: "503", retryAfter: nil), now: Self.now, unit: 0.5)
        #expect(round.record.failed == [1])
        #expect(round.tally.givenUp == 1)
        #expect(round.next()?.id == 2)
    }

    /// The age is the one the claim read by the database's clock plus the time since the claim on the monotonic
    /// clock: a push just under the maximum age when claimed is given up if its attempt ends past it, and kept
    /// otherwise; a push whose planning time is unknown is never given up.
    @Test func theAgeCountsFromTheClaimsReadingOnTheMonotonicClock() {
        var round = round(
            [
                Self.claimed(1, token: "a", age: .seconds(3590)), Self.claimed(2, token: "b", age: .seconds(3590)),
                Self.claimed(3, token: "c", age: nil),
            ], maxAge: .seconds(3600))
        let a = round.next()!
        let b = round.next()!
        let c = round.next()!
        #expect(round.age(of: a, at: Self.claimedAt + .seconds(4)) == .seconds(3594))
        round.finished(a, .retry(reason: "503", retryAfter: nil), now: Self.claimedAt + .seconds(9), unit: 0.5)
        round.finished(b, .retry(reason: "503", retryAfter: nil), now: Self.claimedAt + .seconds(10), unit: 0.5)
        round.finished(c, .retry(reason: "503", retryAfter: nil), now: Self.claimedAt + .seconds(86_400), unit: 0.5)
        #expect(round.record.retries.map(\.id) == [1, 3])
        #expect(round.record.failed == [2])
        #expect(round.tally.givenUp == 1)
        #expect(round.age(of: c, at: Self.claimedAt) == nil)
    }

    @Test func aDeadTokenEndsItsDeviceAndARefusalOnlyItsPush() {
        var round = round([Self.claimed(1, token: "a"), Self.claimed(2, token: "a"), Self.claimed(3, token: "b")])
        let a = round.next()!
        let b = round.next()!
        round.finished(
            a, .deadToken(reason: "Unregistered", timestampMilliseconds: 1234, app: "amen"), now: Self.now, unit: 0)
        round.finished(b, .rejected(reason: "BadTopic"), now: Self.now, unit: 0)
        #expect(round.next() == nil)
        #expect(round.record.deadTokens == ["a"])
        #expect(
            round.record.feedback == [
                TokenFeedback(
                    token: "a", provider: .apns, app: "amen", reason: "Unregistered", providerTimestamp: 1_234_000)
            ], "what the provider said, to report back")
        #expect(round.record.failed == [3])
    }

    @Test func aPushToAnUnconfiguredProviderIsRecordedAsFailedAndItsDeviceGoesOn() {
        var round = round([Self.claimed(1, token: "a"), Self.claimed(2, token: "a")])
        let first = round.next()!
        #expect(round.next() == nil, "one device's pushes one after another")
        round.finished(first, .notConfigured(reason: "no FCM"), now: Self.now, unit: 0)
        let second = round.next()
        #expect(second?.id == 2, "the device is kept: its next push is attempted too")
        round.finished(second!, .notConfigured(reason: "no FCM"), now: Self.now, unit: 0)
        #expect(round.isFinished)
        #expect(round.record.failed == [1, 2])
        #expect(round.record.deadTokens.isEmpty && round.record.retries.isEmpty)
        #expect(round.tally.notConfigured == 2 && round.tally.rejected == 0)
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
}
