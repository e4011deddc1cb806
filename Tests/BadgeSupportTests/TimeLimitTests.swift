import BadgeSupport
import Testing

@Suite("Time limit")
struct TimeLimitTests {
    private struct Refused: Error {}

    @Test func aBodyThatFinishesInTimeGivesItsValue() async throws {
        #expect(try await withTimeLimit(.seconds(60)) { 42 } == 42)
    }

    @Test func aBodyThatFailsInTimeThrowsItsError() async {
        await #expect(throws: Refused.self) {
            try await withTimeLimit(.seconds(60)) { () async throws -> Int in throw Refused() }
        }
    }

    @Test func aBodyThatRunsPastTheLimitIsCancelled() async {
        do {
            _ = try await withTimeLimit(.milliseconds(20)) {
                try await Task.sleep(for: .seconds(600))
                return 1
            }
            Issue.record("the body should have been cut off")
        } catch let error as TimeLimitError {
            #expect(error.code == .exceeded)
            #expect(error.limit == .milliseconds(20))
            #expect(error.description == "time_limit_exceeded: took longer than 0.02 seconds")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
