import Synchronization
import Testing

@testable import BadgeStore

/// The worker's own record of how long it surely holds a partition: pushes go out only inside it.
@Suite("Lease term")
struct LeaseTermTests {
    private let lease = PartitionLease(partition: 3, epoch: 7, worker: "w1")

    @Test func aTermIsValidForTheTTLLessAMarginFromWhenTheDatabaseWasAsked() {
        let now = ContinuousClock.now
        #expect(LeaseTerm(lease: lease, ttl: .seconds(60), confirmed: now).isValid)
        // Confirmed 9.5 s ago with a 10 s TTL: within the TTL but not within the margin (a tenth of it).
        #expect(!LeaseTerm(lease: lease, ttl: .seconds(10), confirmed: now - .milliseconds(9500)).isValid)
        #expect(!LeaseTerm(lease: lease, ttl: .seconds(10), confirmed: now - .seconds(30)).isValid)
        #expect(LeaseTerm(lease: lease, ttl: .seconds(10), confirmed: now).ttlMilliseconds == 10_000)
    }

    @Test func renewalsNeverShortenTheTerm() {
        let now = ContinuousClock.now
        let term = LeaseTerm(lease: lease, ttl: .seconds(10), confirmed: now)
        // A slow round that started before the current term's confirmation does not move it back.
        term.renewed(confirmed: now - .seconds(30))
        #expect(term.isValid)
        let expired = LeaseTerm(lease: lease, ttl: .seconds(10), confirmed: now - .seconds(30))
        expired.renewed(confirmed: now)
        #expect(expired.isValid)
    }

    @Test func aValidTermSendsWithoutAskingTheDatabase() async throws {
        let term = LeaseTerm(lease: lease, ttl: .seconds(60), confirmed: .now)
        let calls = Mutex(0)
        try await term.ensureValid { _ in
            calls.withLock { $0 += 1 }
            return true
        }
        #expect(calls.withLock { $0 } == 0)
    }

    @Test func anExpiredTermRenewsTheLeaseOnceAndIsValidAgain() async throws {
        let term = LeaseTerm(lease: lease, ttl: .seconds(60), confirmed: .now - .seconds(120))
        let asked = Mutex<[PartitionLease]>([])
        try await term.ensureValid { lease in
            asked.withLock { $0.append(lease) }
            return true
        }
        #expect(asked.withLock { $0 } == [lease])
        #expect(term.isValid)
        try await term.ensureValid { _ in
            Issue.record("a renewed term must not ask again")
            return true
        }
    }

    @Test func anExpiredTermWhoseLeaseIsGoneFailsWithLeaseLost() async throws {
        let term = LeaseTerm(lease: lease, ttl: .seconds(60), confirmed: .now - .seconds(120))
        await #expect {
            try await term.ensureValid { _ in false }
        } throws: { error in
            (error as? StoreError)?.code == .leaseLost && (error as? StoreError)?.transient == false
        }
        #expect(!term.isValid)
    }

    @Test func aRenewalSlowerThanTheTTLDoesNotCountAsHeld() async throws {
        let term = LeaseTerm(lease: lease, ttl: .milliseconds(50), confirmed: .now - .seconds(1))
        await #expect {
            try await term.ensureValid { _ in
                try await Task.sleep(for: .milliseconds(100))
                return true
            }
        } throws: { error in
            (error as? StoreError)?.code == .leaseLost
        }
    }
}
