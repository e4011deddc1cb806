import Testing

@testable import BadgeDelivery

/// ``HTTP1PoolStateMachine`` driven directly: events in, actions out.
@Suite("HTTP/1.1 push pool")
struct HTTP1PoolStateMachineTests {
    @Test func aRequestOpensAConnectionAndRunsOnItOnceOpenThenReusesItIdle() {
        var pool = HTTP1PoolStateMachine(maxConnections: 2, maxWaiting: 10)
        #expect(pool.request(1) == .connect(0))
        #expect(pool.connected(0) == .run(1, on: 0))
        #expect(pool.finished(0, reusable: true) == .none)
        #expect(pool.request(2) == .run(2, on: 0), "the idle connection, no new one")
        #expect(pool.connectionCount == 1)
    }

    @Test func connectionsNeverExceedTheBoundAndWaitersAreServedInOrder() {
        var pool = HTTP1PoolStateMachine(maxConnections: 2, maxWaiting: 10)
        #expect(pool.request(1) == .connect(0))
        #expect(pool.request(2) == .connect(1))
        #expect(pool.request(3) == .none, "two connections opening already")
        #expect(pool.request(4) == .none)
        #expect(pool.connectionCount == 2)
        #expect(pool.connected(1) == .run(1, on: 1))
        #expect(pool.connected(0) == .run(2, on: 0))
        #expect(pool.finished(0, reusable: true) == .run(3, on: 0))
        #expect(pool.finished(1, reusable: true) == .run(4, on: 1))
        #expect(pool.waitingCount == 0)
    }

    @Test func neverMoreConnectionsOpeningThanRequestsWaiting() {
        var pool = HTTP1PoolStateMachine(maxConnections: 8, maxWaiting: 10)
        #expect(pool.request(1) == .connect(0))
        #expect(pool.connected(0) == .run(1, on: 0))
        #expect(pool.request(2) == .connect(1))
        #expect(pool.finished(0, reusable: true) == .run(2, on: 0), "the first connection free first")
        #expect(pool.connected(1) == .none, "nothing waits: the new connection stays idle")
        #expect(pool.request(3) == .run(3, on: 1), "the idle one used last")
    }

    @Test func theWaitingBoundRefusesOneMore() {
        var pool = HTTP1PoolStateMachine(maxConnections: 1, maxWaiting: 2)
        #expect(pool.request(1) == .connect(0))
        #expect(pool.request(2) == .none)
        guard case .fail(let ids, let error) = pool.request(3) else {
            Issue.record("expected a refusal")
            return
        }
        #expect(ids == [3])
        #expect(error.code == .tooManyWaiting)
    }

    @Test func aFailedConnectFailsEveryWaiterWhenNoOtherConnectionCanServeThem() {
        var pool = HTTP1PoolStateMachine(maxConnections: 2, maxWaiting: 10)
        #expect(pool.request(1) == .connect(0))
        #expect(pool.request(2) == .connect(1))
        #expect(pool.request(3) == .none)
        #expect(pool.connectFailed(0, reason: "refused") == .none, "connection 1 is still opening")
        guard case .fail(let ids, let error) = pool.connectFailed(1, reason: "refused") else {
            Issue.record("expected the waiters to fail")
            return
        }
        #expect(ids == [1, 2, 3])
        #expect(error == HTTP1PushError(code: .connectFailed, message: "refused"))
        #expect(pool.connectionCount == 0)
        #expect(pool.request(4) == .connect(2), "a later request tries again")
    }

    @Test func aFailedConnectLeavesWaitersToABusyConnection() {
        var pool = HTTP1PoolStateMachine(maxConnections: 2, maxWaiting: 10)
        #expect(pool.request(1) == .connect(0))
        #expect(pool.connected(0) == .run(1, on: 0))
        #expect(pool.request(2) == .connect(1))
        #expect(pool.connectFailed(1, reason: "refused") == .none)
        #expect(pool.finished(0, reusable: true) == .run(2, on: 0))
    }

    @Test func aConnectionNotReusableIsReplacedForWaiters() {
        var pool = HTTP1PoolStateMachine(maxConnections: 1, maxWaiting: 10)
        #expect(pool.request(1) == .connect(0))
        #expect(pool.request(2) == .none)
        #expect(pool.connected(0) == .run(1, on: 0))
        #expect(pool.finished(0, reusable: false) == .connect(1))
        #expect(pool.closed(0) == .none, "already gone")
        #expect(pool.connected(1) == .run(2, on: 1))
    }

    @Test func anIdleConnectionClosedByTheServerIsForgotten() {
        var pool = HTTP1PoolStateMachine(maxConnections: 1, maxWaiting: 10)
        #expect(pool.request(1) == .connect(0))
        #expect(pool.connected(0) == .run(1, on: 0))
        #expect(pool.finished(0, reusable: true) == .none)
        #expect(pool.closed(0) == .none)
        #expect(pool.connectionCount == 0)
        #expect(pool.request(2) == .connect(1))
    }

    @Test func aCancelledWaiterLeavesTheLineAndARunningRequestIsLeftToFinish() {
        var pool = HTTP1PoolStateMachine(maxConnections: 1, maxWaiting: 10)
        #expect(pool.request(1) == .connect(0))
        #expect(pool.request(2) == .none)
        #expect(pool.request(3) == .none)
        guard case .fail([2], let error) = pool.cancel(2) else {
            Issue.record("expected the waiter to fail")
            return
        }
        #expect(error.code == .cancelled)
        #expect(pool.connected(0) == .run(1, on: 0))
        #expect(pool.cancel(1) == .none, "running")
        #expect(pool.finished(0, reusable: true) == .run(3, on: 0))
    }

    @Test func shuttingDownFailsTheWaitersClosesTheConnectionsAndRefusesWhatComesLater() {
        var pool = HTTP1PoolStateMachine(maxConnections: 3, maxWaiting: 10)
        #expect(pool.request(1) == .connect(0))
        #expect(pool.connected(0) == .run(1, on: 0))
        #expect(pool.request(2) == .connect(1))
        #expect(pool.connected(1) == .run(2, on: 1))
        #expect(pool.finished(1, reusable: true) == .none)
        #expect(pool.request(3) == .run(3, on: 1))
        #expect(pool.request(4) == .connect(2))
        #expect(pool.shutDown() == .shutDown(failing: [4], closing: [0, 1]))
        #expect(pool.connected(2) == .close([2]), "opened too late")
        guard case .fail([5], let error) = pool.request(5) else {
            Issue.record("expected a refusal")
            return
        }
        #expect(error.code == .shutDown)
        #expect(pool.finished(0, reusable: true) == .none, "closed by the shutdown already")
    }
}
