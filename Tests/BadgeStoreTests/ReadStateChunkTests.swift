import BadgeCore
import Testing

@_spi(Testing) @testable import BadgeStore

/// A read-state event over more rows than one transaction may change (``ApplyContext/readStateChunk``): the batch
/// fails before writing anything, naming the event; the event alone is then applied chunk by chunk, the counts right
/// after every chunk, one badge-only push at the end.
@Suite("Read-state events in chunks")
struct ReadStateChunkTests {
    private func message(_ id: String, at seconds: Int64, in conversation: String = "c1") -> Event {
        Event(
            id: id, type: .message, recipient: "u-alice", occurredAt: at(seconds), actor: bob,
            conversationID: conversation, text: "hi")
    }

    /// Applies `event` in chunks of `chunk`; returns the counts after each chunk and the last chunk's pushes.
    private func applyInChunks(
        _ event: Event, chunk: Int, store: any SQLBackedStore
    ) async throws -> (counts: [Counts], pushes: [PlannedPush]) {
        let context = ApplyContext(readStateChunk: chunk, chunked: true)
        var counts: [Counts] = []
        for _ in 0..<100 {
            let applied = try await store.apply([event], policy: .unseen, context: context)
            counts.append(try await store.snapshot(user: "u-alice").counts)
            if applied.first?.unfinished != true { return (counts, pushes(applied)) }
            #expect(pushes(applied).isEmpty, "no push before the last chunk")
        }
        Issue.record("never finished")
        return (counts, [])
    }

    @Test(arguments: Backend.allCases)
    func readAllOverMoreRowsThanAChunk(backend: Backend) async throws {
        try await withStore(backend) { store in
            let follows = (1...10).map { follow("n\($0)", at: Int64($0)) }
            _ = try await store.apply([register("d1", token: tokenA)] + follows, policy: .unseen)
            let before = try await store.snapshot(user: "u-alice")
            #expect(before.counts.unreadNotifications == 10)

            // In a batch: refused before anything is written, naming the event.
            let readAll = Event(id: "ra", type: .notificationsReadAll, recipient: "u-alice", occurredAt: at(20))
            await #expect {
                _ = try await store.apply(
                    [follow("n11", at: 11), readAll], policy: .unseen, context: ApplyContext(readStateChunk: 4))
            } throws: { error in
                (error as? StoreError)?.code == .readStateTooLarge && (error as? StoreError)?.subject == "ra"
            }
            #expect(try await store.snapshot(user: "u-alice") == before)

            // Alone, in chunks of 4: 10 → 6 → 2 → 0, each commit with counts that match the rows.
            let (counts, pushes) = try await applyInChunks(readAll, chunk: 4, store: store)
            #expect(counts.map(\.unreadNotifications) == [6, 2, 0])
            #expect(counts.map(\.unseenNotifications) == [6, 2, 0])
            #expect(pushes.count == 1)
            #expect(pushes.first?.badge == 0)
            #expect(pushes.first?.kind.isAlert == false)
            let after = try await store.snapshot(user: "u-alice")
            #expect(pushes.first?.badgeVersion == after.badgeVersion)
            // Recorded once, at the end: applying it again is a duplicate.
            let again = try await store.apply([readAll], policy: .unseen, context: ApplyContext(readStateChunk: 4))
            #expect(again.first?.duplicate == true)
        }
    }

    @Test(arguments: Backend.allCases)
    func aLastChunkThatChangesNothingStillPushes(backend: Backend) async throws {
        try await withStore(backend) { store in
            let follows = (1...8).map { follow("n\($0)", at: Int64($0)) }
            _ = try await store.apply([register("d1", token: tokenA)] + follows, policy: .unseen)
            let opened = Event(id: "op", type: .notificationsOpened, recipient: "u-alice", occurredAt: at(20))
            let (counts, pushes) = try await applyInChunks(opened, chunk: 4, store: store)
            #expect(counts.map(\.unseenNotifications) == [4, 0, 0])
            #expect(counts.map(\.unreadNotifications) == [8, 8, 8])
            #expect(pushes.map(\.badge) == [0])
        }
    }

    @Test(arguments: Backend.allCases)
    func conversationReadInChunks(backend: Backend) async throws {
        try await withStore(backend) { store in
            let messages = (1...7).map { message("m\($0)", at: Int64($0)) } + [message("x1", at: 3, in: "c2")]
            _ = try await store.apply([register("d1", token: tokenA)] + messages, policy: .unseen)
            let read = Event(
                id: "cr", type: .conversationRead, recipient: "u-alice", occurredAt: at(20), conversationID: "c1")
            let (counts, pushes) = try await applyInChunks(read, chunk: 3, store: store)
            #expect(counts.map(\.unreadMessages) == [5, 2, 1])
            #expect(pushes.map(\.badge) == [1], "the other conversation's message stays unread")
        }
    }

    /// Under the bound nothing changes: the batch applies as one transaction.
    @Test(arguments: Backend.allCases)
    func underTheBoundOneTransaction(backend: Backend) async throws {
        try await withStore(backend) { store in
            let follows = (1...3).map { follow("n\($0)", at: Int64($0)) }
            _ = try await store.apply([register("d1", token: tokenA)] + follows, policy: .unseen)
            let readAll = Event(id: "ra", type: .notificationsReadAll, recipient: "u-alice", occurredAt: at(20))
            let applied = try await store.apply([readAll], policy: .unseen, context: ApplyContext(readStateChunk: 4))
            #expect(pushes(applied).map(\.badge) == [0])
            #expect(applied.first?.unfinished == false)
        }
    }
}
