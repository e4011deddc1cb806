import Foundation
import SinkTestSupport
import TestServices
import Testing

@testable import BadgeSink

@Suite("Waits over HTTP")
struct WaitTests {
    @Test("?wait on /devices/{token} with badge= answers as soon as the badge shows, woken by the push")
    func waitForBadge() async throws {
        try await TestSink.withSink { sink in
            _ = try await sink.alert("phone", badge: 1, version: 1, title: "one")
            let started = ContinuousClock.now
            async let answer = sink.send("GET", "/devices/phone?wait=20&badge=3")
            try await eventually("the request waits") { sink.state.waiting == 1 }
            _ = try await sink.alert("phone", badge: 2, version: 2, title: "two")
            _ = try await sink.alert("other", badge: 3, version: 1, title: "not this one")
            _ = try await sink.alert("phone", badge: 3, version: 3, title: "three")
            let waited = try await answer
            let elapsed = ContinuousClock.now - started
            #expect(waited.status == 200)
            #expect(waited.headers["sink-wait"] == "met")
            // Answered with the third push: neither the phone's badge 2 nor the other device's badge 3 met it.
            #expect(waited.json["badge"] as? Int == 3)
            #expect(waited.json["badge_version"] as? Int == 3)
            #expect(elapsed < .seconds(5))
            #expect(sink.state.waiting == 0)
        }
    }

    @Test("a wait that times out answers 412 with what there is, and Sink-Wait: timeout")
    func timeout() async throws {
        try await RouterSink.withSink { sink in
            _ = try await sink.alert("phone", badge: 1, version: 1, title: "one")
            let started = ContinuousClock.now
            let answer = try await sink.send("GET", "/devices/phone?wait=0.4&badge=3")
            #expect(ContinuousClock.now - started >= .milliseconds(400))
            #expect(answer.status == 412)
            #expect(answer.headers["sink-wait"] == "timeout")
            #expect(answer.json["badge"] as? Int == 1)

            let unknown = try await sink.send("GET", "/devices/nobody?wait=0.1")
            #expect(unknown.status == 404)
            #expect(unknown.headers["sink-wait"] == "timeout")

            let deliveries = try await sink.send("GET", "/deliveries?token=phone&min=2&wait=0.2")
            #expect(deliveries.status == 412)
            #expect(deliveries.headers["sink-wait"] == "timeout")
            #expect((deliveries.json["deliveries"] as? [Any])?.count == 1)

            let met = try await sink.send("GET", "/deliveries?token=phone&wait=5")
            #expect(met.status == 200)
            #expect(met.headers["sink-wait"] == "met")
            #expect(sink.state.waiting == 0)
        }
    }

    @Test("?wait on /deliveries with min= and filters wakes when enough matching pushes came")
    func waitForDeliveries() async throws {
        try await TestSink.withSink { sink in
            async let answer = sink.send("GET", "/deliveries?kind=alert&type=comment&min=2&wait=20")
            try await eventually("the request waits") { sink.state.waiting == 1 }
            _ = try await sink.badgeOnly("a", badge: 1, version: 1)
            _ = try await sink.alert("a", badge: 2, version: 2, title: "c1")
            _ = try await sink.alert("b", badge: 1, version: 1, title: "f", type: "follow")
            _ = try await sink.alert("b", badge: 2, version: 2, title: "c2")
            let waited = try await answer
            #expect(waited.status == 200)
            #expect(waited.headers["sink-wait"] == "met")
            let list = try #require(waited.json["deliveries"] as? [[String: Any]])
            #expect(list.map { $0["seq"] as? Int } == [2, 4])
        }
    }

    @Test("waiters are bounded: beyond maxWaiters a wait is answered 503 too_many_waiters")
    func bounded() async throws {
        var configuration = SinkConfiguration()
        configuration.maxWaiters = 2
        try await TestSink.withSink(configuration: configuration) { sink in
            async let first = sink.send("GET", "/devices/x?wait=10")
            async let second = sink.send("GET", "/devices/x?wait=10")
            try await eventually("both requests wait") { sink.state.waiting == 2 }
            let third = try await sink.send("GET", "/devices/x?wait=10")
            #expect(third.status == 503)
            #expect((third.json["error"] as? [String: Any])?["code"] as? String == "too_many_waiters")
            _ = try await sink.alert("x", badge: 1, version: 1, title: "wake")
            #expect(try await first.status == 200)
            #expect(try await second.status == 200)
            #expect(sink.state.waiting == 0)
        }
    }

    @Test("bad wait values are answered 400", arguments: ["wait=-1", "wait=301", "wait=soon", "badge=x&wait=1"])
    func invalid(query: String) async throws {
        try await RouterSink.withSink { sink in
            let answer = try await sink.send("GET", "/devices/x?\(query)")
            #expect(answer.status == 400)
            #expect((answer.json["error"] as? [String: Any])?["code"] as? String == "invalid_query")
        }
    }
}
