import BadgeCore
import BadgeWire
import TestServices
import Testing

@_spi(Testing) @testable import BadgeStore

/// Dead tokens reported back: the record that deactivates a token writes its feedback in the same transaction;
/// publishers take entries (each for a hold), delete what they published; and a registration older than the
/// provider's time of death does not make the token active again.
@Suite("Token feedback")
struct TokenFeedbackTests {
    private static let dead = TokenFeedback(
        token: tokenA, provider: .apns, reason: "Unregistered", providerTimestamp: at(100).microsecondsSinceEpoch)

    @Test(arguments: Backend.allCases)
    func theDeactivationWritesItsFeedbackAndAPublisherTakesItOnceUntilItsHoldRunsOut(
        backend: Backend
    )
        async throws
    {
        try await withStore(backend) { store in
            _ = try await store.apply(
                [register("d1", token: tokenA), register("d2", token: tokenB, for: "u-carol")], policy: .unseen)
            let fcm = TokenFeedback(token: tokenB, provider: .fcm, reason: "UNREGISTERED", providerTimestamp: nil)
            #expect(try await store.feedbackAhead() == nil, "nothing waits")
            try await store.recordDeliveries(
                DeliveryRecord(deadTokens: [tokenA, tokenB], feedback: [Self.dead, fcm]))
            #expect(try await store.feedbackAhead() == .zero, "free to take now")
            #expect(try await store.snapshot(user: "u-alice").devices.isEmpty, "deactivated")
            #expect(try await store.snapshot(user: "u-carol").devices.isEmpty, "deactivated")

            // A hold far longer than the statements between here and the check of `freeIn` take on a busy machine;
            // short enough to wait for below.
            let hold = Duration.seconds(3)
            let taken = try await store.takeFeedback(limit: 10, hold: hold)
            #expect(taken.map(\.feedback) == [Self.dead, fcm], "in the order recorded")
            #expect(taken.count == 2 && taken[0].id < taken[1].id && taken[0].recordedAt > 0)
            #expect(try await store.takeFeedback(limit: 10, hold: .seconds(60)).isEmpty, "held by the first taker")
            let freeIn = try #require(try await store.feedbackAhead())
            #expect(freeIn > .zero && freeIn <= hold, "free when the hold ends: \(freeIn)")
            try await store.deleteFeedback([taken[0].id])
            // The hold runs out: what was not deleted (published) is taken again, by whoever comes.
            try await eventually("the hold ran out", timeout: .seconds(30), every: .milliseconds(20)) {
                try await store.feedbackAhead() == .zero
            }
            let again = try await store.takeFeedback(limit: 10, hold: .seconds(60))
            #expect(again.map(\.id) == [taken[1].id])
            #expect(again.map(\.feedback) == [fcm])
            try await store.deleteFeedback([taken[1].id])
            #expect(try await store.takeFeedback(limit: 10, hold: .zero).isEmpty, "nothing is left")
            #expect(try await store.feedbackAhead() == nil)
        }
    }

    @Test(arguments: Backend.allCases)
    func aRegistrationOlderThanTheProvidersTimeOfDeathDoesNotReactivateTheToken(backend: Backend) async throws {
        try await withStore(backend) { store in
            _ = try await store.apply([register("d1", token: tokenA, at: 10)], policy: .unseen)
            try await store.recordDeliveries(DeliveryRecord(deadTokens: [tokenA], feedback: [Self.dead]))
            // Registered at 50, before the token died at 100 (a stale registration replayed by the app's backend).
            let stale = try await store.apply(
                [register("d2", token: tokenA, at: 50)], policy: .unseen)
            #expect(stale.flatMap(\.pushes).isEmpty, "no push to a dead token")
            #expect(try await store.snapshot(user: "u-alice").devices.isEmpty, "still inactive")
            // Also for another user.
            _ = try await store.apply(
                [register("d3", token: tokenA, for: "u-carol", at: 99)], policy: .unseen)
            #expect(try await store.snapshot(user: "u-carol").devices.isEmpty)
            // Registered when it died or later: the app got the token again, it is active.
            let fresh = try await store.apply(
                [register("d4", token: tokenA, at: 100)], policy: .unseen)
            #expect(fresh.flatMap(\.pushes).count == 1, "its badge push")
            #expect(try await store.snapshot(user: "u-alice").devices.map(\.token) == [tokenA])
        }
    }

    @Test(arguments: Backend.allCases)
    func aDeathWithoutTheProvidersTimeLeavesRegistrationsAsTheyWere(backend: Backend) async throws {
        try await withStore(backend) { store in
            _ = try await store.apply([register("d1", token: tokenB, at: 10)], policy: .unseen)
            let fcm = TokenFeedback(token: tokenB, provider: .fcm, reason: "UNREGISTERED", providerTimestamp: nil)
            try await store.recordDeliveries(DeliveryRecord(deadTokens: [tokenB], feedback: [fcm]))
            _ = try await store.apply([register("d2", token: tokenB, at: 5)], policy: .unseen)
            #expect(try await store.snapshot(user: "u-alice").devices.map(\.token) == [tokenB])
        }
    }
}
