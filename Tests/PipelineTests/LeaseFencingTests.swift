import AsyncHTTPClient
import BadgeCore
import BadgeDelivery
import BadgeSink
@_spi(Testing) import BadgeStore
import BadgeWire
import Logging
import ServiceLifecycle
import Testing

@testable import BadgeWorker

/// A worker frozen between claiming a push and sending it must not send it once the partition moved on: the
/// push stays in the outbox and the new owner sends it. Real database and a real sink over HTTP.
@Suite("Lease fencing of sends")
struct LeaseFencingTests {
    private static let token = "f00d0000f00d0000f00d0000f00d0000"

    @Test(arguments: Backend.allCases)
    func aWorkerWhosePartitionMovedOnWhileItWasFrozenSendsNothingAndTheNewOwnerDoes(backend: Backend) async throws {
        try await withDeliveryFixture(backend) { store, sink, rounds in
            let old = try #require(
                try await store.leaseRound(worker: "w1", partitions: 1, ttlMilliseconds: 60_000, releasing: [])
                    .leases.first)
            _ = try await store.apply(
                Self.events, policy: .unseen, context: ApplyContext(partition: 0, lease: old))
            let planned = try await store.pendingPushes(limit: 10, partition: 0)
            // The registration's badge-only push, then the follow's alert.
            #expect(planned.map(\.push.kind.isAlert) == [false, true])
            // w1 claims its round; then, before it gets to send, it freezes: its term runs out (it was
            // confirmed two minutes ago by its clock) and w2 takes the partition over.
            let hooked = ClaimHookStore(base: store) {
                _ = try await store.leaseRound(worker: "w1", partitions: 1, ttlMilliseconds: 0, releasing: [0])
                _ = try await store.leaseRound(worker: "w2", partitions: 1, ttlMilliseconds: 60_000, releasing: [])
            }
            let frozen = LeaseTerm(lease: old, ttl: .seconds(60), confirmed: .now - .seconds(120))
            await #expect {
                try await rounds(hooked).drainOutbox(partition: 0, term: frozen)
            } throws: { error in
                (error as? StoreError)?.code == .leaseLost
            }
            #expect(hooked.claims == 1)
            #expect(sink.count == 0)
            // w1's round claimed both; the registration's badge-only push was superseded by the alert to the same
            // device (coalesced in the claim), and the alert stays, unsent, for the new owner.
            let left = try await store.pendingPushes(limit: 10, partition: 0)
            #expect(left.map(\.id) == [planned[1].id])
            #expect(left.map(\.push) == [planned[1].push])
            // It is marked as claimed under w1's epoch: w1 may have sent it.
            #expect(left.first?.claimedEpoch == old.epoch)

            // Had w2 taken over just after a database outage, it would leave that push to w1 to record for four
            // TTLs (w1 is then most likely alive), sending what nobody claimed.
            let new = try #require(
                try await store.leaseRound(worker: "w2", partitions: 1, ttlMilliseconds: 60_000, releasing: [])
                    .leases.first)
            #expect(new.epoch > old.epoch)
            let afterOutage = LeaseTerm(lease: new, ttl: .seconds(60), confirmed: .now, earlierClaimsWaitFrom: .now)
            #expect(afterOutage.isInDoubt(left[0]))
            #expect(afterOutage.skipClaimedBefore == new.epoch)
            #expect(!afterOutage.isInDoubt(OutboxPush(id: left[0].id, push: left[0].push)))
            // The wait counts from when w2 learnt it holds the lease, not from the start of a round that waited
            // through the outage.
            #expect(
                LeaseTerm(
                    lease: new, ttl: .seconds(60), confirmed: .now - .seconds(300), earlierClaimsWaitFrom: .now
                ).isInDoubt(left[0]))
            #expect(LeaseTerm.earlierClaimsWait(ttl: .seconds(60)) == .seconds(245))
            #expect(
                !LeaseTerm(
                    lease: new, ttl: .seconds(60), confirmed: .now - .seconds(246),
                    earlierClaimsWaitFrom: .now - .seconds(246)
                ).isInDoubt(left[0]))

            // A takeover from a frozen or dead owner sends it at once, before anything newer (w1 never sent it).
            try await rounds(store).drainOutbox(
                partition: 0, term: LeaseTerm(lease: new, ttl: .seconds(60), confirmed: .now))
            let delivered = sink.receivedPushes(token: Self.token)
            #expect(delivered.count == left.count)
            #expect(delivered.allSatisfy { $0.status == 200 })
            #expect(try await store.pendingPushes(limit: 10, partition: 0).isEmpty)
        }
    }

    @Test(arguments: Backend.allCases)
    func aTermThatRanOutWhileTheLeaseIsStillHeldIsRenewedAndThePushGoesOut(backend: Backend) async throws {
        try await withDeliveryFixture(backend) { store, sink, rounds in
            let lease = try #require(
                try await store.leaseRound(worker: "w1", partitions: 1, ttlMilliseconds: 60_000, releasing: [])
                    .leases.first)
            _ = try await store.apply(
                Self.events, policy: .unseen, context: ApplyContext(partition: 0, lease: lease))
            // A slow lease round, not a takeover: the term ran out by the worker's clock, the database still says
            // the lease is w1's.
            let term = LeaseTerm(lease: lease, ttl: .seconds(60), confirmed: .now - .seconds(120))
            try await rounds(store).drainOutbox(partition: 0, term: term)
            #expect(term.isValid)
            #expect(sink.receivedPushes(token: Self.token).count >= 1)
            #expect(try await store.pendingPushes(limit: 10, partition: 0).isEmpty)
        }
    }

    private static var events: [Event] { deliveryFixtureEvents(token: token) }
}
