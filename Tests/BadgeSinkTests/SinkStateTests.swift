import Foundation
import Testing

@testable import BadgeSink

@Suite("SinkState")
struct SinkStateTests {
    static let payload = Array("{\"aps\":{\"badge\":1}}".utf8)

    @Test("records pushes with lowercased, merged headers and increasing seq")
    func records() throws {
        let state = SinkState(randomSeed: 1)
        let first = state.record(
            provider: .apns,
            token: "t1",
            headers: [("APNs-Topic", "com.example"), ("X-Tag", "a"), ("x-tag", "b")],
            body: Self.payload
        )
        let second = state.record(provider: .fcm, token: "t2", headers: [], body: Array("oops".utf8))
        #expect(first.seq == 1 && first.status == 200 && first.reason == nil)
        #expect(second.seq == 2 && second.provider == .fcm)

        let deliveries = state.receivedPushes()
        try #require(deliveries.count == 2)
        #expect(deliveries[0].headers == ["apns-topic": "com.example", "x-tag": "a, b"])
        #expect(deliveries[0].body == Self.payload)
        #expect(deliveries[0].bodyIsJSON)
        #expect(deliveries[1].bodyText == "oops")
        #expect(!deliveries[1].bodyIsJSON)

        let json = try JSONSerialization.jsonObject(with: Data(state.receivedPushesJSON())) as? [String: Any]
        let list = try #require(json?["deliveries"] as? [[String: Any]])
        #expect(list[1]["payload"] as? String == "oops")

        // Headers already lowercase and each named once are kept as they are, a credential header left out.
        _ = state.record(
            provider: .apns, token: "t3", headers: [("apns-topic", "t"), ("x-a", "1")], body: Self.payload)
        _ = state.record(
            provider: .apns, token: "t4", headers: [("apns-topic", "t"), ("authorization", "bearer x"), ("x-a", "1")],
            body: Self.payload)
        let later = state.receivedPushes()
        #expect(later[2].headers == ["apns-topic": "t", "x-a": "1"])
        #expect(later[3].headers == ["apns-topic": "t", "x-a": "1"])
    }

    @Test("faults: first match in insertion order; rate misses fall through; times expire")
    func faultOrder() throws {
        let state = SinkState(randomSeed: 3)
        state.addFault(try Fault(token: "x", status: 503, rate: 0))
        state.addFault(try Fault(token: "x", status: 410, reason: "Unregistered", times: 1))
        state.addFault(try Fault(status: 429))
        let answers = (0..<3).map { _ in state.record(provider: .apns, token: "x", headers: [], body: Self.payload) }
        #expect(answers.map(\.status) == [410, 429, 429])
        #expect(answers.map(\.reason) == ["Unregistered", "TooManyRequests", "TooManyRequests"])
        #expect(state.faults().count == 2)
        #expect(state.clearFaults() == 2)
        #expect(state.record(provider: .apns, token: "x", headers: [], body: Self.payload).status == 200)
    }

    @Test("the same seed gives the same rate draws")
    func seededRate() throws {
        func run() throws -> [Int] {
            let state = SinkState(randomSeed: 99)
            state.addFault(try Fault(status: 500, rate: 0.5))
            return (0..<64).map { _ in
                state.record(provider: .apns, token: "t", headers: [], body: Self.payload).status
            }
        }
        let first = try run()
        #expect(first == (try run()))
        #expect(first.contains(200) && first.contains(500))
    }

    @Test("FCM answers translate the fault status")
    func fcmTranslation() throws {
        let state = SinkState(randomSeed: 1)
        state.addFault(try Fault(status: 410, reason: "Unregistered", times: 1))
        let answer = state.record(provider: .fcm, token: "f", headers: [], body: Self.payload)
        #expect(answer.status == 404)
        #expect(answer.reason == "UNREGISTERED")
        let body = try JSONSerialization.jsonObject(with: Data(answer.fcmBody(project: "p"))) as? [String: Any]
        #expect((body?["error"] as? [String: Any])?["status"] as? String == "NOT_FOUND")
        #expect(state.record(provider: .fcm, token: "f", headers: [], body: Self.payload).status == 200)
    }

    @Test("clear() forgets deliveries and resets stats; seq goes on")
    func clear() {
        let state = SinkState(randomSeed: 1)
        for _ in 0..<3 {
            _ = state.record(provider: .apns, token: "t", headers: [], body: Self.payload)
        }
        let perPush = Self.payload.count + 2 + ReceivedPushLog.recordOverhead
        #expect(state.stats() == SinkStats(received: 3, byStatus: [200: 3], keptBytes: 3 * perPush))
        #expect(state.clear() == 3)
        #expect(state.stats() == SinkStats(received: 0, byStatus: [:]))
        #expect(state.receivedPushes(token: "t").isEmpty)
        #expect(state.record(provider: .apns, token: "t", headers: [], body: Self.payload).seq == 4)
        #expect(state.receivedPushes(token: "t").map(\.seq) == [4])
    }

    @Test("fault validation")
    func faultValidation() {
        #expect(throws: SinkError.self) { try Fault(status: 399) }
        #expect(throws: SinkError.self) { try Fault(status: 600) }
        #expect(throws: SinkError.self) { try Fault(status: 410, times: 0) }
        #expect(throws: SinkError.self) { try Fault(status: 410, rate: 1.01) }
        #expect(throws: SinkError.self) { try Fault(status: 410, rate: .nan) }
        #expect(throws: SinkError.self) { try Fault(json: Array("{\"status\":true}".utf8)) }
        #expect((try? Fault(json: Array("{\"status\":410}".utf8)))?.reason == "Unregistered")
        #expect((try? Fault(json: Array("{\"status\":503,\"rate\":1,\"times\":3}".utf8)))?.times == 3)
    }

    @Test("holds a million small deliveries and filters them")
    func millionDeliveries() {
        let state = SinkState(randomSeed: 1)
        let headers: [(name: String, value: String)] = [("apns-topic", "com.example"), ("apns-push-type", "alert")]
        let tokens = (0..<1000).map { "token-\($0)" }
        for index in 0..<1_000_000 {
            _ = state.record(provider: .apns, token: tokens[index % 1000], headers: headers, body: Self.payload)
        }
        #expect(state.count == 1_000_000)
        #expect(state.stats().received == 1_000_000)
        // token-7 got seq 8, 1008, …; after 990,000 that leaves 990,008 … 999,008.
        let recent = state.receivedPushes(token: "token-7", after: 990_000)
        #expect(recent.map(\.seq) == (0..<10).map { 990_008 + $0 * 1000 })
        #expect(recent.allSatisfy { $0.token == "token-7" && $0.body == Self.payload })
        #expect(state.receivedPushes(after: 999_990).count == 10)
        #expect(state.receivedPushes(token: "token-999").count == 1000)
    }
}
