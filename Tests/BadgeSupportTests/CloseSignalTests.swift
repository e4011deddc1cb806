import BadgeSupport
import Testing

@Suite("Close signal")
struct CloseSignalTests {
    @Test func everyWaiterHearsTheFirstReason() async {
        let signal = CloseSignal<String?>()
        #expect(!signal.isResolved)
        async let first = signal.wait()
        async let second = signal.waitUnlessCancelled()
        signal.resolve("lost")
        signal.resolve("ignored")
        #expect(await first == "lost")
        #expect(await second == .some("lost"))
        #expect(signal.isResolved)
        // A wait after resolving returns at once, with the same reason; nil is a reason like any other.
        #expect(await signal.wait() == "lost")
        let closedByApplication = CloseSignal<String?>()
        closedByApplication.resolve(nil)
        #expect(await closedByApplication.wait() == nil)
    }

    @Test func aCancelledWaitUnlessCancelledReturnsNil() async {
        let signal = CloseSignal<Void>()
        let waiter = Task { await signal.waitUnlessCancelled() }
        waiter.cancel()
        #expect(await waiter.value == nil)
        // Already cancelled before it starts waiting.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await signal.waitUnlessCancelled()
        }
        #expect(await early.value == nil)
        #expect(!signal.isResolved)
    }

    @Test func aCancelledWaitStillWaitsForTheReason() async {
        let signal = CloseSignal<Int>()
        let waiter = Task { await signal.wait() }
        waiter.cancel()
        signal.resolve(7)
        #expect(await waiter.value == 7)
    }
}
